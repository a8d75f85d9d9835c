"""A virtual server in the config: its declaration, and clear errors for a bad one."""

import pytest

from router.config import ConfigError, parse_config

DECLARED = """
mcpServers:
  weather:
    type: virtual
    initial_state: It is 2031-04-02. Lima is 24 C and sunny.
    recording: golden
    tools:
      - name: get_forecast
        description: The forecast for a city.
        inputSchema: {type: object, properties: {city: {type: string}}, required: [city]}
        outputSchema: {type: object, properties: {temp_c: {type: number}}, required: [temp_c]}
        annotations: {readOnlyHint: true}
  time:
    command: mcp-server-time
"""


def test_a_virtual_server_is_declared_beside_real_ones():
    config = parse_config(DECLARED)
    assert set(config.upstreams) == {"weather", "time"}
    assert set(config.real_upstreams) == {"time"} and set(config.virtual_servers) == {"weather"}
    weather = config.virtual_servers["weather"]
    assert weather.recording == "golden" and weather.initial_state.startswith("It is 2031")
    assert weather.definitions() == [
        {
            "name": "get_forecast",
            "description": "The forecast for a city.",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "outputSchema": {"type": "object", "properties": {"temp_c": {"type": "number"}}, "required": ["temp_c"]},
            "annotations": {"readOnlyHint": True},
        }
    ]
    assert config.may_simulate()  # the world model is loaded ahead for it


@pytest.mark.parametrize(
    ("tools", "error"),
    [
        (
            "[{name: a, inputSchema: {type: strin}}]",
            "s.yaml:5: mcpServers.v.tools[0].inputSchema: inputSchema is not a valid JSON Schema",
        ),
        (
            "[{name: a, inputSchema: {type: array}}]",
            "mcpServers.v.tools[0].inputSchema: inputSchema must describe an object",
        ),
        ("[{name: a}, {name: a}]", "mcpServers.v.tools: tool 'a' is declared twice"),
        ("[]", "mcpServers.v.tools: List should have at least 1 item"),
        ("[{name: a, run: x}]", "mcpServers.v.tools[0].run: unknown key"),
    ],
)
def test_a_bad_declaration_is_a_clear_error(tools, error):
    with pytest.raises(ConfigError) as raised:
        parse_config(f"mcpServers:\n  v:\n    type: virtual\n    tools:\n      {tools}\n", source="s.yaml")
    assert error in str(raised.value)


def test_explain_shows_the_route_a_virtual_server_is_served():
    from router.reports.explain import Explainer, call_from_json

    config = parse_config(DECLARED + "rules:\n  - match: {tool: get_forecast}\n    route: shadow\n")
    explainer = Explainer(config)
    forecast = explainer.explain(
        call_from_json({"server": "weather", "name": "get_forecast", "arguments": {"city": "Lima"}}, config)
    )
    assert (forecast["route"], forecast["policy"]) == ("replay", "virtual")
    assert "rules:rule[0] chose shadow" in forecast["reason"] and "recording 'golden'" in forecast["reason"]
    assert forecast["safety_class"] == "safe"
    assert [entry["matched"] for entry in forecast["rules_tried"]] == [True]
    time = explainer.explain(call_from_json({"server": "time", "name": "get_current_time"}, config))
    assert time["route"] == "real"  # a real server keeps its route
