"""A run's candidate adopted (or not), and an adoption reverted: the decision rule on
the model card's figures, and the adoption made where running routers follow it
(records/shared_state/adopted_world_model.py: a folder beside the store for one
router, Redis for replicas; router/runtime/world_model_adoption.py swaps it in)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from records.shared_state.adopted_world_model import Adoption
from router.config import Config
from router.tune.card import sha256_of, write_card
from router.tune.data import now
from router.tune.run import read_card


class AdoptionRefused(Exception):
    """The run or the config cannot take an adoption (the message says why)."""


@dataclass(frozen=True, slots=True)
class Decision:
    adopt: bool
    reason: str  # the figures it was decided on


def decide(card: dict[str, Any], *, margin: float, forced: bool = False) -> Decision:
    """Adopt when `forced` (--adopt), or when the candidate's held-out fidelity with the
    world-state layer off beats the base's by at least `margin` and its well-formed rate
    does not drop."""
    off = card["evaluation"]["state_layer_off"]
    fidelity, well_formed = off["fidelity"], off["well_formed_rate"]
    figures = (
        f"held-out fidelity: base {_figure(fidelity['base'])}, candidate {_figure(fidelity['candidate'])}; "
        f"well-formed: base {_figure(well_formed['base'])}, candidate {_figure(well_formed['candidate'])}"
    )
    if forced:
        return Decision(True, f"adopted on --adopt ({figures})")
    if None in (fidelity["base"], fidelity["candidate"], well_formed["base"], well_formed["candidate"]):
        return Decision(False, f"not adopted: the evaluation has no figures ({figures})")
    gain = fidelity["candidate"] - fidelity["base"]
    if gain < margin - 1e-9:
        return Decision(False, f"not adopted: fidelity gained {gain:+.3f}, less than the margin {margin} ({figures})")
    if well_formed["candidate"] < well_formed["base"]:
        return Decision(False, f"not adopted: the well-formed rate dropped ({figures})")
    return Decision(True, f"adopted: fidelity gained {gain:+.3f}, at least the margin {margin} ({figures})")


def headline(card: dict[str, Any]) -> dict[str, Any]:
    """The card's figures kept with the adoption and its history entry (the run folder
    may be gone later): held-out fidelity and well-formed rate with the world-state
    layer off, base and candidate; the held-out calls; the data it was trained on."""
    evaluation, data = card.get("evaluation") or {}, card.get("data") or {}
    off = evaluation.get("state_layer_off") or {}
    return {
        "fidelity": off.get("fidelity"),
        "well_formed_rate": off.get("well_formed_rate"),
        "held_out": evaluation.get("held_out"),
        "data": {
            "source": data.get("source"),
            "records_read": data.get("records_read"),
            "examples": data.get("examples"),
        },
        "base_model": (card.get("base_model") or {}).get("file"),
    }


def refuse_served(cfg: Config) -> None:
    if cfg.world_model.engine != "llama":
        raise AdoptionRefused(
            f"a served world model (engine: {cfg.world_model.engine}) loads its own adapters and models: "
            "adoption swaps the in-process GGUF model (engine: llama) only"
        )


def adopt_run(cfg: Config, out: Path) -> tuple[Adoption, dict[str, Any]]:
    """Adopt the candidate of the evaluated run in `out`; returns the adoption and the
    card (status `adopted`, `adoption.adopted`: the time, `previous`: the adoption it replaced)."""
    refuse_served(cfg)
    card = read_card(out)
    if card.get("status") not in ("evaluated", "adopted", "reverted"):
        raise AdoptionRefused(f"the run in {out} is not evaluated yet (status: {card.get('status')})")
    candidate = card["candidate"]
    path = out / str(candidate["file"])
    digest = sha256_of(path)
    if digest is None:
        raise AdoptionRefused(f"the candidate {path} is missing")
    if candidate["kind"] == "adapter" and card["base_model"]["sha256"] != sha256_of(cfg.model_path):
        raise AdoptionRefused(
            f"the adapter was trained on {card['base_model']['path']}, not on the configured {cfg.model_path}"
        )
    adoption = Adoption(
        digest=digest,
        kind=candidate["kind"],
        file=path.name,
        run=str(out.resolve()),
        adopted_at=now(),
        figures=headline(card),
    )
    adoption = asyncio.run(_in_store(cfg, lambda adopted: adopted.adopt(adoption, path.read_bytes())))
    previous = adoption.previous.describe() if adoption.previous else None
    card |= {
        "status": "adopted",
        "adoption": {**card["adoption"], "adopted": adoption.adopted_at, "previous": previous, "reverted": None},
    }
    write_card(card, out)
    return adoption, card


def revert(cfg: Config) -> Adoption | None:
    """Restore the adoption before the current one (None: the config's own model), and
    mark the reverted run's card (status `reverted`, `adoption.reverted`: the time) when
    its folder is still there."""
    refuse_served(cfg)

    async def undo(adopted: Any) -> tuple[Adoption | None, dict[str, Any]]:
        restored = await adopted.revert()
        return restored, (await adopted.history())[-1]  # the revert's own entry: what it undid

    restored, undone = asyncio.run(_in_store(cfg, undo))
    mark_reverted(Path(undone["run"]), undone["digest"])
    return restored


def mark_reverted(out: Path, digest: str) -> None:
    """The card in `out` says its candidate is no longer adopted — if the card is still
    there and still describes the reverted file (the run may have been redone since)."""
    try:
        card = read_card(out)
    except (OSError, ValueError):
        return  # the run folder is gone or was never a run: the history keeps the revert
    if (card.get("candidate") or {}).get("sha256") != digest:
        return
    card |= {"status": "reverted", "adoption": {**card["adoption"], "reverted": now()}}
    write_card(card, out)


async def _in_store(cfg: Config, work: Any) -> Any:
    location = cfg.store_location
    store = location.open_store()  # opened by the adoption when it needs the store (Redis)
    try:
        return await work(location.shared_state(store).adopted_world_model())
    finally:
        await store.aclose()


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"
