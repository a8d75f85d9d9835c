from pathlib import Path

import pytest

from calls import Route
from router.config import ConfigError, load_config, parse_config


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="s.yaml")
    return str(info.value)


def test_defaults_and_claude_desktop_form():
    config = parse_config(
        'mcpServers:\n  time:\n    command: uvx\n    args: ["mcp-server-time"]\n', base_dir=Path("/cfg")
    )
    assert config.mode == Route.REAL
    assert config.upstreams["time"].command == "uvx"
    assert config.store_path == Path("/cfg/.simroute/records.db")
    assert config.replay.on_miss is None and config.replay.record_mode == "new_episodes"


def test_vs_code_servers_form_with_types():
    config = parse_config(
        "servers:\n  a: {type: stdio, command: x}\n  b: {type: http, url: 'http://127.0.0.1:1/mcp'}\n"
    )
    assert config.upstreams["a"].command == "x"
    assert config.upstreams["b"].url.endswith("/mcp")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "mode: simulate",
            "s.yaml:1: mode: 'simulate' is not one of real, sim, replay, shadow, deny, learned, rehearsal",
        ),
        ("mcpServers:\n  time:\n    comand: x\n", "s.yaml:3: mcpServers.time.comand: unknown key"),
        ("mcpServers:\n  time:\n    args: []\n", "s.yaml:2: mcpServers.time.command: Field required"),
        (
            "rules:\n  - match: {tool: 're:('}\n    route: sim\n",
            "s.yaml:2: rules[0].match.tool: invalid regular expression '('",
        ),
        ("rules:\n  - route: sim\n  - route: bogus\n", "s.yaml:3: rules[1].route: 'bogus' is not one of"),
        (
            "rules:\n  - match: {arguments: {a.b: 're:['}}\n    route: sim\n",
            "s.yaml:2: rules[0].match.arguments.a.b: invalid regular expression",
        ),
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


def test_may_run_real_sees_the_mode_and_the_rules_of_a_channel():
    from router.config import parse_config

    assert parse_config("mode: real").may_run_real("shell")
    assert not parse_config("mode: sim").may_run_real("shell")
    with_rule = "mode: sim\nrules:\n  - {match: {channel: shell}, route: real}\n"
    assert parse_config(with_rule).may_run_real("shell") and not parse_config(with_rule).may_run_real("browser")
    assert parse_config("mode: sim\nrules:\n  - {match: {tool: x}, route: shadow}\n").may_run_real("shell")


def test_shell_section_is_validated_and_reserves_its_name():
    import pytest

    from router.config import ConfigError, parse_config

    assert parse_config("shell: {pool_size: 0, limits: {pids: 64}}").shell.limits.pids == 64
    with pytest.raises(ConfigError, match="shell.pool_size"):
        parse_config("shell: {pool_size: -1}")
    with pytest.raises(ConfigError, match="taken by simroute's shell tools"):
        parse_config("mcpServers:\n  shell: {command: x}\n")
    assert parse_config("shell: {enabled: false}\nmcpServers:\n  shell: {command: x}\n").upstreams
    assert parse_config("shell: {default_timeout_s: 5, max_timeout_s: 60}").shell.command_timeout(600) == 60
    assert parse_config("shell: {default_timeout_s: 5}").shell.command_timeout(None) == 5


def test_store_sqlite_url_is_relative_to_the_config_folder_or_absolute_with_four_slashes():
    relative = parse_config('store: {url: "sqlite:///data/records.db"}', base_dir=Path("/cfg"))
    assert relative.store_path == Path("/cfg/data/records.db")
    assert relative.store.redis_url is None
    absolute = parse_config('store: {url: "sqlite:////srv/simroute/records.db"}', base_dir=Path("/cfg"))
    assert absolute.store_path == Path("/srv/simroute/records.db")
    # The spool goes beside the file the url names.
    assert absolute.spool_path == Path("/srv/simroute/records.spool.jsonl")


def test_store_url_and_path_together_is_an_error_naming_both_keys():
    message = error_of('store:\n  url: "sqlite:///a.db"\n  path: b.db\n')
    assert message.startswith("s.yaml:") and "store" in message
    assert "url" in message and "path" in message and "not both" in message
    assert "store: {url" not in message  # the keys are named, not the whole section dumped


def test_world_model_chat_format_reaches_the_model_runner_and_a_bad_name_fails_at_load():
    pytest.importorskip("llama_cpp")
    from router.runtime.simulated_side import build_model_runner

    config = parse_config("world_model: {chat_format: chatml}", base_dir=Path("/cfg"))
    assert build_model_runner(config).chat_format == "chatml"
    message = error_of("world_model:\n  chat_format: chatmll\n")
    assert "s.yaml:2: world_model.chat_format: 'chatmll' is not a registered chat format" in message
    assert "chatml" in message.split("valid formats", 1)[1]  # the valid names are listed
    assert "is a completion handler" in error_of("world_model:\n  chat_format: functionary\n")


def test_shared_namespaces_name_tokens():
    assert parse_config("service: {shared_namespaces: [ci]}").service.shared_namespaces == ["ci"]
    with pytest.raises(ConfigError, match="service.shared_namespaces.*a namespace is a token name"):
        parse_config("service: {shared_namespaces: ['ci/golden']}")
