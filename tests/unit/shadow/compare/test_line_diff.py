"""The record view's line diffs: rows aligned, divergent and masked lines marked
from the record's real evidence (shadow/compare/divergence.py `compare`)."""

from __future__ import annotations

from calls import Observation, Provenance
from shadow.compare.divergence import compare
from shadow.compare.line_diff import DIVERGENT, EQUAL, MASKED, aligned, record_diffs


def shadowed_row(channel: str, real: Observation, sim: Observation) -> dict:
    found = compare(real, sim, channel=channel)
    return {
        "channel": channel,
        "provenance": "real",
        "observation": real.to_json(),
        "shadow": sim.to_json(),
        "divergence_evidence": found.evidence,
    }


def states(diff: dict) -> list[tuple[int | None, int | None, str]]:
    return [(r["real_line"], r["sim_line"], r["state"]) for r in diff["rows"]]


def page(snapshot: str, provenance: Provenance) -> Observation:
    return Observation(
        content=[{"type": "text", "text": snapshot}],
        structured={"url": "http://shop.test/cart", "title": "Cart", "snapshot": snapshot},
        provenance=provenance,
    )


def test_a_browser_snapshot_diff_marks_the_divergent_line_not_the_renumbered_refs():
    real = page('- heading "Cart" [ref=e4]\n- text: 2 items [ref=e5]\n- button "Pay" [ref=e6]', Provenance.REAL)
    sim = page('- heading "Cart" [ref=e1]\n- text: 3 items [ref=e2]\n- button "Pay" [ref=e3]', Provenance.SIM)
    diffs = record_diffs(shadowed_row("browser", real, sim))
    assert states(diffs["snapshot"]) == [(1, 1, EQUAL), (2, 2, DIVERGENT), (3, 3, EQUAL)]  # refs compared renumbered
    assert diffs["snapshot"]["rows"][1]["sim"] == "- text: 3 items [ref=e2]"
    assert "screen" not in diffs and "text" in diffs


def test_a_line_only_one_side_has_is_divergent_and_a_timestamp_is_noise():
    def shell(output: str, provenance: Provenance) -> Observation:
        return Observation(
            content=[{"type": "text", "text": output}],
            structured={"output": output, "exit_code": 0, "cwd": "/w"},
            provenance=provenance,
        )

    real = shell("start 2026-01-01T10:00:00Z\nstep one\ndone", Provenance.REAL)
    sim = shell("start 2026-01-01T10:04:00Z\nstep one\nstep two\ndone", Provenance.SIM)
    diffs = record_diffs(shadowed_row("shell", real, sim))
    assert states(diffs["screen"]) == [(1, 1, MASKED), (2, 2, EQUAL), (None, 3, DIVERGENT), (3, 4, EQUAL)]
    assert states(diffs["text"]) == states(diffs["screen"])  # the text diff's built-in noise detectors agree here


def test_served_by_the_world_model_the_real_side_is_the_shadow():
    real = Observation(content=[{"type": "text", "text": "a\nb"}], provenance=Provenance.REAL)
    sim = Observation(content=[{"type": "text", "text": "a\nc"}], provenance=Provenance.SIM)
    row = {
        **shadowed_row("mcp", real, sim),
        "provenance": "sim",
        "observation": sim.to_json(),
        "shadow": real.to_json(),
    }
    assert [(r["real"], r["sim"], r["state"]) for r in record_diffs(row)["text"]["rows"]] == [
        ("a", "a", EQUAL),
        ("b", "c", DIVERGENT),
    ]
    assert record_diffs({**row, "shadow": None}) == {}  # not shadowed: nothing to compare


def test_long_texts_are_cut():
    text = "\n".join(f"line {n}" for n in range(50))
    diff = aligned(text, text, {}, max_rows=10)
    assert diff["cut"] and len(diff["rows"]) == 10


def test_the_tree_shows_both_sides_in_the_compared_form_whose_paths_the_evidence_names():
    real = Observation(
        content=[{"type": "text", "text": '{"count": 3}'}], structured={"count": 3}, provenance=Provenance.REAL
    )
    sim = Observation(
        content=[{"type": "text", "text": '{"count": 4}'}], structured={"count": 4}, provenance=Provenance.SIM
    )
    row = shadowed_row("mcp", real, sim)
    tree = record_diffs(row)["tree"]
    assert [d["path"] for d in row["divergence_evidence"]["divergent"]] == ["$.result.count"]
    assert (
        tree["real"]["result"] == {"count": 3}
        and tree["sim"]["result"] == {"count": 4}
        and tree["real"]["error"] is False
    )
