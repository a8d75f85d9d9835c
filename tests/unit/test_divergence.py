from router.types import Observation, Provenance
from shadow.divergence import divergence, json_divergence, text_divergence


def obs(text="", structured=None, is_error=False, provenance=Provenance.REAL):
    return Observation([{"type": "text", "text": text}], provenance, is_error=is_error, structured=structured)


def test_identical_is_zero_and_status_mismatch_is_one():
    assert divergence(obs("same"), obs("same", provenance=Provenance.SIM)) == 0.0
    assert divergence(obs("ok"), obs("ok", is_error=True)) == 1.0


def test_json_leaves_missing_changed_and_retyped():
    real = {"timezone": "Asia/Tokyo", "datetime": "2026-01-01T00:00", "is_dst": False, "extra": 1}
    sim = {"timezone": "Asia/Tokyo", "datetime": "2027-01-01T00:00", "is_dst": "no"}
    # 4 paths: equal, changed (0.5), retyped (1), missing (1) -> 2.5 / 4
    assert json_divergence(real, sim) == 0.625


def test_structured_or_json_text_is_compared_as_json():
    real = obs('{"a": 1, "b": 2}')
    sim = obs("", structured={"b": 2, "a": 1})
    assert divergence(real, sim) == 0.0


def test_text_similarity():
    assert text_divergence("On branch main", "On branch main") == 0.0
    assert 0 < text_divergence("On branch main", "On branch dev") < 0.5
    assert text_divergence("abc", "xyz") == 1.0
