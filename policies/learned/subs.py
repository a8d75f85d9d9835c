"""The learned router per sub-provenance: how the simulated side answers a call
(`state`: the session's world state, `replay-aligned`, `model`, `model+state`;
records/sub_provenance.py) says more about whether the answer is faithful than the
tool alone. A shell tool's `cat` answered from state is exact; the same tool's
`python script.py`, written by the model, is not; an MCP tool's aligned replays may
be faithful while its model answers are not.

- Labels: a sim label carries the sub its shadow side was answered with (read from
  the record), and per (tool, sub) statistics are kept beside the per-tool ones.
- At decision time the router needs the sub the sim side *would* answer with, with no
  I/O: the `expected_sub` hook's answer when one is given (the runtime gives one for
  the shell: whether the world-state executor runs every program of the line,
  router/runtime/expected_sub.py), else the sub most of the tool's simulated answers
  came with so far (`usual`).
- That sub selects the per-(tool, sub) estimate when it has labels (else the per-tool
  one, as before), and its features (features.py `sub_features`) reach the sim route's
  classifier.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from policies.learned.features import ToolStats
from policies.learned.prior import fit_prior
from records.sub_provenance import NO_SUB

SUB_SEP = "\x1e"  # between a tool key and a sub in the per-sub statistics' keys
MAX_SUBS_PER_TOOL = 8  # subs counted per tool (simroute sets four): a foreign record cannot grow it


def sub_key(tool_key: str, sub: str) -> str:
    return f"{tool_key}{SUB_SEP}{sub}"


def named(sub: object) -> str | None:
    """A sub that says something (None for none, or a value of another type)."""
    return sub if isinstance(sub, str) and sub and sub != NO_SUB else None


class SubEvidence:
    """Per (tool, sub): the sim labels' statistics, and how many of the tool's simulated
    answers came with each sub (served on the sim route or as a shadow side)."""

    def __init__(self) -> None:
        self.stats: dict[str, ToolStats] = {}
        self.answers: dict[str, Counter[str]] = {}

    def before(self, key: str, sub: str | None) -> ToolStats | None:
        """The (tool, sub) statistics as they stand before a label (a copy), None without a sub."""
        if sub is None:
            return None
        found = self.stats.get(sub_key(key, sub))
        return replace(found) if found is not None else ToolStats()

    def label(self, key: str, sub: str | None, *, acceptable: bool, divergence: float) -> None:
        if sub is not None and self.answered(key, sub):
            self.stats.setdefault(sub_key(key, sub), ToolStats()).add(
                "sim", acceptable=acceptable, divergence=divergence
            )

    def answered(self, key: str, sub: str | None) -> bool:
        """Count one simulated answer of the tool with `sub`; False when the tool already has
        `MAX_SUBS_PER_TOOL` other subs (not counted)."""
        if sub is None:
            return False
        counts = self.answers.setdefault(key, Counter())
        if sub not in counts and len(counts) >= MAX_SUBS_PER_TOOL:
            return False
        counts[sub] += 1
        return True

    def usual(self) -> dict[str, str]:
        """Per tool key, the sub most of its simulated answers came with."""
        return {key: counts.most_common(1)[0][0] for key, counts in self.answers.items() if counts}


def sub_priors(stats: dict[str, ToolStats], *, strength: float) -> dict[str, float]:
    """The few-label estimate of P(acceptable) of each (tool, sub)'s sim answers, under a
    prior fitted per channel and sub (prior.py): `state` answers of one shell tool lend
    strength to another's, never to `model` answers."""
    by_kind: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    for key, s in stats.items():
        kind = (key.split("\x1f", 1)[0], key.rsplit(SUB_SEP, 1)[-1])
        by_kind.setdefault(kind, []).append((key, s.sim_ok, s.sim_labels - s.sim_ok))
    out: dict[str, float] = {}
    for tools in by_kind.values():
        prior = fit_prior(((ok, bad) for _, ok, bad in tools), strength=strength)
        for key, ok, bad in tools:
            out[key] = prior.mean(ok, bad)
    return out
