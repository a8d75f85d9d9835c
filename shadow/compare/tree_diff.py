"""JSON values compared structure first, then values by type.

Every leaf is one unit of comparison. A key or element only one side has
(counting its leaves) or a changed type is a `structure` difference; values of
the same type are compared by type: numbers within a relative tolerance,
datetimes by aspect, ids/hashes/uuids by shape, text by lines, fields whose
name says they change on every call (request ids, durations, sizes) by the
built-in detectors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from shadow.compare.difference import Difference, compare_words, noise_key
from shadow.compare.text_diff import compare_text
from shadow.compare.value_shapes import key_noise

# A string with a line break or longer than this is text, compared by lines.
_TEXT_CHARS = 120
_SHOWN_CHARS = 200


@dataclass(slots=True)
class TreeDiff:
    """Options and results of one comparison of two JSON values."""

    rel_tol: float = 1e-9
    sample: int | None = None  # compare at most this many elements of a list or values of an object
    missing_kind: str = "structure"  # what a key only one side has is (headers: content)
    units: float = 0.0
    found: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def compare(self, real: Any, sim: Any, path: str = "$", key: str = "") -> None:
        if type(real) is type(sim) and real == sim:  # equal (sub)trees: counted, not walked
            self.units += leaf_count(real, self.sample) if isinstance(real, (dict, list)) else 1
            return
        if isinstance(real, dict) and isinstance(sim, dict):
            self._objects(real, sim, path)
        elif isinstance(real, list) and isinstance(sim, list):
            self._lists(real, sim, path)
        elif _type(real) != _type(sim):
            amount = float(max(leaf_count(real, self.sample), leaf_count(sim, self.sample)))
            self.units += amount
            self.found.append(Difference(path, "structure", shown(real), shown(sim), amount, noise_key(path)))
        else:
            self.units += 1
            if real != sim:
                self._values(real, sim, path, key)

    def _objects(self, real: dict[str, Any], sim: dict[str, Any], path: str) -> None:
        if not real and not sim:
            self.units += 1
            return
        common = [name for name in real if name in sim]
        picked = _sampled(common, self.sample, self.notes, path)
        # Sampled common keys stand for all of them: keys on one side count at the same scale.
        scale = len(picked) / len(common) if common else 1.0
        for name, value, side in [(k, v, "real") for k, v in real.items() if k not in sim] + [
            (k, v, "sim") for k, v in sim.items() if k not in real
        ]:
            amount = leaf_count(value, self.sample) * scale
            self.units += amount
            child = f"{path}.{name}"
            real_value, sim_value = (shown(value), None) if side == "real" else (None, shown(value))
            self.found.append(Difference(child, self.missing_kind, real_value, sim_value, amount, noise_key(child)))
        for name in picked:
            self.compare(real[name], sim[name], f"{path}.{name}", name)

    def _lists(self, real: list[Any], sim: list[Any], path: str) -> None:
        if not real and not sim:
            self.units += 1
            return
        shared = min(len(real), len(sim))
        longer, side = (real, "real") if len(real) > len(sim) else (sim, "sim")
        picked = _sampled(range(shared), self.sample, self.notes, path)
        extra = _sampled(range(shared, len(longer)), self.sample, self.notes, path)
        # Each side of the sample stands for its share of the list: scale the extra elements to match.
        scale = (len(longer) - shared) / len(extra) * (len(picked) / shared if shared else 1.0) if extra else 0.0
        for index in extra:
            amount = leaf_count(longer[index], self.sample) * scale
            self.units += amount
            real_value, sim_value = (shown(longer[index]), None) if side == "real" else (None, shown(longer[index]))
            self.found.append(
                Difference(
                    f"{path}[{index}]", "structure", real_value, sim_value, amount, noise_key(f"{path}[{index}]")
                )
            )
        for index in picked:
            self.compare(real[index], sim[index], f"{path}[{index}]")

    def _values(self, real: Any, sim: Any, path: str, key: str) -> None:
        detector = key_noise(key) if key else None
        if isinstance(real, bool) or real is None:
            self.found.append(Difference(path, "content", real, sim, 1.0, noise_key(path)))
        elif isinstance(real, (int, float)):
            if not math.isclose(real, sim, rel_tol=self.rel_tol):
                self.found.append(Difference(path, "content", real, sim, 1.0, noise_key(path), detector))
        elif "\n" in real or "\n" in sim or max(len(real), len(sim)) > _TEXT_CHARS:
            found, note = compare_text(real, sim, path, sampled=self.sample is not None)
            self.found += found
            if note:
                self.notes.append(note)
        else:
            for item in compare_words(real, sim, path, amount=1.0):
                # A field named like a request id or a timestamp is noise as a whole value;
                # a datetime's aspects (offset, format) are compared whatever its name.
                if detector and item.detector is None and item.kind == "content" and "#" not in item.noise_key:
                    item = Difference(item.path, item.kind, item.real, item.sim, item.amount, item.noise_key, detector)
                self.found.append(item)


_TYPES = {bool: "boolean", int: "number", float: "number", type(None): "null"}


def _type(value: Any) -> str:
    kind = type(value)
    return _TYPES.get(kind) or kind.__name__


def _sampled(items: Any, sample: int | None, notes: list[str], path: str) -> Any:
    """All of `items`, or with `sample` an evenly spaced sample of them (first and last kept)."""
    items = list(items)
    if sample is None or len(items) <= sample:
        return items
    step = (len(items) - 1) / (sample - 1)
    picked = [items[index] for index in sorted({round(i * step) for i in range(sample)})]
    notes.append(f"{path}: {len(picked)} of {len(items)} compared")
    return picked


def leaf_count(value: Any, sample: int | None = None) -> int:
    """How many leaves `value` has (estimated from a sample when `sample` is given)."""
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, list):
        children = value
    else:
        return 1
    if not children:
        return 1
    if sample is not None and len(children) > sample:
        step = len(children) / sample
        counted = sum(leaf_count(children[int(i * step)], sample) for i in range(sample))
        return round(counted * len(children) / sample)
    return sum(leaf_count(child, sample) for child in children)


def shown(value: Any) -> Any:
    """A value as evidence shows it: scalars as they are, long strings and containers abbreviated."""
    if isinstance(value, str) and len(value) > _SHOWN_CHARS:
        return value[:_SHOWN_CHARS] + f"… ({len(value)} characters)"
    if isinstance(value, dict):
        return f"{{object: {len(value)} keys}}" if len(value) > 8 or leaf_count(value, 8) > 8 else value
    if isinstance(value, list):
        return f"[list: {len(value)} items]" if len(value) > 8 or leaf_count(value, 8) > 8 else value
    return value
