from pathlib import Path

import pytest

from router.config import ConfigError, load_config, parse_config
from router.types import Route


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="s.yaml")
    return str(info.value)


def test_defaults_and_claude_desktop_form():
    config = parse_config('mcpServers:\n  time:\n    command: uvx\n    args: ["mcp-server-time"]\n', base_dir=Path("/cfg"))
    assert config.mode is Route.REAL
    assert config.upstreams["time"].command == "uvx"
    assert config.store_path == Path("/cfg/.simroute/records.db")
    assert config.replay.on_miss == "real"


def test_vs_code_servers_form_with_types():
    config = parse_config("servers:\n  a: {type: stdio, command: x}\n  b: {type: http, url: 'http://127.0.0.1:1/mcp'}\n")
    assert config.upstreams["a"].command == "x"
    assert config.upstreams["b"].url.endswith("/mcp")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mode: simulate", "s.yaml:1: mode: Input should be 'real', 'sim', 'replay', 'shadow' or 'deny'"),
        ("mcpServers:\n  time:\n    comand: x\n", "s.yaml:3: mcpServers.time.comand: unknown key"),
        ("mcpServers:\n  time:\n    args: []\n", "s.yaml:2: mcpServers.time.command: Field required"),
        ("rules:\n  - match: {tool: 're:('}\n    route: sim\n", "s.yaml:2: rules[0].match.tool: invalid regular expression '('"),
        ("rules:\n  - route: sim\n  - route: bogus\n", "s.yaml:3: rules[1].route: 'bogus' is not one of"),
        ("rules:\n  - match: {arguments: {a.b: 're:['}}\n    route: sim\n", "s.yaml:2: rules[0].match.arguments.a.b: invalid regular expression"),
        ("rules:\n  - match: {tool: x}\n    rout: sim\n", "s.yaml:3: rules[0].rout: unknown rule key"),
        ("replay:\n  on_miss: maybe\n", "s.yaml:2: replay.on_miss: Input should be 'real', 'sim' or 'error'"),
        ("[1, 2", "s.yaml:1: invalid YAML"),
        ("- a\n- b\n", "s.yaml:1: the config must be a mapping"),
        ("mcpServers:\n  a: {command: x}\nservers:\n  a: {command: y}\n", "defined in both mcpServers and servers"),
    ],
)
def test_errors_name_line_and_key(text, expected):
    assert expected in error_of(text)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml: cannot read config file"):
        load_config(tmp_path / "nope.yaml")


def test_per_server_timeout_overrides_default():
    config = parse_config("call_timeout_s: 5\nmcpServers:\n  a: {command: x, timeout: 0.5}\n  b: {command: y}\n")
    assert config.timeout_for("a") == 0.5 and config.timeout_for("b") == 5
