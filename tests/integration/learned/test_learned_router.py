"""The learned router end to end: `simroute mcp` with the bundled GGUF world model in
front of the toolbox server, whose `get_motto` always answers the same and whose
`get_visits` counts. Shadowed calls fill the store, `simroute train` learns from
them, and `mode: learned` then sends the constant tool off the real side and keeps
the counter real, as `simroute explain` and the session's records show."""

from __future__ import annotations

import json

import pytest
from kit.launch import meta_of
from kit.learned_run import ROUNDS, SESSIONS  # the `learned` session fixture: tests/conftest.py

pytestmark = pytest.mark.integration


async def test_shadow_records_train_a_model(learned):
    shadowed = [r for r in learned["records"] if r["route"] == "shadow"]
    assert len(shadowed) == 2 * ROUNDS * SESSIONS and all(
        r["status"] == "complete" and r["divergence"] is not None for r in shadowed
    )
    # Replay labels score what replay would have served: the previous session's n-th answer.
    assert "replay: 8 labels (4 acceptable)" in learned["train"] and "saved" in learned["train"]
    card = json.loads((learned["folder"] / ".simroute" / "router.card.json").read_text())
    assert card["routes"]["replay"]["trained"] and card["data"]["records"] == 2 * ROUNDS * SESSIONS
    # The promise counts calls: the motto's calls after the first session replay, the counter's never do.
    assert card["promise"]["calls"] == 2 * ROUNDS * SESSIONS and card["promise"]["served"].get("replay", 0) >= ROUNDS


async def test_learned_mode_replays_the_constant_tool_and_keeps_the_counter_real(learned):
    motto, visits = learned["served"]["get_motto"], learned["served"]["get_visits"]
    assert meta_of(motto)["policy"] == "learned" and meta_of(motto)["route"] in ("replay", "sim")
    assert motto.content[0].text == "Festina lente: make haste slowly."
    assert (
        meta_of(visits)["policy"] == "learned"
        and meta_of(visits)["route"] == "real"
        and meta_of(visits)["provenance"] == "real"
    )
    session = [r for r in learned["records"] if r["policy"] == "learned"]
    assert [(r["tool"], r["route"]) for r in session] == [
        ("get_motto", meta_of(motto)["route"]),
        ("get_visits", "real"),
    ]
    assert (
        "P(ok)=" in session[1]["reason"]
        and "replay: answers agreed in 3 sessions and never differed" in session[0]["reason"]
    )


async def test_explain_shows_the_probabilities_behind_it(learned):
    motto, visits = learned["explained"]["get_motto"], learned["explained"]["get_visits"]
    assert motto["policy"] == "learned" and motto["route"] in ("replay", "sim") and visits["route"] == "real"
    replay = {c["route"]: c for c in motto["learned"]["candidates"]}["replay"]
    counter = {c["route"]: c for c in visits["learned"]["candidates"]}["replay"]
    assert replay["eligible"] and replay["rule"].startswith("answers agreed in 3 sessions")
    assert not counter["eligible"] and counter["probability"] < replay["probability"]
