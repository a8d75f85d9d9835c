"""simroute.Env's text space admits every observation exactly and still samples; the
pure parts of its actions and refusals."""

import json
import string

import numpy as np
import pytest
from gymnasium.spaces import Text
from gymnasium.utils.passive_env_checker import check_action_space, check_observation_space

from simroute import AnyText, CapacityError, EpisodeError, InvalidRequestError
from simroute.env import as_text, parse_action
from simroute.errors import EpisodeConflictError, EpisodeNotFoundError, episode_error
from simroute.spaces import UNBOUNDED

ODD_TEXTS = [
    "",
    "plain",
    "中文 and emoji 😀🎉, accents éàü, RTL עברית",
    "control \x00\x01\x1b[31m\u2028\u2029 and a lone surrogate \ud800",
    "\U0010ffff" * 3,
]


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_any_string_is_in_the_space(text):
    space = AnyText()
    assert text in space
    observation = as_text({"tool_name": "echo", "result": {"content": [{"type": "text", "text": text}]}})
    assert observation in space and json.loads(observation)["result"]["content"][0]["text"] == text


def test_gymnasiums_own_text_space_refuses_what_anytext_admits():
    # Why AnyText exists: even a printable charset rejects a tool's ordinary unicode answer.
    assert "café 中文" not in Text(1000, charset=string.printable)
    assert "café 中文" in AnyText()


def test_a_large_observation_is_in_the_space_and_bounds_still_hold():
    space = AnyText(UNBOUNDED)  # the default bound is 65,536 (shared memory's size): an unbounded space is asked for
    assert "x" * 5_000_000 in space
    bounded = AnyText(10, min_length=2)
    assert "ab" in bounded and "a" not in bounded and "a" * 11 not in bounded
    assert b"bytes" not in space and None not in space and {"type": "list_tools"} not in space


def test_sampling_works_and_is_seeded():
    space = AnyText(seed=3)
    samples = [space.sample() for _ in range(200)]
    assert all(isinstance(s, str) and s in space and len(s) <= space.sample_max_length for s in samples)
    assert len(set(samples)) > 150  # random, not a constant
    assert any(not s.isascii() for s in samples)  # the sampling charset reaches beyond ASCII
    again = AnyText(seed=3)
    assert [again.sample() for _ in range(200)] == samples


def test_sampling_honours_gymnasiums_masks_and_lengths():
    space = AnyText(seed=1)
    assert len(space.sample(mask=(7, None))) == 7
    only_a = np.zeros(len(space.character_set), dtype=np.int8)
    only_a[space.character_index("a")] = 1
    assert set(space.sample(mask=(None, only_a))) <= {"a"}
    probability = only_a.astype(np.float64)
    assert space.sample(probability=(5, probability)) == "aaaaa"
    with pytest.raises(ValueError, match="Only one of"):
        space.sample(mask=(1, None), probability=(1, None))
    short = AnyText(3, seed=1)
    assert all(len(short.sample()) <= 3 for _ in range(50))


def test_the_space_passes_gymnasiums_space_checks():
    space = AnyText()
    check_observation_space(space)
    check_action_space(space)
    assert space == AnyText() and space != AnyText(10) and space != Text(AnyText().max_length, min_length=0)
    assert not space.is_np_flattenable


def test_actions_parse_from_text_or_dicts_and_bad_ones_say_why():
    call = {"type": "call_tool", "tool_name": "echo", "arguments": {"text": "中"}}
    assert parse_action(json.dumps(call, ensure_ascii=False)) == call
    assert parse_action(call) is call
    assert parse_action('{"type": "verify"}') == {"type": "verify"}
    assert parse_action("not json").startswith("invalid action: not JSON")
    assert "a JSON object" in parse_action("[1, 2]")
    assert "not 'dance'" in parse_action({"type": "dance"})


def test_refusals_map_to_their_classes_by_status():
    assert type(episode_error(429, "full")) is CapacityError
    assert type(episode_error(404, "gone")) is EpisodeNotFoundError
    assert type(episode_error(409, "ended")) is EpisodeConflictError
    assert type(episode_error(422, "bad")) is InvalidRequestError
    other = episode_error(401, "who are you")
    assert type(other) is EpisodeError and other.status == 401 and other.message == "who are you"
    assert str(episode_error(429, "full")) == "full (HTTP 429)"
