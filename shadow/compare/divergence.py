"""How far a simulated observation is from the real one.

`compare(real, sim, channel=..., noise=...)` canonicalises both sides for their
channel (shadow/compare/observation_forms.py), compares the outcome first (success vs
error, HTTP status class, exit code: a `status` difference scores 1), then the
sections as JSON trees (structure, then values by type). Differences the noise
mask calls noise (built-in detectors, paths the noise model learned) are
listed as masked and do not count. The score is the weighted mean, over the
sections, of the share of compared units that disagree: 0 (same, or noise
only) to 1 (unrelated); the kind is the most severe unmasked difference.

Over the size bound, the sides are compared by digest and sampled paths, and
the evidence says so.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from calls import Observation
from shadow.compare.difference import KINDS, Difference
from shadow.compare.observation_forms import OUTCOME_WEIGHT, SECTION_WEIGHTS, canonical, channel_of
from shadow.compare.tree_diff import TreeDiff, shown

SIZE_BOUND = 256 * 1024  # characters of observation text; over it, comparison samples
SAMPLE = 64  # elements per list / values per object compared over the bound
MAX_EVIDENCE = 20  # divergent entries kept in the evidence (the rest counted in the note)
MAX_MASKED = 50


@dataclass(frozen=True, slots=True)
class Noise:
    """What a comparison treats as noise: the built-in detectors (timestamps, uuids,
    request ids, durations, sizes), and the paths the noise model learned for this tool."""

    builtin: bool = True
    paths: frozenset[str] = frozenset()

    def masks(self, difference: Difference) -> bool:
        if difference.kind == "status":
            return False
        return (self.builtin and difference.detector is not None) or difference.noise_key in self.paths


BUILTIN_NOISE = Noise()
NO_NOISE = Noise(builtin=False)


@dataclass(frozen=True, slots=True)
class Divergence:
    score: float  # 0 (same, or noise only) .. 1 (unrelated)
    kind: str  # "status" | "structure" | "format" | "content" | "none"
    evidence: dict[str, Any]  # {"divergent": [{path, kind, real, sim}], "masked": [path], "note": str}
    # Every difference found, masked or not (for the noise model and `simroute diff`).
    differences: tuple[Difference, ...] = field(default=(), repr=False, compare=False)


def compare(
    real: Observation, sim: Observation, *, channel: str, noise: Noise | None = None, size_bound: int = SIZE_BOUND
) -> Divergence:
    noise = BUILTIN_NOISE if noise is None else noise
    if real.is_error == sim.is_error and real.structured == sim.structured and real.content == sim.content:
        return Divergence(0.0, "none", {"divergent": [], "masked": [], "note": ""})
    real_form, sim_form = canonical(real, channel), canonical(sim, channel)
    notes = real_form.notes[:1] or sim_form.notes[:1]
    size = max(text_size(real), text_size(sim))
    sample = None
    if size > size_bound:
        sample = SAMPLE
        notes.append(
            f"over the size bound ({size} > {size_bound} characters): digests {_digest(real)} / {_digest(sim)}, "
            "sampled paths compared"
        )
        if real_form.sections == sim_form.sections:
            sample = 0  # the same canonical sections: only the outcome is left to compare

    status, outcome = _outcome(real_form.outcome, sim_form.outcome)
    sections: list[tuple[float, float, list[Difference]]] = []  # (weight, units, differences)
    if outcome or status:
        sections.append((OUTCOME_WEIGHT, float(len(_comparable(real_form.outcome, sim_form.outcome))), outcome))
    if sample != 0:
        sections += _sections(real_form.sections, sim_form.sections, SECTION_WEIGHTS.get(channel, {}), sample, notes)

    everything = status + [d for _, _, found in sections for d in found]
    masked = [d for d in everything if noise.masks(d)]
    divergent = [d for d in everything if not noise.masks(d)]
    if any(d.kind == "status" for d in divergent):
        score = 1.0  # success vs error is the one difference no content can make up for
    else:
        total = sum(weight for weight, _, _ in sections) or 1.0
        score = (
            sum(
                weight * min(1.0, sum(d.amount for d in found if not noise.masks(d)) / units)
                for weight, units, found in sections
            )
            / total
        )
    kind = next((k for k in KINDS if any(d.kind == k for d in divergent)), "none")
    # A divergence too small to show in 4 digits still shows as one (`--divergent` finds it).
    score = 0.0 if kind == "none" else max(round(score, 4), 0.0001)
    return Divergence(score, kind, _evidence(divergent, masked, notes), tuple(everything))


def _sections(
    real: dict[str, Any], sim: dict[str, Any], weights: dict[str, float], sample: int | None, notes: list[str]
) -> list[tuple[float, float, list[Difference]]]:
    """(weight, compared units, differences) per section of the canonical forms."""
    result = []
    for name in sorted(real.keys() | sim.keys()):
        if name not in real or name not in sim:  # e.g. image blocks on one side only
            missing = Difference(
                f"$.{name}", "structure", shown(real.get(name)), shown(sim.get(name)), 1.0, f"$.{name}"
            )
            result.append((weights.get(name, 1.0), 1.0, [missing]))
            continue
        diff = TreeDiff(sample=sample, missing_kind="content" if name == "headers" else "structure")
        diff.compare(real[name], sim[name], f"$.{name}")
        result.append((weights.get(name, 1.0), max(diff.units, 1.0), diff.found))
        notes += diff.notes[:3]
    return result


def divergence(real: Observation, simulated: Observation, *, channel: str | None = None) -> float:
    """The score alone (the channel read from the observations' shape when not given)."""
    return compare(real, simulated, channel=channel or channel_of(real)).score


def _outcome(real: dict[str, Any], sim: dict[str, Any]) -> tuple[list[Difference], list[Difference]]:
    status: list[Difference] = []
    other: list[Difference] = []
    for name in _comparable(real, sim):
        if real[name].value != sim[name].value:
            difference = Difference(f"$.{name}", real[name].kind, real[name].value, sim[name].value, 1.0, f"$.{name}")
            (status if difference.kind == "status" else other).append(difference)
    return status, other


def _comparable(real: dict[str, Any], sim: dict[str, Any]) -> list[str]:
    return [name for name in real if name in sim and real[name].value is not None and sim[name].value is not None]


def text_size(observation: Observation) -> int:
    """Characters of an observation's text (what the size bound counts)."""
    size = sum(len(block.get("text") or "") for block in observation.content)
    if observation.structured is not None and size == 0:
        size = len(json.dumps(observation.structured, default=str))
    elif isinstance(observation.structured, dict) and isinstance(observation.structured.get("body"), str):
        size = max(size, len(observation.structured["body"]))
    return size


def _digest(observation: Observation) -> str:
    """A digest of what the observation says (its text; its structured part when it has no text)."""
    text = observation.text or json.dumps(observation.structured, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _evidence(divergent: list[Difference], masked: list[Difference], notes: list[str]) -> dict[str, Any]:
    ranked = sorted(divergent, key=lambda d: KINDS.index(d.kind))
    shown_items = [
        {"path": d.path, "kind": d.kind, "real": shown(d.real), "sim": shown(d.sim)} for d in ranked[:MAX_EVIDENCE]
    ]
    masked_paths = list(dict.fromkeys(d.path for d in masked))
    if len(ranked) > MAX_EVIDENCE:
        notes = [*notes, f"{len(ranked) - MAX_EVIDENCE} more divergent paths not listed"]
    if len(masked_paths) > MAX_MASKED:
        notes = [*notes, f"{len(masked_paths) - MAX_MASKED} more masked paths not listed"]
    return {"divergent": shown_items, "masked": masked_paths[:MAX_MASKED], "note": "; ".join(notes)}
