"""One difference between a real and a simulated observation, and the comparison
of single values (datetimes, shaped tokens) that the tree and text diffs share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from shadow.compare.value_shapes import Moment, parse_moment, token_shape

# The kinds of difference, most severe first; a comparison's kind is the most
# severe of its unmasked differences.
KINDS = ("status", "structure", "format", "content")
_INDEX = re.compile(r"\[\d+\]")


@dataclass(frozen=True, slots=True)
class Difference:
    path: str  # where, with list indices and line numbers: `$.items[3].id`, `$.screen:12`
    kind: str  # one of KINDS
    real: Any
    sim: Any
    amount: float  # how many compared units disagree here (a missing subtree counts its leaves)
    noise_key: str  # what the noise model learns about: the path generalised, plus an aspect (`#offset`)
    detector: str | None = None  # the built-in noise detector that calls this noise, if any


def noise_key(path: str) -> str:
    """A path with list indices generalised: `$.items[3].id` -> `$.items[*].id`
    (a noisy field is noisy in every element)."""
    return _INDEX.sub("[*]", path)


def compare_moments(
    real: Moment, sim: Moment, path: str, real_text: str, sim_text: str, *, amount: float = 0.5
) -> list[Difference]:
    """Datetimes compared by aspect: the instant is noise (built-in detector), the
    UTC offset (content) and the written format (format) are not."""
    key = noise_key(path)
    found = []
    if real.format != sim.format:
        found.append(Difference(f"{path}#format", "format", real_text, sim_text, amount, f"{key}#format"))
    if real.offset_minutes != sim.offset_minutes:
        found.append(Difference(f"{path}#offset", "content", real_text, sim_text, amount, f"{key}#offset"))
    if real.instant != sim.instant:
        found.append(
            Difference(
                f"{path}#instant", "content", real_text, sim_text, amount, f"{key}#instant", detector="timestamp"
            )
        )
    return found


def compare_words(real: str, sim: str, path: str, *, amount: float, key: str | None = None) -> list[Difference]:
    """Two differing words (or short strings): datetimes by aspect, ids, hashes,
    uuids, durations and sizes by shape (same shape: built-in noise; another
    shape: a format difference), anything else a content difference."""
    key = key or noise_key(path)
    real_moment, sim_moment = parse_moment(real), parse_moment(sim)
    if real_moment and sim_moment:
        found = compare_moments(real_moment, sim_moment, path, real, sim)
        # One word's aspects share its amount; the caller's key (a line's word position) is kept.
        return [
            Difference(
                d.path,
                d.kind,
                d.real,
                d.sim,
                amount / len(found),
                key + d.noise_key[len(noise_key(path)) :],
                d.detector,
            )
            for d in found
        ]
    real_shape, sim_shape = token_shape(real), token_shape(sim)
    if real_shape and real_shape == sim_shape:
        return [Difference(path, "content", real, sim, amount, key, detector=_detector(real_shape))]
    if (real_shape and sim_shape) or (real_moment or sim_moment):
        # Both shaped, differently (a uuid where a hash was), or a datetime written as something else.
        return [Difference(path, "format", real, sim, amount / 2, key)]
    if real.strip().casefold() == sim.strip().casefold():
        return [Difference(path, "format", real, sim, amount / 2, key)]
    return [Difference(path, "content", real, sim, amount, key)]


def _detector(shape: str) -> str:
    return shape.rstrip("0123456789")  # hash40 -> hash, id24 -> id
