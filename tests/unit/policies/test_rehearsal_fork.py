"""Rehearsal with `on_divert: fork`: a destructive call of a channel that can fork goes
to its fork and the session stays there (allow rules included); a channel that cannot
fork is simulated, the reason said; a fork's answer is never a replay source."""

from __future__ import annotations

from kit.calls import make_call

from backends.shell.fork_copy import ForkedState, restore_script
from calls import Decision, Route, Session
from policies.base import decide
from policies.rehearsal import after_call
from records.servable import servable, servable_row
from records.store.server_writes import write_span
from router.config import parse_config
from router.runtime.policy_chain import build_policies

FALLBACK = Decision(Route.REAL, "default", "none")
CONFIG = """
mode: rehearsal
rehearsal:
  on_divert: fork
  allow:
    - {match: {channel: shell, command: "rm -rf build*"}, route: real, name: build-dir}
"""


def shell(command: str):
    return make_call("shell_exec", {"command": command}, channel="shell", session="s")


def routed(policies, session, call) -> Decision:
    decision = decide(policies, call, session, fallback=FALLBACK)
    after_call(session, call, decision)
    return decision


def test_a_destructive_shell_call_forks_and_the_session_stays_on_its_fork():
    policies, session = build_policies(parse_config(CONFIG)), Session("s")
    assert routed(policies, session, shell("ls data")).route is Route.REAL  # before any divergence: real
    forked = routed(policies, session, shell("rm -rf data/"))
    assert (forked.route, forked.policy, forked.safety) == (Route.FORK, "rehearsal", "destructive")
    later = routed(policies, session, shell("ls data"))
    assert (later.route, later.policy) == (Route.FORK, "rehearsal") and "stays on its fork" in later.reason
    # An allowed call too: the agent sees one world, the one that diverged.
    assert routed(policies, session, shell("rm -rf build/")).route is Route.FORK


def test_a_channel_that_cannot_fork_is_simulated_with_the_reason():
    policies, session = build_policies(parse_config(CONFIG)), Session("s")
    call = make_call("delete_file", {"path": "x"}, channel="mcp", server="files", session="s")
    decision = routed(policies, session, call)
    assert decision.route is Route.SIM and "the mcp channel cannot fork, so it is simulated" in decision.reason


def test_without_a_shell_nothing_forks():
    policies = build_policies(parse_config(CONFIG + "shell: {enabled: false}\n"))
    decision = decide(policies, shell("rm -rf data/"), Session("s"), fallback=FALLBACK)
    assert decision.route is Route.SIM and "cannot fork" in decision.reason


def test_rules_may_name_fork_and_a_fork_config_may_run_the_shell_pool():
    config = parse_config("rules: [{match: {channel: shell}, route: fork}]\nmode: sim\n")
    assert decide(build_policies(config), shell("ls"), Session("s"), fallback=FALLBACK).route is Route.FORK
    assert config.may_fork() and config.may_run_real("shell") and not config.may_run_real("browser")
    assert config.may_simulate()  # a call that cannot fork is simulated


def test_a_fork_answer_is_never_servable_nor_a_write_of_the_real_side():
    assert not servable("fork", "complete", perturbed=False, truncated=False)
    row = {
        "provenance": "fork",
        "route": "fork",
        "status": "complete",
        "ts": 1.0,
        "observation": {},
        "safety_class": "destructive",
    }
    assert not servable_row(row) and write_span(row) is None


def test_the_restore_script_sets_exports_and_cwd_and_unsets_the_rest():
    script = restore_script(ForkedState(cwd="/workspace/a b", variables={"FOO": "it's", "PATH": "/usr/bin"}))
    assert "export FOO='it'\"'\"'s'" in script and "export PATH=/usr/bin" in script
    assert script.endswith("cd -- '/workspace/a b'") and 'unset "$__v"' in script
    assert " FOO PATH PWD SHLVL _ " in script  # kept; every other exported variable is unset


def test_a_fork_answer_round_trips_with_its_source():
    from calls import Observation, Provenance, Source

    fork = {"id": "f1", "container": "c", "from": "session sandbox", "copied": {"bytes": 3}}
    answer = Observation([{"type": "text", "text": "removed"}], Provenance.FORK, source=Source(extra={"fork": fork}))
    again = Observation.from_json(answer.to_json())
    assert again.provenance is Provenance.FORK and again.source_json() == {"fork": fork}


def test_an_mcp_server_naming_its_local_state_forks_and_the_others_are_simulated():
    config = parse_config(
        CONFIG
        + "mcpServers:\n"
        + "  git: {command: mcp-server-git, args: [--repository, /srv/repo], state: [/srv/repo]}\n"
        + "  files: {command: mcp-server-files}\n"
        + "  remote: {url: 'https://mcp.example.com/mcp'}\n"
    )
    policies = build_policies(config)
    for server, route in (("git", Route.FORK), ("files", Route.SIM), ("remote", Route.SIM)):
        call = make_call("git_reset", {"repo_path": "/srv/repo"}, channel="mcp", server=server, session="s")
        decision = routed(policies, Session("s"), call)
        assert decision.route is route, server
        assert route is Route.FORK or "the mcp channel cannot fork, so it is simulated" in decision.reason
