"""The text space of `simroute.Env`'s observations and actions.

gymnasium's `Text` space holds strings over a finite charset: `contains` checks every
character against it, and `sample` draws from it with a length up to `max_length`. An
episode's observation is JSON of whatever a tool answered (any unicode: CJK, emoji,
control characters escaped or not), so no finite charset admits every observation;
and a charset of all of unicode (1.1 million characters) makes every `sample` build
arrays of that size. `AnyText` separates the two roles:

- membership: any `str` whose length is within bounds, whatever its characters;
- sampling: gymnasium's own `Text.sample` over a small charset (printable ASCII and a
  few non-ASCII characters), with a length drawn up to `sample_max_length` unless the
  caller's mask names one — so a space whose `max_length` admits any observation
  does not sample strings of millions of characters.

`character_set` is therefore the sampling charset, not a limit. Flattening to a numpy
vector (`is_np_flattenable`) needs every character's index in the charset: it is off.

The default bound, `DEFAULT_MAX_LENGTH` (65,536 characters), is what gymnasium's vector
environments hold per environment in shared memory (`simroute/shared_text.py` stores
code points, not charset indices); `simroute.Env` cuts a longer observation to it and
says so in `info`. A space made with a larger bound (up to `UNBOUNDED`) still admits
longer strings; an `AsyncVectorEnv` over it needs `shared_memory=False`.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium.spaces import Text
from numpy.typing import NDArray

# Longer than any observation a tool can answer (MCP messages are far smaller): a
# space that admits everything, when shared memory is not used.
UNBOUNDED = 2**31 - 1
# The default bound: 256 KiB of shared memory per environment, far above a tool's usual answer.
DEFAULT_MAX_LENGTH = 65_536
SAMPLE_CHARSET = string.printable + "éßΩж中文😀"
SAMPLE_MAX_LENGTH = 64

Mask = tuple[int | None, NDArray[Any] | None]


class AnyText(Text):
    """Strings of any characters, `min_length` to `max_length` long (see the module doc)."""

    def __init__(
        self,
        max_length: int = DEFAULT_MAX_LENGTH,
        *,
        min_length: int = 0,
        sample_charset: str = SAMPLE_CHARSET,
        sample_max_length: int = SAMPLE_MAX_LENGTH,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(max_length, min_length=min_length, charset=sample_charset, seed=seed)
        self.sample_max_length = max(self.min_length, min(self.max_length, sample_max_length))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Mask | None = None, probability: Mask | None = None) -> str:
        if mask is not None and probability is not None:
            return super().sample(mask=mask, probability=probability)  # gymnasium's error for asking both
        given = mask if mask is not None else probability
        if given is None or given[0] is None:
            length = int(self.np_random.integers(self.min_length, self.sample_max_length + 1))
            chars = given[1] if given is not None else None
            if probability is not None:
                probability = (length, chars)
            else:
                mask = (length, chars)
        return super().sample(mask=mask, probability=probability)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return (
            f"AnyText({self.min_length}, {self.max_length}, sampled from {self.characters!r} up to "
            f"{self.sample_max_length})"
        )

    def __eq__(self, other: object, /) -> bool:
        return (
            isinstance(other, AnyText) and super().__eq__(other) and self.sample_max_length == other.sample_max_length
        )
