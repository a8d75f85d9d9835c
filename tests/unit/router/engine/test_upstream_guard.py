"""The upstream guard as the engine runs it, right before the real side: refusals
never reach the real side, are recorded with provenance `none` and say why, in the
channel's shape; what counts as a failure of the real side."""

from __future__ import annotations

import asyncio
import json

import pytest
from kit.calls import make_call
from kit.engine import FakeReal, make_engine

from calls import Call, Observation, Provenance, Route, Session
from records.shared_state.guard_slots import Limits, LocalGuardState
from router.addons.upstream_guard.guard import UpstreamGuard
from router.addons.upstream_guard.shapes import REFUSED_EXIT_CODE
from router.engine.real_calls import outcome_of


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class Upstream:
    """A real side that fails (raises, or answers like a transport error) until told to recover."""

    def __init__(self, failure: str = "raise") -> None:
        self.calls, self.failing, self.failure = 0, True, failure

    async def __call__(self, call: Call) -> Observation:
        self.calls += 1
        if self.failing and self.failure == "raise":
            raise ConnectionError("connection refused")
        if self.failing and self.failure == "tool-error":  # the tool's own isError: the upstream answered
            return Observation.error("no such file", Provenance.REAL)
        return Observation([{"type": "text", "text": "ok"}], Provenance.REAL)


async def guarded(tmp_path, limits: Limits, **options):
    engine, store = await make_engine(tmp_path, **options)
    clock = Clock()
    engine.guard = engine.addons.add(
        UpstreamGuard(state=LocalGuardState(), limits_for=lambda upstream: limits, clock=clock)
    )
    return engine, store, clock


async def test_the_breaker_stops_calls_to_a_failing_upstream_until_a_trial_succeeds(tmp_path):
    engine, store, clock = await guarded(tmp_path, Limits(breaker_failures=3, breaker_cooldown_s=30))
    upstream, session = Upstream(), Session("s")
    for _ in range(3):
        outcome = await engine.handle(make_call(), session, upstream)
        assert outcome.observation.is_error and outcome.observation.provenance is Provenance.NONE
    refused = await engine.handle(make_call(), session, upstream)
    assert upstream.calls == 3  # the refused call never reached the real side
    assert refused.observation.is_error and refused.observation.provenance is Provenance.NONE
    assert "circuit breaker is open after 3 consecutive failures" in refused.observation.text
    assert "retry after 30s" in refused.observation.text
    [row] = [r for r in await store.recent() if r["id"] == refused.record.id]
    assert row["route"] == "real" and row["provenance"] == "none" and row["status"] == "complete"
    assert "upstream guard refused the real call (breaker_open)" in row["note"]
    assert engine.guard.refusals[("srv", "breaker_open")] == 1 and engine.guard.breakers["srv"] == "open"

    clock.now += 31
    upstream.failing = False
    trial = await engine.handle(make_call(), session, upstream)
    assert trial.observation.provenance is Provenance.REAL and upstream.calls == 4
    assert engine.guard.breakers["srv"] == "closed"
    assert (await engine.handle(make_call(), session, upstream)).observation.provenance is Provenance.REAL


async def test_a_tools_own_error_is_an_answer_not_a_failure(tmp_path):
    engine, _, _ = await guarded(tmp_path, Limits(breaker_failures=2))
    upstream = Upstream("tool-error")
    for _ in range(5):
        outcome = await engine.handle(make_call(), Session("s"), upstream)
        assert outcome.observation.provenance is Provenance.REAL
    assert upstream.calls == 5 and engine.guard.breakers["srv"] == "closed"


async def test_a_missed_deadline_counts_as_a_failure(tmp_path):
    engine, _, _ = await guarded(tmp_path, Limits(breaker_failures=2), deadline=0.05)
    slow = FakeReal(delay=1.0)
    for _ in range(2):
        assert "deadline" in (await engine.handle(make_call(), Session("s"), slow)).observation.text
    assert "circuit breaker is open" in (await engine.handle(make_call(), Session("s"), slow)).observation.text
    assert slow.calls == 2


async def test_concurrency_cap_refuses_the_second_call_while_the_first_runs(tmp_path):
    engine, _, _ = await guarded(tmp_path, Limits(max_concurrent=1))
    slow = FakeReal(delay=0.3)
    first = asyncio.create_task(engine.handle(make_call(), Session("a"), slow))
    await asyncio.sleep(0.05)
    second = await engine.handle(make_call(), Session("b"), slow)
    assert (
        "1 call(s) to it are already in flight" in second.observation.text
        and second.observation.provenance is Provenance.NONE
    )
    assert (await first).observation.provenance is Provenance.REAL and slow.calls == 1
    assert engine.guard.in_flight["srv"] == 0
    # The slot came back.
    assert (await engine.handle(make_call(), Session("b"), slow)).observation.provenance is Provenance.REAL


async def test_a_cancelled_call_frees_its_slot_and_says_nothing_to_the_breaker(tmp_path):
    engine, _, _ = await guarded(tmp_path, Limits(max_concurrent=1, breaker_failures=1))
    task = asyncio.create_task(engine.handle(make_call(), Session("a"), FakeReal(delay=5)))
    await asyncio.sleep(0.05)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert engine.guard.breakers["srv"] == "closed" and engine.guard.in_flight["srv"] == 0
    assert (await engine.handle(make_call(), Session("b"), FakeReal())).observation.provenance is Provenance.REAL


async def test_calls_whose_session_closed_under_them_say_nothing_to_the_breaker(tmp_path):
    """The agent closed its session mid-call: simroute tore the session's upstream down,
    so the failures that follow are simroute's doing, not the upstream's."""
    engine, store, clock = await guarded(tmp_path, Limits(breaker_failures=2, breaker_cooldown_s=30))
    upstream = Upstream()
    for i in range(4):
        session = Session(f"closing-{i}")

        async def torn_down(call: Call, session=session) -> Observation:
            session.closed = True  # what SessionRegistry.close sets, while the call runs
            return await upstream(call)

        await engine.handle(make_call(session=session.id), session, torn_down)
    upstream.failing = False
    answered = await engine.handle(make_call(), Session("open"), upstream)
    assert upstream.calls == 5 and answered.observation.provenance is Provenance.REAL  # the breaker stayed closed


async def test_budgets_are_per_token(tmp_path):
    engine, _, _ = await guarded(tmp_path, Limits(budget=2, budget_window_s=3600))
    real = FakeReal()
    for _ in range(2):
        await engine.handle(make_call(session="alice/s1"), Session("alice/s1"), real)
    spent = await engine.handle(make_call(session="alice/s2"), Session("alice/s2"), real)
    assert "this token's budget of 2 calls per 3600s is spent" in spent.observation.text
    assert (
        await engine.handle(make_call(session="bob/s1"), Session("bob/s1"), real)
    ).observation.provenance is Provenance.REAL
    assert real.calls == 3


async def test_refusals_take_each_channels_shape(tmp_path):
    engine, _, _ = await guarded(tmp_path, Limits(budget=1, budget_window_s=3600))
    real = FakeReal()
    for channel, server, arguments in [
        ("shell", "shell", {"command": "ls"}),
        ("http", "api.example.com", {"method": "GET"}),
    ]:
        await engine.handle(make_call("x", arguments, channel=channel, server=server), Session("s"), real)
    shell = (await engine.handle(make_call("exec", {"command": "ls"}, channel="shell"), Session("s"), real)).observation
    assert (
        shell.structured["exit_code"] == REFUSED_EXIT_CODE and "budget" in shell.structured["output"] and shell.is_error
    )
    http = (
        await engine.handle(
            make_call("GET", {"method": "GET"}, channel="http", server="api.example.com"), Session("s"), real
        )
    ).observation
    assert http.structured["status"] == 429 and http.provenance is Provenance.NONE
    assert dict(http.structured["headers"])["Retry-After"].isdigit()
    body = json.loads(http.structured["body"])
    assert body["reason"] == "budget" and body["provenance"] == "none" and body["upstream"] == "api.example.com"
    assert real.calls == 2


async def test_a_shadow_route_refused_is_not_simulated_instead(tmp_path):
    """A session does not hop to the simulated side because the real one is refused:
    the agent gets the refusal, and the record says why."""
    engine, _, _ = await guarded(tmp_path, Limits(max_concurrent=1), mode=Route.SHADOW)
    slow = FakeReal(delay=0.3)
    first = asyncio.create_task(engine.handle(make_call(), Session("a"), slow))
    await asyncio.sleep(0.05)
    second = await engine.handle(make_call(), Session("b"), slow)
    await first
    assert second.record.decision.route is Route.SHADOW and second.observation.provenance is Provenance.NONE
    assert "upstream guard refused the real call (concurrency)" in second.record.note


def _http(status: int, provenance: Provenance = Provenance.REAL) -> Observation:
    return Observation([], provenance, structured={"status": status})


@pytest.mark.parametrize(
    ("channel", "observation", "raised", "expected"),
    [
        ("http", _http(502), False, "failure"),  # the upstream's own 5xx
        ("http", _http(504, Provenance.NONE), False, "failure"),  # simroute's: no answer in time
        ("http", _http(404), False, "success"),
        ("mcp", Observation.error("connection lost", Provenance.NONE), False, "failure"),
        ("mcp", Observation.error("invalid params", Provenance.REAL), False, "success"),  # the tool's own error
        ("shell", Observation([], Provenance.REAL, structured={"exit_code": 2}), False, "success"),
        ("browser", Observation.error("address refused", Provenance.NONE), False, "success"),  # simroute's own refusal
        ("browser", Observation.error("deadline", Provenance.NONE), True, "failure"),
    ],
)
def test_what_counts_as_a_failure_of_the_real_side(channel, observation, raised, expected):
    assert outcome_of(make_call(channel=channel), observation, raised=raised) == expected
