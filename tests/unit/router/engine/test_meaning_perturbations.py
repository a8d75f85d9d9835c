"""The engine's meaning-level perturbations: `paginate` (pages kept in session state,
a follow-up cursor served from there without asking any side) and `mislead` (the
world model re-answers with the route's answer as the truth; the record keeps it)."""

import json

from kit.engine import c, make_engine

from calls import Observation, Provenance, Session
from policies.perturbation import PlanConfig, compile_plan
from router.addons.perturbation.addon import Perturber
from router.addons.perturbation.pages import next_cursor


def perturber(*rules, seed=7):
    return Perturber(
        {"p": compile_plan("p", PlanConfig.model_validate({"seed": seed, "rules": list(rules)}))}, default="p"
    )


class Listing:
    def __init__(self, count: int) -> None:
        self.count, self.calls = count, 0

    async def __call__(self, call):
        self.calls += 1
        value = {"items": [f"item {i}" for i in range(self.count)]}
        return Observation([{"type": "text", "text": json.dumps(value)}], Provenance.REAL, structured=value)


class SteeredSimulator:
    def __init__(self, answer: dict) -> None:
        self.answer, self.steers = answer, []

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        self.steers.append(steer)
        return Observation([{"type": "text", "text": json.dumps(self.answer)}], Provenance.SIM, structured=self.answer)


async def test_following_the_cursor_gets_each_next_page_from_session_state_and_the_last_has_none(tmp_path):
    engine, store = await make_engine(tmp_path)
    engine.addons.add(perturber({"name": "pages", "kind": "paginate", "page_size": 2}))
    real, session = Listing(5), Session("a")
    first = await engine.handle(c("a"), session, real)
    assert (
        first.observation.structured["items"] == ["item 0", "item 1"]
        and first.observation.provenance is Provenance.NONE
    )
    seen, cursor = [first.observation], next_cursor(first.observation)
    while cursor is not None:
        page = await engine.handle(c("a", cursor=cursor), session, real)
        seen.append(page.observation)
        cursor = next_cursor(page.observation)
    assert [o.structured["items"] for o in seen] == [["item 0", "item 1"], ["item 2", "item 3"], ["item 4"]]
    assert real.calls == 1  # the follow-ups asked no side
    rows = await store.recent(session="a")
    assert [row["perturbation"].get("page") for row in rows] == [1, 2, 3]
    assert rows[0]["unperturbed"]["structured"]["items"] == [f"item {i}" for i in range(5)]
    assert "cut into pages" in rows[0]["note"] and "page 2 of a listing, from session state" in rows[1]["note"]
    assert [row["provenance"] for row in rows] == ["none", "none", "none"]
    again = await engine.handle(c("a", cursor=next_cursor(seen[0])), session, real)  # the same cursor, the same page
    assert again.observation.structured == seen[1].structured


async def test_a_cursor_of_another_tool_or_session_is_not_a_follow_up(tmp_path):
    engine, _ = await make_engine(tmp_path)
    engine.addons.add(perturber({"name": "pages", "kind": "paginate", "page_size": 2}))
    real = Listing(3)
    first = await engine.handle(c("a"), Session("a"), real)
    other = await engine.handle(c("b", cursor=next_cursor(first.observation)), Session("b"), real)
    assert real.calls == 2 and other.observation.structured["items"] == ["item 0", "item 1"]


async def test_mislead_reanswers_with_the_real_answer_as_the_truth_and_the_record_keeps_it(tmp_path):
    engine, store = await make_engine(tmp_path)
    engine.addons.add(perturber({"name": "lie", "kind": "mislead", "mislead_with": "world_model"}))
    engine.simulator = SteeredSimulator({"items": ["wrong"]})
    outcome = await engine.handle(c("a"), Session("a"), Listing(2))
    assert outcome.observation.structured == {"items": ["wrong"]} and outcome.observation.provenance is Provenance.SIM
    [steer] = engine.simulator.steers
    assert steer.kind == "mislead" and '"item 0"' in steer.instruction
    row = (await store.recent())[0]
    assert row["perturbation"] == {"kind": "mislead", "rule": "p:lie", "seed": 7, "n": 1}
    assert row["unperturbed"]["provenance"] == "real" and row["unperturbed"]["structured"] == {
        "items": ["item 0", "item 1"]
    }
    assert "the real answer was changed" in row["note"]


async def test_mislead_without_a_world_model_is_a_clear_error(tmp_path):
    engine, _ = await make_engine(tmp_path)
    engine.addons.add(perturber({"kind": "mislead", "mislead_with": "world_model"}))
    outcome = await engine.handle(c("a"), Session("a"), Listing(2))
    assert outcome.observation.is_error and "needs a world model" in outcome.observation.text


async def test_a_secret_in_the_real_answer_reaches_the_world_model_redacted(tmp_path):
    from records.redaction import Redactor

    engine, _ = await make_engine(tmp_path)
    engine.addons.add(perturber({"kind": "mislead", "mislead_with": "world_model"}))
    engine.simulator = SteeredSimulator({"token": "wrong"})
    engine.redactor = Redactor(key=b"test-key")
    secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"

    async def leaky(call):
        return Observation([{"type": "text", "text": f"token {secret}"}], Provenance.REAL)

    await engine.handle(c("a"), Session("a"), leaky)
    [steer] = engine.simulator.steers
    assert secret not in steer.instruction and "token" in steer.instruction


async def test_mislead_by_default_moves_the_truth_by_the_seed_without_a_world_model(tmp_path):
    prices = []
    for seed in (7, 8):
        engine, store = await make_engine(tmp_path / str(seed))
        engine.addons.add(perturber({"name": "lie", "kind": "mislead"}, seed=seed))

        async def real(call):
            value = {"product": "desk lamp", "price": 30.0, "currency": "EUR"}
            return Observation([{"type": "text", "text": json.dumps(value)}], Provenance.REAL, structured=value)

        outcome = await engine.handle(c("a"), Session("a"), real)
        lie = outcome.observation
        assert not lie.is_error and lie.provenance is Provenance.NONE  # simroute made it: no world model asked
        assert (
            lie.structured["currency"] == "EUR"
            and isinstance(lie.structured["price"], float)
            and lie.structured["price"] != 30.0
        )
        assert json.loads(lie.text) == lie.structured
        row = (await store.recent())[0]
        assert row["perturbation"] == {"kind": "mislead", "rule": "p:lie", "seed": seed, "n": 1}
        assert row["unperturbed"]["structured"]["price"] == 30.0 and "the real answer was changed" in row["note"]
        prices.append(lie.structured["price"])
    assert prices[0] != prices[1]  # seeds 7 and 8: two different wrong answers
