"""An episode's shared row reads back as it was written (what another replica takes over)."""

from __future__ import annotations

from records.shared_state.episode_rows import EpisodeRow


def test_an_episode_row_round_trips_through_its_redis_fields():
    row = EpisodeRow(
        "e1",
        "team-a",
        42,
        {"route": "sim", "max_steps": 5},
        {"*": "a world", "shell": "files"},
        1764000000.25,
        replica="h:1:2",
    )
    back = EpisodeRow.of({**row.fields(), "steps": "3", "infra_error": "1", "ended": "reaped", "reward": "0.5"})
    assert (back.id, back.token, back.seed, back.options, back.world, back.created) == (
        "e1",
        "team-a",
        42,
        {"route": "sim", "max_steps": 5},
        {"*": "a world", "shell": "files"},
        1764000000.25,
    )
    assert (back.steps, back.infra_error, back.ended, back.reward, back.replica, back.forgotten) == (
        3,
        True,
        "reaped",
        0.5,
        "h:1:2",
        False,
    )
    untokened = EpisodeRow.of(EpisodeRow("e2", None, None, {}, {}, 1.0).fields())
    assert untokened.token is None and untokened.seed is None and untokened.ended is None and untokened.reward is None
