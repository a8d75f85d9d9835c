"""The `browser:` config section."""

import pytest

from router.config import ConfigError, parse_config


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="s.yaml")
    return str(info.value)


def test_browser_defaults_and_tuning():
    default = parse_config("")
    assert default.browser.enabled and default.browser.executable_path == "/usr/bin/chromium"
    assert "browser" in default.local_channels()
    tuned = parse_config(
        "browser:\n  navigation_timeout_s: 5\n  snapshot_max_chars: 4000\n  allowed_domains: [example.com]\n"
        "  proxy: http://127.0.0.1:8081\n  args: [--lang=en-US]\n"
    )
    assert tuned.browser.allowed_domains == ["example.com"] and tuned.browser.proxy == "http://127.0.0.1:8081"
    assert "browser" not in parse_config("browser: {enabled: false}").local_channels()


def test_browser_errors_name_the_line_and_key():
    assert error_of("mode: real\nbrowser:\n  headles: true\n") == "s.yaml:3: browser.headles: unknown key"
    assert "s.yaml:2: browser.navigation_timeout_s" in error_of("browser:\n  navigation_timeout_s: 0\n")
    assert "proxy must be a URL" in error_of("browser:\n  proxy: 127.0.0.1:8081\n")
    assert "taken by simroute's browser tools" in error_of("mcpServers:\n  browser: {command: npx}\n")
