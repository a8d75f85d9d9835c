import pytest

from calls import Call, Decision, Observation, Provenance, Route
from records.export.options import ExportFilter, ExportPlan, SessionSplit
from records.record import Record


def record(**changes) -> Record:
    base = Record(
        call=Call("mcp", "weather", "forecast", {"city": "Oslo"}, "alice/s1"),
        decision=Decision(Route.REAL, "mode", ""),
        served=Observation([{"type": "text", "text": "sunny"}], Provenance.REAL),
        step=0,
        call_key="k",
        ts=100.0,
    )
    for name, value in changes.items():
        setattr(base, name, value)
    return base


def test_the_split_is_seeded_by_session_and_near_the_fraction():
    split = SessionSplit(test_fraction=0.2, seed=3)
    sides = [split.side(f"session-{n}") for n in range(5000)]
    assert sides == [split.side(f"session-{n}") for n in range(5000)]  # the same seed, the same split
    assert 0.18 < sides.count("test") / len(sides) < 0.22
    other = [SessionSplit(test_fraction=0.2, seed=4).side(f"session-{n}") for n in range(5000)]
    assert other != sides
    assert {SessionSplit(test_fraction=0.0).side(f"s{n}") for n in range(100)} == {"train"}
    assert {SessionSplit(test_fraction=1.0).side(f"s{n}") for n in range(100)} == {"test"}


def test_filters_select_targets():
    assert ExportFilter().selects(record())
    assert not ExportFilter(since=101).selects(record()) and ExportFilter(until=101).selects(record())
    assert not ExportFilter(until=100).selects(record())  # the end is exclusive
    assert not ExportFilter(tool="alerts").selects(record()) and ExportFilter(server="weather", channel="mcp").selects(
        record()
    )
    assert not ExportFilter(min_divergence=0.2).selects(record())  # not shadowed: no divergence to meet the threshold
    assert ExportFilter(min_divergence=0.2).selects(record(divergence=0.5)) and not ExportFilter(
        min_divergence=0.6
    ).selects(record(divergence=0.5))
    assert not ExportFilter().selects(record(status="interrupted")) and ExportFilter(statuses=("interrupted",)).selects(
        record(status="interrupted")
    )
    assert not ExportFilter(provenances=("sim",)).selects(record())
    forked = record(
        served=Observation([{"type": "text", "text": "gone"}], Provenance.FORK),
        decision=Decision(Route.FORK, "rehearsal", ""),
    )
    assert ExportFilter().selects(forked) and ExportFilter(provenances=("fork",)).selects(forked)  # asked for by name
    assert not ExportFilter(provenances=("real",)).selects(forked)


def test_token_namespaces_pick_sessions():
    where = ExportFilter(tokens=("alice", "bob"))
    assert where.prefixes == ("alice/", "bob/")
    assert where.in_scope("alice/s1") and not where.in_scope("carol/s1") and not where.in_scope("alice-s1")
    assert ExportFilter().prefixes == ("",) and ExportFilter().in_scope("anything")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ExportFilter(statuses=("done",)), "unknown status 'done'"),
        (lambda: ExportFilter(provenances=("fake",)), "unknown provenance 'fake'"),
        (lambda: ExportFilter(min_divergence=1.5), "within 0..1"),
        (lambda: ExportFilter(since=10, until=5), "ends before it starts"),
        (lambda: ExportFilter(tokens=("a/b",)), "without '/'"),
        (lambda: SessionSplit(test_fraction=2), "within 0..1"),
        (lambda: ExportPlan(formats=("csv",)), "unknown format 'csv'"),
        (lambda: ExportPlan(formats=()), "no format"),
    ],
)
def test_bad_options_are_refused_with_the_reason(make, message):
    with pytest.raises(ValueError, match=message):
        make()
