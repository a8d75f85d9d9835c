"""`AnyText` in gymnasium's shared memory (`AsyncVectorEnv(shared_memory=True)`, its default).

gymnasium keeps a `Text` observation in shared memory as indices into the space's
charset, so a character outside it (`ü` in `{"city": "Zürich"}`) raises `KeyError`;
and it reads the memory once, when the vector environment is made, into a tuple of
strings that no later write changes. Its three functions are `functools.singledispatch`
(gymnasium/vector/utils/shared_memory.py), so `AnyText` registers its own:

- each environment's slot holds the text's length and then its code points (int32,
  `max_length + 1` of them): any unicode, lone surrogates included;
- the vector environment's observations are `SharedTexts`, a sequence that decodes the
  slots when read, so each step's writes show; `copy=True` (the default) hands the
  caller a plain tuple of strings (`deepcopy` of it).

A slot is `max_length` code points, so the bound is what memory costs (4 bytes a code
point per environment): `AnyText`'s default, 65,536, takes 256 KiB an environment; a
space whose bound is above `SHARED_MEMORY_MAX_LENGTH` is refused, pointing to
`shared_memory=False`, rather than allocating gigabytes. `simroute.Env` cuts a longer
observation to its space (with a marker in `info`), so what it writes always fits.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator, Sequence
from ctypes import c_int32
from multiprocessing.sharedctypes import SynchronizedArray
from types import ModuleType
from typing import Any, overload

import numpy as np
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

from simroute.spaces import AnyText

# 16 Mi code points (64 MiB) per environment: above this, shared memory is the wrong tool.
SHARED_MEMORY_MAX_LENGTH = 2**24
_CODEC = "utf-32-le"


class SharedTexts(Sequence[str]):
    """The texts of `n` environments, read from shared memory when asked."""

    def __init__(self, slots: np.ndarray) -> None:
        self._slots = slots  # shape (n, max_length + 1): length, then code points

    def __len__(self) -> int:
        return len(self._slots)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        slot = self._slots[index]
        length = int(slot[0])
        return slot[1 : 1 + length].astype("<u4").tobytes().decode(_CODEC, "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)  # what a caller keeps: the texts now, not the live memory

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@create_shared_memory.register(AnyText)
def _create(space: AnyText, n: int = 1, ctx: ModuleType = mp) -> SynchronizedArray[c_int32]:
    if space.max_length > SHARED_MEMORY_MAX_LENGTH:
        raise CustomSpaceError(
            f"{space!r}: a shared-memory slot holds max_length code points and this bound is above "
            f"{SHARED_MEMORY_MAX_LENGTH:,}; give the space a smaller max_length (AnyText's default is 65,536)"
        )
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


@read_from_shared_memory.register(AnyText)
def _read(space: AnyText, shared_memory: SynchronizedArray[c_int32], n: int = 1) -> SharedTexts:
    slots = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length + 1))
    return SharedTexts(slots)


@write_to_shared_memory.register(AnyText)
def _write(space: AnyText, index: int, value: str, shared_memory: SynchronizedArray[c_int32]) -> None:
    if not isinstance(value, str) or len(value) > space.max_length:
        length = len(value) if isinstance(value, str) else type(value).__name__
        raise ValueError(f"{space!r} cannot hold an observation of {length} characters in shared memory")
    size = space.max_length + 1
    slot = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * size : (index + 1) * size]
    points = np.frombuffer(value.encode(_CODEC, "surrogatepass"), dtype="<u4")
    slot[1 : 1 + len(points)] = points
    slot[0] = len(points)
