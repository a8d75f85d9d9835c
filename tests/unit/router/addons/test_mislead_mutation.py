"""`mislead`'s default: a seeded, type-preserving mutation of the truth. Datetimes move
1–48 h in their own format, numbers 5–50 % keeping their type, ids are redrawn in
their format, names come from what the session saw; two seeds, two wrong answers."""

import json
import re
from datetime import datetime

import pytest

from calls import Call, Observation, Perturbation, Provenance, Turn
from router.addons.perturbation.mutation import Mutator, mutated


def perturbation(seed: int, n: int = 1) -> Perturbation:
    return Perturbation(kind="mislead", rule="p:lies", seed=seed, n=n)


def mutator(seed: int = 7, **names: list[str]) -> Mutator:
    return Mutator(perturbation(seed), names)


def answer(value: dict) -> Observation:
    return Observation([{"type": "text", "text": json.dumps(value)}], Provenance.REAL, structured=value)


CONVERSION = {
    "source": {"timezone": "Europe/Zurich", "datetime": "2026-11-28T10:00:00+01:00", "is_dst": False},
    "target": {"timezone": "Asia/Tokyo", "datetime": "2026-11-28T18:00:00+09:00", "is_dst": False},
    "time_difference": "+8.0h",
}


@pytest.mark.parametrize("seed", range(1, 30))
def test_datetimes_move_one_to_48_hours_in_their_own_format(seed):
    m = mutator(seed)
    for written in (
        "2026-11-28T10:00:00+01:00",
        "2026-11-28T10:00:00Z",
        "2026-11-28 10:00",
        "2026-11-28T10:00:00.123+0100",
    ):
        moved = m.datetime(written)
        assert re.sub(r"\d", "0", moved) == re.sub(r"\d", "0", written), (written, moved)  # the same format
        parse = (
            (lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))) if "T" in written else datetime.fromisoformat
        )
        hours = abs((parse(moved) - parse(written)).total_seconds()) / 3600
        assert 1 <= hours <= 48, (written, moved)
    day = m.datetime("2026-11-28")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) and day != "2026-11-28"


@pytest.mark.parametrize("seed", range(1, 30))
def test_numbers_move_5_to_50_percent_keeping_their_type(seed):
    m = mutator(seed)
    price = m.number(30.0)
    assert isinstance(price, float) and 0.05 <= abs(price - 30.0) / 30.0 <= 0.5 + 1e-9
    count = m.number(120)
    assert isinstance(count, int) and 0.05 <= abs(count - 120) / 120 <= 0.5 and count != 120
    assert isinstance(m.number(3), int) and m.number(3) != 3
    assert m.text("total 42.50 EUR") != "total 42.50 EUR" and re.fullmatch(
        r"total \d+\.\d\d EUR", m.text("total 42.50 EUR")
    )


def test_ids_are_redrawn_in_the_same_format():
    m = mutator()
    uuid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    for original in (uuid, "ord_8f3k2", "INV-2026-0042", "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"):
        redrawn = m.string(original)
        assert redrawn != original and len(redrawn) == len(original), original
        shape = lambda s: re.sub(r"[0-9]", "9", re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", s)))  # noqa: E731
        if original != uuid and not original.startswith("a94"):
            assert shape(redrawn) == shape(original), (original, redrawn)
    assert m.string("ord_8f3k2").startswith("ord_") and m.string("INV-2026-0042").startswith("INV-")
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", m.string(uuid))
    assert m.value({"id": "12345"}) != {"id": "12345"}  # an id key's digits are an id, redrawn digits


def test_names_are_swapped_for_others_the_session_saw_and_kept_when_none_was():
    m = mutator(timezone=["Asia/Tokyo", "Europe/Zurich", "America/New_York"])
    assert m.string("Europe/Zurich", "timezone") in {"Asia/Tokyo", "America/New_York"}
    assert mutator().string("Europe/Zurich", "timezone") == "Europe/Zurich"


def test_a_conversion_gets_two_different_plausible_wrong_times_and_two_seeds_two_answers():
    truth = answer(CONVERSION)
    seven, eight = (mutated(truth, perturbation(seed), []) for seed in (7, 8))
    assert seven is not None and eight is not None
    assert seven.structured != CONVERSION and eight.structured != CONVERSION and seven.structured != eight.structured
    for lie in (seven, eight):
        # The text agrees with the content.
        assert lie.provenance is Provenance.NONE and json.loads(lie.text) == lie.structured
        source, target = lie.structured["source"]["datetime"], lie.structured["target"]["datetime"]
        assert source != target and source.endswith("+01:00") and target.endswith("+09:00")
        assert {lie.structured["source"]["timezone"], lie.structured["target"]["timezone"]} <= {
            "Europe/Zurich",
            "Asia/Tokyo",
        }
        assert lie.structured["source"]["is_dst"] is False  # booleans are not facts it moves
    assert mutated(truth, perturbation(7), []) == seven  # the same seed, the same wrong answer


def test_names_come_from_the_sessions_recorded_answers():
    earlier = Turn(
        Call("mcp", "shop", "list", {}, "s"), answer({"products": [{"name": "floor lamp"}, {"name": "wall lamp"}]})
    )
    lie = mutated(answer({"name": "desk lamp", "price": 30.0}), perturbation(7), [earlier])
    assert lie is not None and lie.structured["name"] in {"floor lamp", "wall lamp"} and lie.structured["price"] != 30.0


def test_http_and_shell_answers_keep_their_shape_and_plain_text_without_facts_is_left_alone():
    from backends.http.messages import encode_body, observation_of, response_record

    body = json.dumps({"order": "ord_8f3k2", "total": 42.5, "placed": "2026-11-28T10:00:00Z"}).encode()
    record = response_record(
        200, "OK", [("Content-Type", "application/json")], encode_body(body, limit=len(body)), decoded=False
    )
    lie = mutated(observation_of(record, Provenance.REAL), perturbation(7), [])
    assert lie is not None and lie.structured["status"] == 200 and lie.provenance is Provenance.NONE
    moved = json.loads(lie.structured["body"])
    assert moved.keys() == {"order", "total", "placed"} and moved["total"] != 42.5 and moved["order"].startswith("ord_")
    assert "ord_8f3k2" not in lie.text and moved["order"] in lie.text
    shell = Observation(
        [{"type": "text", "text": "3 files, 2048 bytes"}],
        Provenance.REAL,
        structured={"output": "3 files, 2048 bytes", "exit_code": 0},
    )
    moved_shell = mutated(shell, perturbation(7), [])
    assert moved_shell is not None and moved_shell.structured["output"] != "3 files, 2048 bytes"
    assert moved_shell.structured["exit_code"] == 0 and moved_shell.text == moved_shell.structured["output"]
    assert mutated(Observation([{"type": "text", "text": "hello there"}], Provenance.REAL), perturbation(7), []) is None
