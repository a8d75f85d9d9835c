"""`AnyText` in gymnasium's shared memory: any unicode round-trips by code point, the
vector environment's view shows each later write, and a bound too large for shared
memory is refused at once instead of allocating gigabytes."""

import copy
import multiprocessing
import time

import pytest
from gymnasium.error import CustomSpaceError
from gymnasium.spaces import Text
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

from simroute import AnyText
from simroute.spaces import DEFAULT_MAX_LENGTH, UNBOUNDED

TEXTS = ['{"city": "Zürich"}', "Zürich 中文 😀", "", "a lone surrogate \ud800 and \U0010ffff", "x" * 64]


def test_gymnasiums_own_text_memory_refuses_a_character_outside_the_charset():
    # Why AnyText has its own: the plain Text layout stores charset indices.
    space = Text(64)
    memory = create_shared_memory(space, n=1)
    with pytest.raises(KeyError):
        write_to_shared_memory(space, 0, '{"city": "Zürich"}', memory)


@pytest.mark.parametrize("text", TEXTS)
def test_any_text_round_trips_through_shared_memory(text):
    space = AnyText(64)
    memory = create_shared_memory(space, n=2)
    write_to_shared_memory(space, 1, text, memory)
    assert tuple(read_from_shared_memory(space, memory, n=2)) == ("", text)


def test_the_view_shows_later_writes_and_a_copy_is_a_tuple_of_strings():
    space = AnyText(32)
    memory = create_shared_memory(space, n=2, ctx=multiprocessing.get_context())
    view = read_from_shared_memory(space, memory, n=2)  # AsyncVectorEnv reads once, when it is made
    write_to_shared_memory(space, 0, "Zürich 中文 😀", memory)
    write_to_shared_memory(space, 1, "long text first", memory)
    write_to_shared_memory(space, 1, "short", memory)  # a shorter text after a longer one: its length, not leftovers
    assert view == ("Zürich 中文 😀", "short") and view[0] == "Zürich 中文 😀" and view[-1:] == ("short",)
    kept = copy.deepcopy(view)
    assert type(kept) is tuple and kept == ("Zürich 中文 😀", "short")


def test_the_default_bound_is_documented_and_cheap_and_an_unbounded_space_is_refused_quickly():
    assert AnyText().max_length == DEFAULT_MAX_LENGTH == 65_536
    started = time.perf_counter()
    memory = create_shared_memory(AnyText(), n=1)
    assert len(memory) == DEFAULT_MAX_LENGTH + 1 and time.perf_counter() - started < 5
    with pytest.raises(CustomSpaceError, match="smaller max_length"):
        create_shared_memory(AnyText(UNBOUNDED), n=1)


def test_a_text_longer_than_the_bound_is_refused_not_cut_silently():
    space = AnyText(4)
    memory = create_shared_memory(space, n=1)
    with pytest.raises(ValueError, match="5 characters"):
        write_to_shared_memory(space, 0, "Zürich"[:5], memory)
