"""What the learned router knows about a call before it runs, as hashed features.

Everything here is computed from the call, the safety gate's verdict, the
session's step and the per-tool statistics held in memory (refreshed off the
decision path): no I/O. Features are named tokens with a value (1.0 for a
present token, a scaled number otherwise); the model sees them through a
signed hash into `2**n_bits` columns. The hash is BLAKE2b, so an index means
the same in the process that trained a model and in every router that loads it
(Python's `hash()` is salted per process).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

N_BITS = 18  # 262,144 columns: collisions are rare for the tokens one deployment sees
MAX_KEYS = 16  # argument keys per call
MAX_VALUES = 24  # argument values per call
MAX_WORDS = 8  # words per string value
MAX_VALUE_CHARS = 64
_WORD = re.compile(r"[a-z0-9_]+")

Feature = tuple[str, float]


@dataclass(slots=True)
class ToolStats:
    """What the labels so far say about one tool (channel, server, tool)."""

    sim_labels: int = 0
    sim_ok: int = 0
    sim_divergence: float = 0.0  # sum
    replay_labels: int = 0
    replay_ok: int = 0
    replay_divergence: float = 0.0  # sum
    masked: int = 0  # noise paths masked in its shadow comparisons (sum)
    real_latency: float = 0.0  # seconds, sum over `real_answers`
    real_answers: int = 0
    sim_latency: float = 0.0  # seconds, sum over `sim_answers`
    sim_answers: int = 0
    agreeing_sessions: int = 0  # distinct sessions whose real answers agreed with what replay serves

    def labels(self, route: str) -> int:
        return self.sim_labels if route == "sim" else self.replay_labels

    def successes(self, route: str) -> int:
        return self.sim_ok if route == "sim" else self.replay_ok

    def mean_latency(self, route: str) -> float | None:
        if route == "real":
            return self.real_latency / self.real_answers if self.real_answers else None
        if route == "sim":
            return self.sim_latency / self.sim_answers if self.sim_answers else None
        return 0.0  # replay answers from the store

    def add(self, route: str, *, acceptable: bool, divergence: float, masked: int = 0) -> None:
        if route == "sim":
            self.sim_labels += 1
            self.sim_ok += acceptable
            self.sim_divergence += divergence
            self.masked += masked
        else:
            self.replay_labels += 1
            self.replay_ok += acceptable
            self.replay_divergence += divergence


@dataclass(frozen=True, slots=True)
class CallFacts:
    """The facts about one call the features are made of (from a live call or a record)."""

    channel: str
    server: str
    tool: str
    arguments: Mapping[str, Any]
    safety: str | None
    step: int
    stats: ToolStats | None = field(default=None, compare=False)
    # The sub-provenance the sim side answers with (`state`, `model`, …; subs.py) and the
    # statistics of the tool's answers of that sub; None: not known (a replay label).
    sub: str | None = None
    sub_stats: ToolStats | None = field(default=None, compare=False)


def tool_key(channel: str, server: str, tool: str) -> str:
    return f"{channel}\x1f{server}\x1f{tool}"


def call_features(facts: CallFacts) -> list[Feature]:
    """The named features of a call (see module doc): its static part (the call
    itself) and its dynamic part (the session step, the tool's statistics)."""
    return [
        *static_features(facts.channel, facts.server, facts.tool, facts.arguments, facts.safety),
        *dynamic_features(facts.step, facts.stats),
        *sub_features(facts.server, facts.tool, facts.sub, facts.sub_stats),
    ]


def static_features(
    channel: str, server: str, tool_name: str, arguments: Mapping[str, Any], safety: str | None
) -> list[Feature]:
    """The features of the call itself: the same every time the same call comes with the
    same safety class (the decision path caches their score per call)."""
    tool = f"{server}/{tool_name}"
    out: list[Feature] = [
        ("bias", 1.0),
        (f"channel={channel}", 1.0),
        (f"server={channel}/{server}", 1.0),
        (f"tool={tool}", 1.0),
        (f"safety={safety or 'none'}", 1.0),
        (f"tool={tool}|safety={safety or 'none'}", 1.0),
    ]
    for key in sorted(arguments)[:MAX_KEYS]:
        out.append((f"key={tool}:{key}", 1.0))
    for path, value in _values(arguments):
        text = _text(value)[:MAX_VALUE_CHARS]
        out.append((f"arg={tool}:{path}={text}", 1.0))
        if isinstance(value, str):
            for word in _WORD.findall(value.lower())[:MAX_WORDS]:
                out.append((f"word={tool}:{path}:{word}", 1.0))
    return out


def dynamic_features(step: int, stats: ToolStats | None) -> list[Feature]:
    """The features that change between calls: the session step and the tool's statistics."""
    out: list[Feature] = [
        (f"step_bucket={min(max(step, 0).bit_length(), 12)}", 1.0),
        ("log_step", math.log1p(max(step, 0)) / 5.0),
    ]
    if stats is not None:
        if stats.sim_labels:
            out.append(("sim_mean_divergence", stats.sim_divergence / stats.sim_labels))
            out.append(("sim_ok_rate", stats.sim_ok / stats.sim_labels))
            out.append(("noise_level", min(stats.masked / stats.sim_labels, 5.0) / 5.0))
        if stats.replay_labels:
            out.append(("replay_mean_divergence", stats.replay_divergence / stats.replay_labels))
            out.append(("replay_ok_rate", stats.replay_ok / stats.replay_labels))
        out.append(("log_sim_labels", math.log1p(stats.sim_labels) / 5.0))
        out.append(("log_replay_labels", math.log1p(stats.replay_labels) / 5.0))
    return out


def sub_features(server: str, tool_name: str, sub: str | None, stats: ToolStats | None) -> list[Feature]:
    """The sim route's features of the sub-provenance its answer comes with (subs.py) and of
    the labels of the tool's answers of that sub; none without a sub."""
    if sub is None:
        return []
    out: list[Feature] = [(f"sub={sub}", 1.0), (f"tool={server}/{tool_name}|sub={sub}", 1.0)]
    if stats is not None and stats.sim_labels:
        out.append((f"sub={sub}|sim_ok_rate", stats.sim_ok / stats.sim_labels))
        out.append((f"sub={sub}|sim_mean_divergence", stats.sim_divergence / stats.sim_labels))
        out.append((f"sub={sub}|log_sim_labels", math.log1p(stats.sim_labels) / 5.0))
    return out


def _values(arguments: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """(dotted path, scalar) of the arguments, two levels deep, at most MAX_VALUES."""
    count = 0
    for key in sorted(arguments):
        value = arguments[key]
        items = (
            [(f"{key}.{k}", v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))]
            if isinstance(value, Mapping)
            else [(str(key), value)]
        )
        for path, item in items:
            if isinstance(item, Mapping | list):
                item = f"<{type(item).__name__}:{len(item)}>"
            yield path, item
            count += 1
            if count >= MAX_VALUES:
                return


def _text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    return str(value)


@lru_cache(maxsize=1 << 16)
def feature_index(name: str, n_bits: int = N_BITS) -> tuple[int, float]:
    """(column, sign) of a feature name: a signed hash, stable across processes."""
    digest = int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest(), "little")
    return digest & ((1 << n_bits) - 1), (1.0 if digest >> 63 else -1.0)


# name -> (column, sign) per hash width: a plain dict lookup on the decision path
# (cleared when it grows past _CACHE_LIMIT names, e.g. from ever-new argument values).
_COLUMNS: dict[int, dict[str, tuple[int, float]]] = {}
_CACHE_LIMIT = 1 << 17


def hashed(features: Iterable[Feature], n_bits: int = N_BITS) -> dict[int, float]:
    """{column: value} of named features (colliding features add up)."""
    cache = _COLUMNS.get(n_bits)
    if cache is None or len(cache) > _CACHE_LIMIT:
        cache = _COLUMNS[n_bits] = {}
    out: dict[int, float] = {}
    for name, value in features:
        found = cache.get(name)
        if found is None:
            found = cache[name] = feature_index(name, n_bits)
        column = found[0]
        out[column] = out.get(column, 0.0) + found[1] * value
    return out


def feature_names() -> list[str]:
    """The feature families, for the model card."""
    return [
        "channel",
        "server",
        "tool",
        "safety class",
        "tool x safety class",
        "session step (bucket, log)",
        "argument keys",
        "argument values",
        "argument words",
        "per-tool sim divergence, ok rate, noise level",
        "per-tool replay divergence, ok rate",
        "per-tool label counts (log)",
        "sim answers' sub-provenance, x tool; its ok rate, divergence, label count (log)",
    ]
