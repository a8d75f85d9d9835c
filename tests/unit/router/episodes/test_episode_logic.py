"""Pure logic of episodes: options against a config, the infra-error test, the reward
of a verifier command, and a retried request answered once."""

from __future__ import annotations

import asyncio
import json

import pytest

from records.shared_state.answered_once import answered_once
from router.config import parse_config
from router.episodes.episode import infra_failure
from router.episodes.options import EpisodeOptions, EpisodeOptionsError
from router.episodes.verifiers import VerifierError, as_reward, reward_of_output

CONFIG = parse_config(
    json.dumps(
        {
            "mcpServers": {"a": {"command": "true"}, "b": {"command": "true"}},
            "shell": {"enabled": True},
            "browser": {"enabled": False},
            "episodes": {
                "routes": ["sim", "replay", "real"],
                "max_ttl_s": 100,
                "verifiers": {"v": {"command": "true"}},
            },
            "fork": {"workspaces": {"project": "/srv/project"}},
        }
    )
)


def test_options_are_checked_against_the_config():
    options = EpisodeOptions.parse(
        {"servers": ["a"], "channels": ["mcp", "shell"], "route": "sim", "ttl_s": 5, "verifier": "v"}, CONFIG
    )
    assert options.mode == "sim"
    assert options.scope(CONFIG) == frozenset({("mcp", "a"), ("shell", "shell")})
    assert EpisodeOptions.parse({}, CONFIG).scope(CONFIG) is None  # nothing narrowed
    assert EpisodeOptions.parse({"fork": "project"}, CONFIG).fork == "project"
    assert (
        EpisodeOptions.parse(
            {"route": {"mode": "replay", "rules": [{"match": {"tool": "x"}, "route": "sim"}]}}, CONFIG
        ).mode
        == "replay"
    )
    for bad, says in [
        ({"servers": ["c"]}, "'c' is not a configured MCP server"),
        ({"channels": ["browser"]}, "'browser' is not enabled"),
        ({"route": "learned"}, "'learned' is not allowed here"),
        ({"ttl_s": 101}, "above episodes.max_ttl_s"),
        ({"verifier": "w"}, "'w' is not one of episodes.verifiers"),
        ({"files": {"../x": "1"}}, "not a relative path"),
        ({"files": {"x": "1"}, "channels": ["mcp"]}, "the shell channel is not in play"),
        ({"fork": "other"}, "fork: 'other' is not one of fork.workspaces"),
        ({"fork": "project", "channels": ["mcp"]}, "fork: the shell channel is not in play"),
        ({"seed": 3}, "seed"),  # unknown keys are errors, not ignored
        ({"ttl_s": -1}, "ttl_s"),
        ({"world": {"file": "/etc/passwd"}}, "world.file: an episode's world is sent inline"),
        ({"world": {"dates": "2031"}}, "world"),
        ({"world": "x" * 40_000}, "world: the world document has 40000 characters"),
    ]:
        with pytest.raises(EpisodeOptionsError, match=says):
            EpisodeOptions.parse(bad, CONFIG)


def _result(text: str, *, provenance: str, is_error: bool = True, policy: str = "mode") -> dict:
    meta = {"simroute": {"provenance": provenance, "policy": policy}}
    return {"content": [{"type": "text", "text": text}], "isError": is_error, "_meta": meta}


def test_infra_failures_are_told_from_the_agents_own_errors():
    assert infra_failure(_result("simroute: world model failed: timeout", provenance="sim"))
    assert infra_failure(_result("simroute: upstream 'x' failed while calling 'y'", provenance="none"))
    assert infra_failure(_result("simroute has 256 agent sessions open", provenance="none", policy="sessions"))
    assert not infra_failure(
        _result("invalid arguments for tool 'x': text: required", provenance="none", policy="input-schema")
    )
    assert not infra_failure(_result("simroute denied this call (rules): no", provenance="none", policy="rules"))
    assert not infra_failure(
        _result("simroute: looks like ours but real said it", provenance="real")
    )  # the upstream's own error
    assert not infra_failure(_result("simroute: fine", provenance="none", is_error=False))


def test_the_reward_of_a_verifier_command():
    assert reward_of_output("passed 3 of 4\nscore 0.75\n", 1) == 0.75  # the last number wins over the exit code
    assert reward_of_output("all good\n", 0) == 1.0
    assert reward_of_output("", 2) == 0.0
    assert reward_of_output("-1e-3", 0) == -0.001
    with pytest.raises(VerifierError, match="exit code is unknown"):
        reward_of_output("no numbers", None)
    assert as_reward(True, "v") == 1.0
    with pytest.raises(VerifierError, match="returned str"):
        as_reward("1", "v")


async def test_a_retry_is_answered_once_and_a_failure_is_not_an_answer():
    runs = []

    async def call(value):
        runs.append(value)
        await asyncio.sleep(0.01)
        return value

    answered: dict = {}
    first, concurrent = await asyncio.gather(
        answered_once(answered, "7", lambda: call("a")), answered_once(answered, "7", lambda: call("b"))
    )
    assert (first, concurrent, runs) == ("a", "a", ["a"])
    assert await answered_once(answered, None, lambda: call("c")) == "c"  # no request id: nothing to retry

    async def broken():
        raise RuntimeError("lost")

    with pytest.raises(RuntimeError):
        await answered_once(answered, "8", broken)
    assert await answered_once(answered, "8", lambda: call("d")) == "d"  # the retry runs again


def test_a_tool_unlisted_because_its_server_failed_is_an_infra_failure():
    text = (
        "simroute: upstream 'toolbox' could not list its tools (UpstreamError: timed out), "
        "so 'echo' was not called; try again"
    )
    assert infra_failure(_result(text, provenance="none", policy="upstream-listing"))
