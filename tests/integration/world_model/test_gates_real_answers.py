"""False alarms of the gates on every model answer: real answers of the project's own
test and benchmark servers (MCP in process and mcp-server-time over stdio, HTTP over
loopback, bash in a scratch folder; tests/kit/real_answers.py) pass them, each judged
as if simulated, with the same tool's other real answers as its recordings and the
session's earlier turns as its history. The same corpus with an answer swapped for
another entity's, or made degenerate, is refused: the gates are not vacuous."""

import json
from collections import Counter

import pytest
from kit.real_answers import http_answers, mcp_answers, shell_answers

from backends.world_model.gates import real_examples, repeatable, screen_answer
from backends.world_model.gates.sources import answer_text, row_observation
from calls import Call, Observation, Provenance, Session, Turn

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
async def corpus(tmp_path_factory) -> list[dict]:
    scratch = tmp_path_factory.mktemp("real-answers")
    return [*await mcp_answers(scratch), *http_answers(), *shell_answers(scratch)]


def call_of(row: dict) -> Call:
    return Call(row["channel"], row["server"], row["tool"], row["arguments"], row["session"])


def judged(corpus: list[dict]):
    """(row, why the gates refuse it or None) for every real answer: its recordings are
    the same tool's answers from the other sessions and this session's earlier real ones."""
    sessions: dict[str, Session] = {}
    for row in corpus:
        call = call_of(row)
        session = sessions.setdefault(row["session"], Session(row["session"]))
        others = [other for other in corpus if other["session"] != row["session"] and other["tool"] == row["tool"]]
        others = [other for other in others if other["server"] == row["server"]]
        examples = real_examples(call, session, others)
        observation = row_observation(row)
        observation.provenance = Provenance.SIM
        yield row, screen_answer(call, observation, examples, context=repeatable(call, session))
        session.add_turn(Turn(call, row_observation(row)))


async def test_real_answers_pass_the_gates(corpus):
    outcomes = list(judged(corpus))
    refused = [(row["server"], row["tool"], row["arguments"], why) for row, why in outcomes if why is not None]
    per_channel = Counter(row["channel"] for row, _ in outcomes)
    print(f"\nreal answers judged: {len(outcomes)} {dict(per_channel)}; refused: {len(refused)}")
    assert per_channel["mcp"] >= 90 and per_channel["http"] >= 15 and per_channel["shell"] >= 30
    assert not refused, json.dumps(refused, indent=1, default=str)


async def test_another_entitys_real_answer_and_degenerate_text_are_refused(corpus):
    """A real answer of another timezone, city or repository served for this call's (what
    a small model copies from an example), or degenerate text, is refused."""
    swapped = 0
    for row, _ in judged(corpus):
        if (
            row["tool"] not in ("get_current_time", "workspace_info", "echo", "get_price")
            or row_observation(row).is_error
        ):
            continue
        donor = next(
            other
            for other in corpus
            if other["tool"] == row["tool"]
            and other["arguments"] != row["arguments"]
            and not row_observation(other).is_error
        )
        if answer_text("mcp", row_observation(donor)) == answer_text("mcp", row_observation(row)):
            continue
        call = call_of(row)
        others = [o for o in corpus if o["tool"] == row["tool"] and o["session"] != row["session"]]
        why = screen_answer(call, row_observation(donor), real_examples(call, Session("fresh"), others))
        assert why is not None and "does not name" in why, (row["arguments"], donor["arguments"], why)
        swapped += 1
    assert swapped >= 8
    for row in corpus[::7]:
        call = call_of(row)
        bad = Observation([{"type": "text", "text": "git-status-1.0.16" + ":1" * 12}], Provenance.SIM)
        if row["channel"] == "shell":
            bad.structured = {"output": bad.text, "exit_code": 0, "cwd": "/workspace"}
        assert screen_answer(call, bad, []) is not None
