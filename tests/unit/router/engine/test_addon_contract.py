"""The call-addon contract (router/engine/addons.py) through a real engine: the order
hooks are told in, only overridden hooks are called, an addon's answer wins over the
route, and the failure rules (a broken addon is skipped, a broken check keeps the call
from the real side)."""

from __future__ import annotations

from kit.calls import make_call
from kit.engine import FakeReal, make_engine

from calls import Observation, Provenance, Route, Session
from router.engine.addons import Addons, CallAddon


class Journal(CallAddon):
    """Writes every event it hooks, named, in one shared list."""

    def __init__(self, name: str, journal: list[str]) -> None:
        self.name, self.journal = name, journal

    async def decided(self, pending):
        self.journal.append(f"{self.name}.decided")

    async def route(self, pending):
        self.journal.append(f"{self.name}.route")

    async def before_real(self, pending, deadline_s):
        self.journal.append(f"{self.name}.before_real")

    async def after_real(self, pending, observation, outcome):
        self.journal.append(f"{self.name}.after_real")

    async def answered(self, pending, observation):
        self.journal.append(f"{self.name}.answered")
        return observation

    async def finished(self, pending, record):
        self.journal.append(f"{self.name}.finished:{record.status}")


class OnlyFinished(CallAddon):
    async def finished(self, pending, record):
        pass


async def test_hooks_are_told_in_list_order_and_after_real_in_reverse(tmp_path):
    engine, _ = await make_engine(tmp_path)
    journal: list[str] = []
    engine.addons.add(Journal("a", journal))
    engine.addons.add(Journal("b", journal), replace=False)
    outcome = await engine.handle(make_call("t", {"x": 1}, session="s"), Session("s"), FakeReal())
    assert outcome.observation.provenance is Provenance.REAL
    assert journal == [
        "a.decided", "b.decided",
        "a.route", "b.route",
        "a.before_real", "b.before_real",
        "b.after_real", "a.after_real",  # closes what before_real opened
        "a.answered", "b.answered",
        "a.finished:complete", "b.finished:complete",
    ]  # fmt: skip


def test_only_the_hooks_an_addon_overrides_are_called():
    addons = Addons([OnlyFinished()])
    assert [len(addons._hooks[hook]) for hook in ("decided", "route", "before_real", "answered", "finished")] == [
        0,
        0,
        0,
        0,
        1,
    ]


class Answers(CallAddon):
    async def route(self, pending):
        return Observation([{"type": "text", "text": "from the addon"}], Provenance.NONE)


async def test_an_addons_answer_wins_and_no_route_runs(tmp_path):
    engine, store = await make_engine(tmp_path)
    engine.addons.add(Answers())
    real = FakeReal()
    outcome = await engine.handle(make_call("t", {}, session="s"), Session("s"), real)
    assert outcome.observation.text == "from the addon" and real.calls == 0
    assert [row["status"] for row in await store.recent()] == ["complete"]  # still recorded


class Broken(CallAddon):
    async def decided(self, pending):
        raise RuntimeError("broken decided")

    async def finished(self, pending, record):
        raise RuntimeError("broken finished")


class BrokenCheck(CallAddon):
    async def before_real(self, pending, deadline_s):
        raise RuntimeError("the guard crashed")


async def test_a_broken_addon_is_skipped_and_the_next_still_runs(tmp_path):
    engine, store = await make_engine(tmp_path)
    journal: list[str] = []
    engine.addons.add(Broken())
    engine.addons.add(Journal("after", journal))
    outcome = await engine.handle(make_call("t", {}, session="s"), Session("s"), FakeReal())
    assert (
        outcome.observation.provenance is Provenance.REAL
        and "after.decided" in journal
        and "after.finished:complete" in journal
    )
    assert [row["status"] for row in await store.recent()] == ["complete"]


async def test_a_broken_check_before_the_real_side_keeps_the_call_from_it(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.REAL)
    engine.addons.add(BrokenCheck())
    real = FakeReal()
    outcome = await engine.handle(make_call("t", {}, session="s"), Session("s"), real)
    assert real.calls == 0 and outcome.observation.is_error
    assert len(await store.recent()) == 1  # the call still left its record
