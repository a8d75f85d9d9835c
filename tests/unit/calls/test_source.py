"""`Source`: only set keys are written, keys this version does not know round-trip, and
a known key of another type is kept rather than misread."""

from __future__ import annotations

from calls.source import Source


def test_a_source_writes_only_its_set_keys():
    assert Source(sub="model").to_json() == {"sub": "model"}
    assert Source(sub="model", model="m.gguf").to_json() == {"sub": "model", "model": "m.gguf"}
    assert Source().to_json() == {}


def test_a_source_round_trips_with_keys_this_version_does_not_know():
    written = {"sub": "model+state", "model": "base+lora-7", "fork": "f-2", "state": {"files": 3}}
    source = Source.from_json(written)
    assert (source.sub, source.model, source.extra) == (
        "model+state",
        "base+lora-7",
        {"fork": "f-2", "state": {"files": 3}},
    )
    assert source.to_json() == written


def test_a_known_key_of_another_type_is_kept_not_misread():
    source = Source.from_json({"sub": ["state", "model"], "model": "m"})
    assert source.sub is None and source.model == "m"
    assert source.to_json() == {"model": "m", "sub": ["state", "model"]}


def test_sources_compare_by_value_and_hash_with_their_extra_keys():
    assert Source(sub="model", model="m", extra={"fork": "a"}) == Source(sub="model", model="m", extra={"fork": "a"})
    assert Source(sub="model", extra={"fork": "a"}) != Source(sub="model", extra={"fork": "b"})
    assert (
        len({Source(sub="model", extra={"fork": "a"}), Source(sub="model", extra={"fork": "a"}), Source(sub="state")})
        == 2
    )
