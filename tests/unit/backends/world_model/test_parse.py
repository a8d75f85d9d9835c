import pytest

from backends.world_model.parse import EmptyPrediction, InvalidPrediction, parse_json_prediction, parse_prediction


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<think>hmm</think><predicted_observation>ok</predicted_observation>", "ok"),
        (
            "<think>a</think>x<think>b</think><predicted_observation>\n**Environment "
            "Observation:**\nfiles\n</predicted_observation>",
            "files",
        ),
        ("reasoning that started before the text</think>\n<predicted_observation>late</predicted_observation>", "late"),
        ("<predicted_observation>answer</predicted_observation> <think>never closed", "answer"),
        (
            "<predicted_observation>first</predicted_observation> then "
            "<predicted_observation>second</predicted_observation>",
            "second",
        ),
        ("<predicted_observation>unclosed to the end", "unclosed to the end"),
        ("**Environment Observation:**\nplain text, no tags", "plain text, no tags"),
        ("just the observation", "just the observation"),
    ],
)
def test_parse_prediction(raw, expected):
    assert parse_prediction(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "<think>all budget spent thinking",
        "<predicted_observation></predicted_observation>",
        "**Environment Observation:**",
    ],
)
def test_empty_prediction_is_an_error(raw):
    with pytest.raises(EmptyPrediction):
        parse_prediction(raw)


def test_json_prediction_from_fence_and_validation():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert parse_json_prediction('Sure:\n```json\n{"n": 3}\n```', schema) == {"n": 3}
    assert parse_json_prediction('noise {"n": 4} trailing', schema) == {"n": 4}
    with pytest.raises(InvalidPrediction, match="n: 'x' is not of type 'integer'"):
        parse_json_prediction('{"n": "x"}', schema)
    with pytest.raises(InvalidPrediction, match="not a JSON object"):
        parse_json_prediction("no json here", schema)
