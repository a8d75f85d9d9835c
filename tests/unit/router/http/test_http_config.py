"""The http section of the config file."""

import pytest

from router.config import ConfigError, parse_config


def test_defaults_and_paths(tmp_path):
    config = parse_config("http: {ca_dir: ca}", base_dir=tmp_path)
    assert (config.http.port, config.http.mode, config.http.listen_host) == (8080, "regular", "127.0.0.1")
    assert config.ca_dir == tmp_path / "ca" and config.http.max_body_bytes == 1_048_576


def test_reverse_mode_needs_a_url():
    assert (
        parse_config("http: {mode: 'reverse:https://api.example.com'}").http.mode == "reverse:https://api.example.com"
    )
    with pytest.raises(ConfigError, match=r"<config>:1: http.mode: .*reverse:http\[s\]://host"):
        parse_config("http: {mode: 'reverse:api.example.com'}")
    with pytest.raises(ConfigError, match=r"<config>:3: http.mode: .*'socks5'"):
        parse_config("http:\n  port: 1\n  mode: socks5\n")


def test_unknown_keys_and_bad_values_name_the_line():
    with pytest.raises(ConfigError, match=r"<config>:3: http.max_body_byte: unknown key"):
        parse_config("mode: real\nhttp:\n  max_body_byte: 10\n")
    with pytest.raises(ConfigError, match=r"http.port"):
        parse_config("http: {port: 70000}")


def test_http_canonical_form_uses_the_ignored_fields():
    form = parse_config("http: {ignore_query: [ts], ignore_body_fields: [id]}").http_canonical()
    canonical = form({"url": "http://h/p?ts=1&a=2", "query": {"ts": "1", "a": "2"}, "body": {"id": 1, "x": 2}})
    assert canonical == {"url": "http://h/p?a=2", "query": {"a": "2"}, "body": {"x": 2}}


def test_the_wait_for_a_tunnels_first_bytes_is_positive_and_bounded():
    assert parse_config("http: {}").http.tunnel_first_bytes_s == 2.5
    assert parse_config("http: {tunnel_first_bytes_s: 0.5}").http.tunnel_first_bytes_s == 0.5
    for bad in ("0", "-1", "301", "soon"):
        with pytest.raises(ConfigError, match=r"http.tunnel_first_bytes_s"):
            parse_config(f"http: {{tunnel_first_bytes_s: {bad}}}")
