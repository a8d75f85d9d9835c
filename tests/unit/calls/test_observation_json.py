"""An observation's source: written only when it says something (an observation
without one is written exactly as before), read back with keys this version does not know."""

from __future__ import annotations

import json

from calls import Observation, Provenance, Source

# An observation as simroute wrote it before sources existed.
OLD = {
    "content": [{"type": "text", "text": "ok"}],
    "structured": {"n": 1},
    "is_error": False,
    "provenance": "sim",
    "latency_s": 0.5,
}


def test_an_observation_written_before_sources_reads_without_one_and_writes_back_byte_for_byte():
    observation = Observation.from_json(OLD)
    assert observation.source is None
    assert json.dumps(observation.to_json()) == json.dumps(OLD)


def test_positional_construction_is_unchanged_and_has_no_source():
    observation = Observation([{"type": "text", "text": "ok"}], Provenance.REAL, False, None, 0.1)
    assert observation.source is None and "source" not in observation.to_json()
    assert observation.source_json() is None


def test_an_empty_source_is_left_out():
    empty = Observation([], Provenance.SIM, source=Source())
    assert "source" not in empty.to_json() and empty.source_json() is None
    assert Observation.from_json({**OLD, "source": {}}).source is None


def test_a_source_is_written_after_the_keys_every_observation_has_and_round_trips():
    written = {"sub": "model+state", "model": "base+lora-7", "fork": "f-2"}
    observation = Observation.from_json({**OLD, "source": written})
    assert observation.source == Source.from_json(written) and observation.source_json() == written
    assert Observation.from_json(observation.to_json()) == observation
    assert list(observation.to_json()) == [*OLD, "source"]
