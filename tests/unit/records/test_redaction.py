"""Redaction: every listed secret kind becomes a keyed-hash marker; nothing else changes."""

import json
import os
import re
import stat

import pytest
from kit.calls import make_call

from calls import Call, Decision, Observation, Provenance, Route
from records.record import Record
from records.redaction import MARKER_PREFIX, Redactor, build_redactor, element_name, redaction_key
from records.secret_patterns import is_credential_name
from router.config import ConfigError, load_config

SECRETS = [
    "hunter2-pw",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
    "sk-proj-abcdefghijklmnopqrstuvwx",
    "AKIAIOSFODNN7EXAMPLE",
    "s3ss10n-c00kie",
    "tok-777-xyz",
    "1234",
]


@pytest.fixture
def redactor():
    return Redactor(key=b"test-key")


def leaks(value) -> list[str]:
    text = json.dumps(value) if not isinstance(value, str) else value
    return [secret for secret in SECRETS if secret in text]


def test_credential_names_match_whole_words():
    for name in (
        "password",
        "GITHUB_TOKEN",
        "X-Api-Key",
        "apiKey",
        "client_secret",
        "Authorization",
        "set-cookie",
        "password_confirmation",
        "pin",
    ):
        assert is_credential_name(name), name
    for name in ("max_tokens", "tokens", "spin", "author", "keyword", "session", "description"):
        assert not is_credential_name(name), name


def test_mcp_arguments_json_fields_and_key_shapes(redactor):
    call = Call(
        "mcp",
        "github",
        "create_issue",
        {
            "repo": "a/b",
            "title": "hello",
            "max_tokens": 256,
            "auth": {"password": "hunter2-pw", "token": None},
            "note": "use ghp_abcdefghijklmnopqrstuvwxyz0123456789AB or sk-proj-abcdefghijklmnopqrstuvwx, AWS "
            "AKIAIOSFODNN7EXAMPLE",
        },
        "s1",
    )
    redacted = redactor.call(call)
    assert leaks(redacted.arguments) == []
    assert (
        redacted.arguments["repo"] == "a/b"
        and redacted.arguments["max_tokens"] == 256
        and redacted.arguments["auth"]["token"] is None
    )
    assert redacted.arguments["auth"]["password"] == redactor.marker("hunter2-pw")
    assert call.arguments["auth"]["password"] == "hunter2-pw"  # the original is untouched


def test_http_header_cookie_query_and_json_body(redactor):
    call = Call(
        "http",
        "api.test",
        "POST",
        {
            "method": "POST",
            "url": "https://api.test/v1/items?api_key=tok-777-xyz&page=2",
            "query": {"api_key": "tok-777-xyz", "page": "2"},
            "headers": {
                "authorization": "Bearer hunter2-pw",
                "cookie": "sid=s3ss10n-c00kie; theme=dark",
                "content-type": "application/json",
            },
            "body": {"user": "ada", "password": "1234"},
        },
        "s1",
    )
    arguments = redactor.call(call).arguments
    assert leaks(arguments) == []
    assert arguments["headers"]["authorization"].startswith("Bearer " + MARKER_PREFIX)
    assert (
        arguments["headers"]["cookie"].startswith("sid=" + MARKER_PREFIX) and "theme=" in arguments["headers"]["cookie"]
    )
    assert arguments["url"].startswith("https://api.test/v1/items?api_key=%5Bredacted%3A") and arguments[
        "url"
    ].endswith("&page=2")
    assert arguments["query"]["page"] == "2" and arguments["body"]["user"] == "ada"


def test_http_observation_headers_and_body_text(redactor):
    structured = {
        "status": 200,
        "reason": "OK",
        "headers": [["Set-Cookie", "sid=s3ss10n-c00kie; Path=/; HttpOnly"], ["Content-Type", "application/json"]],
        "body": '{"access_token": "tok-777-xyz", "expires_in": 3600}',
        "body_encoding": "text",
        "body_size": 50,
        "truncated": False,
    }
    raw = "HTTP/1.1 200 OK\nSet-Cookie: sid=s3ss10n-c00kie; Path=/\n\n" + structured["body"]
    observation = Observation([{"type": "text", "text": raw}], Provenance.REAL, structured=structured)
    redacted = redactor.observation(observation)
    assert leaks(redacted.to_json()) == []
    assert (
        redacted.structured["headers"][0][1].endswith("; Path=/; HttpOnly")
        and '"expires_in": 3600' in redacted.structured["body"]
    )
    assert Redactor(key=b"k", observations=False).observation(observation) is observation


def test_browser_typing_into_a_password_field(redactor):
    snapshot = '- textbox "Email" [ref=e4]\n- textbox "Password" [ref=e5]\n- button "Sign in" [ref=e6]'
    typed = make_call(
        "browser_type", {"ref": "e5", "text": "hunter2-pw", "submit": True}, channel="browser", session="s1"
    )
    redacted = redactor.call(typed, target_name=element_name(snapshot, "e5"))
    assert redacted.arguments == {"ref": "e5", "text": redactor.marker("hunter2-pw"), "submit": True}
    # The agent's own element description names it too; an email field is left alone.
    described = make_call(
        "browser_type", {"ref": "e9", "text": "1234", "element": "PIN code input"}, channel="browser", session="s1"
    )
    assert leaks(redactor.call(described).arguments) == []
    email = make_call("browser_type", {"ref": "e4", "text": "ada@example.test"}, channel="browser", session="s1")
    assert redactor.call(email, target_name=element_name(snapshot, "e4")).arguments["text"] == "ada@example.test"
    assert element_name(snapshot, "e7") is None


def test_shell_command_text(redactor):
    call = make_call(
        "shell_exec",
        {"command": "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789AB && mysql --password hunter2-pw"},
        channel="shell",
        session="s1",
    )
    command = redactor.call(call).arguments["command"]
    assert (
        leaks(command) == []
        and command.startswith("export GITHUB_TOKEN=[redacted:")
        and "mysql --password [redacted:" in command
    )


def test_markers_are_keyed_stable_and_idempotent(redactor):
    assert redactor.marker("a") == redactor.marker("a") != redactor.marker("b")
    assert Redactor(key=b"other").marker("a") != redactor.marker("a")
    assert re.fullmatch(r"\[redacted:[0-9a-f]{10}\]", redactor.marker("a"))
    text = 'Authorization: Bearer hunter2-pw\n{"password": "x y z"} token=tok-777-xyz'
    once = redactor.text(text)
    assert redactor.text(once) == once and leaks(once) == []


def test_configured_patterns_and_fields():
    redactor = Redactor(key=b"k", fields=["ssn"], patterns=[r"acct-(\d{6})"])
    assert redactor.value({"ssn": "123-45-6789", "password": "visible"}) == {
        "ssn": redactor.marker("123-45-6789"),
        "password": "visible",
    }
    assert redactor.text("account acct-123456 done") == f"account acct-{redactor.marker('123456')} done"


def test_record_redacted_copy(redactor):
    call = make_call("login", {"password": "hunter2-pw"}, server="s", session="s1")
    served = Observation([{"type": "text", "text": "token=tok-777-xyz"}], Provenance.REAL)
    record = Record(call, Decision(Route.REAL, "mode", "r"), served, step=0, call_key="k")
    assert leaks(record.redacted(redactor).to_json()) == [] and leaks(record.to_json()) != []


def test_key_from_env_or_a_0600_file(tmp_path, monkeypatch):
    key_file = tmp_path / "store" / "redaction.key"
    monkeypatch.delenv("SIMROUTE_TEST_KEY", raising=False)
    first = redaction_key(key_env="SIMROUTE_TEST_KEY", key_file=key_file)
    assert len(first) == 64 and stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert redaction_key(key_env="SIMROUTE_TEST_KEY", key_file=key_file) == first  # reused
    monkeypatch.setenv("SIMROUTE_TEST_KEY", "from-env")
    assert redaction_key(key_env="SIMROUTE_TEST_KEY", key_file=key_file) == b"from-env"


def test_config_section(tmp_path):
    path = tmp_path / "simroute.yaml"
    path.write_text("redaction:\n  fields: [password, ssn]\n  key_file: keys/r.key\n  observations: false\n")
    cfg = load_config(path)
    assert cfg.redaction.fields == ["password", "ssn"] and cfg.redaction_key_file == tmp_path / "keys" / "r.key"
    redactor = build_redactor(**cfg.redaction.model_dump(exclude={"key_file"}), key_file=cfg.redaction_key_file)
    assert redactor is not None and not redactor.observations and (tmp_path / "keys" / "r.key").exists()
    path.write_text("redaction:\n  patterns: ['(unclosed']\n")
    with pytest.raises(ConfigError, match="patterns"):
        load_config(path)


def test_text_whose_lower_case_changes_length_is_still_searched(redactor):
    text = "İstanbul config: password=hunter2-pw; keyword=visible"
    assert "İ".lower() != "i"  # lower-casing makes it longer: positions would shift
    redacted = redactor.text(text)
    assert (
        leaks(redacted) == []
        and redacted.startswith("İstanbul config: password=[redacted:")
        and "keyword=visible" in redacted
    )


def test_text_without_secrets_is_returned_as_is(redactor):
    text = "total 8\n-rw-r--r-- 1 agent agent 12 Nov 23 10:19 notes.txt\nkey points: none"
    assert redactor.text(text) is text
