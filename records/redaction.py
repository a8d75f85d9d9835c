"""Redaction before storage: secrets in calls and observations become a marker
with a short keyed hash, `[redacted:1f2e3d4c5b]`.

The hash is an HMAC of the secret under one key, so the same secret gets the
same marker (replay keys and comparisons still see equal values as equal)
while the marker reveals nothing without the key. What is redacted: values of
fields, headers, cookies and query parameters named like credentials
(`redaction.fields`), bearer and basic credentials, key and token shapes in any
text (`sk-…`, `ghp_…`, AWS key ids, JWTs, private key blocks, `redaction.patterns`),
and what is typed into a browser field whose accessible name says it is a
password, passcode, PIN or secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote_plus, urlsplit, urlunsplit

from calls import Call, Observation
from records.errors import RecordsError
from records.secret_patterns import (
    AUTH_SCHEME,
    CREDENTIAL_FIELDS,
    KEY_SHAPES,
    SECRET_HEADER_LINE,
    SECRET_INPUT_NAME,
    Assignments,
    is_credential_name,
    worth_redacting,
)

MARKER_PREFIX = "[redacted:"
_COOKIE_HEADERS = frozenset({"cookie"})
_SET_COOKIE_HEADERS = frozenset({"set-cookie"})
_HEADER_WORDS = ("authorization", "cookie", "x-api-key", "x-auth-token")
_SCHEME_WORDS = ("bearer", "basic", "digest", "token")
# A textbox line of an accessibility snapshot with its value: `- textbox "Password" [ref=e7]: hunter2`.
_SNAPSHOT_TEXTBOX = re.compile(
    r'^(?P<head>[ \t]*-[ \t]*textbox[ \t]+"(?P<name>[^"\n]*)"[^\n:]*:[ \t]*)(?P<value>[^\n]+)$', re.MULTILINE
)
_TYPING_TOOLS = frozenset({"browser_type", "browser_fill", "browser_fill_form"})
_REF_LINE = r"^.*\[ref={ref}\].*$"


class RedactionKeyError(RecordsError, RuntimeError):
    """The redaction key could not be read or created."""


def redaction_key(*, key_env: str | None, key_file: Path) -> bytes:
    """The key: the environment variable `key_env` when set, else `key_file` (created
    with 32 random bytes and mode 0600 when missing)."""
    if key_env and os.environ.get(key_env):
        return os.environ[key_env].encode()
    try:
        return key_file.read_bytes().strip()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise RedactionKeyError(f"cannot read the redaction key {key_file}: {exc}") from exc
    try:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return key_file.read_bytes().strip()
    except OSError as exc:
        raise RedactionKeyError(f"cannot create the redaction key {key_file}: {exc}") from exc
    key = secrets.token_hex(32).encode()
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key


class Redactor:
    def __init__(
        self,
        *,
        key: bytes,
        fields: Iterable[str] = CREDENTIAL_FIELDS,
        patterns: Iterable[str] = (),
        observations: bool = True,
        password_input: Callable[[str, str], bool] | None = None,
    ) -> None:
        """`password_input(session_id, ref)`: whether the real page says an element is an
        `<input type=password>` (the browser channel's answer, known without I/O)."""
        if not key:
            raise ValueError("the redaction key is empty")
        self.key = key
        self.password_input = password_input
        self.fields = tuple(fields)
        self.observations = observations  # redact observations too (else calls only)
        self._assignments = Assignments(self.fields)
        # Words a text must hold for any rule to apply: most texts hold none, and are left after one search.
        words = {*_HEADER_WORDS, *_SCHEME_WORDS, "textbox", *self._assignments.words}
        # Searched in the lower-cased text (a case-sensitive alternation is far faster).
        self._maybe_secret = re.compile("|".join(re.escape(word.lower()) for word in sorted(words)))
        # Key shapes start with case-sensitive prefixes (`ASIA…` is a key, `Asia/Tokyo` is not).
        self._maybe_key = re.compile("|".join(re.escape(t) for triggers, _ in KEY_SHAPES for t in sorted(triggers)))
        self._extra = tuple(re.compile(p) for p in patterns)

    # --- values ------------------------------------------------------------------------

    def marker(self, secret: str) -> str:
        digest = hmac.new(self.key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:10]
        return f"{MARKER_PREFIX}{digest}]"

    def text(self, text: str) -> str:
        """Secrets in free text: header lines, bearer credentials, `name=value`
        assignments and flags of credential names, key shapes, configured patterns.
        Each pattern runs only when the text holds a word it needs."""
        if not text:
            return text
        lowered = text.lower()
        if not self._extra and self._maybe_secret.search(lowered) is None and self._maybe_key.search(text) is None:
            return text
        if any(name in lowered for name in _HEADER_WORDS):
            text = SECRET_HEADER_LINE.sub(lambda m: m[1] + m[2] + self.header(m[1], m[3]), text)
        if any(scheme in lowered for scheme in _SCHEME_WORDS):
            text = AUTH_SCHEME.sub(lambda m: m[0] if MARKER_PREFIX in m[3] else m[1] + m[2] + self.marker(m[3]), text)
        if "textbox" in lowered:  # a page snapshot shows what was typed into a password field
            text = _SNAPSHOT_TEXTBOX.sub(self._secret_textbox, text)
        text = self._replace(text, self._assignments.values(text))
        for triggers, pattern in KEY_SHAPES:
            if any(trigger in text for trigger in triggers):
                text = pattern.sub(self._whole_or_group, text)
        for pattern in self._extra:
            text = pattern.sub(self._whole_or_group, text)
        return text

    def _password_values(self, observation: Observation, session_id: str) -> Observation:
        """The values a snapshot shows in the session's password inputs, as markers."""
        assert self.password_input is not None
        is_password = self.password_input

        def masked(text: str) -> str:
            if "textbox" not in text:
                return text

            def value(match: re.Match[str]) -> str:
                ref = _SNAPSHOT_REF.search(match["head"])
                if ref is None or MARKER_PREFIX in match["value"] or not is_password(session_id, ref[1]):
                    return match[0]
                return match["head"] + self.marker(match["value"])

            return _SNAPSHOT_TEXTBOX.sub(value, text)

        content = [
            {**block, "text": masked(block["text"])} if isinstance(block.get("text"), str) else block
            for block in observation.content
        ]
        structured = observation.structured
        if isinstance(structured, dict) and isinstance(structured.get("snapshot"), str):
            structured = {**structured, "snapshot": masked(structured["snapshot"])}
        return replace(observation, content=content, structured=structured)

    def _secret_textbox(self, match: re.Match[str]) -> str:
        value = match["value"]
        if not SECRET_INPUT_NAME.search(match["name"]) or MARKER_PREFIX in value:
            return match[0]
        return match["head"] + self.marker(value)

    def _replace(self, text: str, spans: list[tuple[int, int, str]]) -> str:
        pieces, last = [], 0
        for start, end, secret in spans:
            if worth_redacting(secret) and MARKER_PREFIX not in secret:
                pieces += [text[last:start], self.marker(secret)]
                last = end
        return "".join(pieces) + text[last:] if pieces else text

    def _whole_or_group(self, match: re.Match[str]) -> str:
        if match.re.groups and match[1]:  # a configured pattern with a group: only the group is secret
            start, end = match.span(1)
            return match[0][: start - match.start()] + self.marker(match[1]) + match[0][end - match.start() :]
        return self.marker(match[0])

    def header(self, name: str, value: str) -> str:
        """A header's value: cookies per cookie (names kept), credential headers whole
        (an auth scheme kept), other headers as text."""
        lower = name.lower()
        if lower in _COOKIE_HEADERS:
            return "; ".join(self._cookie(part.strip()) for part in value.split(";"))
        if lower in _SET_COOKIE_HEADERS:
            first, sep, attributes = value.partition(";")
            return self._cookie(first) + sep + attributes
        if is_credential_name(lower, self.fields) or lower in ("x-api-key", "x-auth-token"):
            if MARKER_PREFIX in value or not worth_redacting(value):
                return value
            scheme = AUTH_SCHEME.match(value.strip())
            return f"{scheme[1]} {self.marker(scheme[3])}" if scheme else self.marker(value)
        return self.text(value)

    def _cookie(self, pair: str) -> str:
        name, sep, value = pair.partition("=")
        if not sep or MARKER_PREFIX in value:
            return pair
        return f"{name}={self.marker(value.strip())}"

    def value(self, value: Any, name: str | None = None) -> Any:
        """A JSON value: fields named like credentials become markers, strings are
        redacted as text, `[name, value]` pairs (headers) as headers."""
        if name is not None and is_credential_name(name, self.fields) and not isinstance(value, (dict, list)):
            if (
                value is None
                or isinstance(value, bool)
                or (isinstance(value, str) and (not worth_redacting(value) or MARKER_PREFIX in value))
            ):
                return value
            return self.marker(value if isinstance(value, str) else json.dumps(value))
        if isinstance(value, dict):
            return {key: self.value(child, str(key)) for key, child in value.items()}
        if isinstance(value, list):
            if value and all(
                isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in value
            ):
                return [[n, self.header(n, v)] for n, v in value]  # header pairs
            return [
                self.value(child, name if name and is_credential_name(name, self.fields) else None) for child in value
            ]
        if isinstance(value, str):
            return self.text(value)
        return value

    def url(self, url: str) -> str:
        """A URL with the values of credential query parameters (and any userinfo password) redacted."""
        parts = urlsplit(url)
        query = "&".join(self._query_pair(pair) for pair in parts.query.split("&")) if parts.query else ""
        netloc = parts.netloc
        if parts.password:
            netloc = netloc.replace(f":{parts.password}@", f":{quote(self.marker(parts.password), safe='')}@", 1)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))

    def _query_pair(self, pair: str) -> str:
        name, sep, value = pair.partition("=")
        if not sep or not is_credential_name(unquote_plus(name), self.fields) or not worth_redacting(value):
            return pair
        return f"{name}={quote(self.marker(unquote_plus(value)), safe='')}"

    # --- calls and observations ------------------------------------------------------------

    def call(self, call: Call, *, target_name: str | None = None) -> Call:
        """A call with its secrets redacted. `target_name`: the accessible name of the
        element a browser call types into (from the page's snapshot), when known."""
        arguments = dict(call.arguments)
        if call.channel == "http":
            arguments = self._http_arguments(arguments)
        elif call.channel == "browser" and call.tool in _TYPING_TOOLS and self._types_a_secret(call, target_name):
            arguments = {
                **self.value({k: v for k, v in arguments.items() if k != "text"}),
                "text": self.marker(str(arguments.get("text", ""))),
            }
        else:
            arguments = self.value(arguments)
        return replace(call, arguments=arguments)

    def _types_a_secret(self, call: Call, target_name: str | None) -> bool:
        if self.password_input is not None and self.password_input(
            call.session_id, str(call.arguments.get("ref") or "")
        ):
            return True
        names = [str(call.arguments.get("element") or ""), target_name or ""]
        return any(SECRET_INPUT_NAME.search(name) for name in names)

    def _http_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        result = dict(arguments)
        if isinstance(arguments.get("url"), str):
            result["url"] = self.url(arguments["url"])
        if isinstance(arguments.get("headers"), dict):
            result["headers"] = {name: self.header(name, str(value)) for name, value in arguments["headers"].items()}
        for key, value in arguments.items():
            if key not in ("url", "headers"):
                result[key] = self.value(value)
        return result

    def observation(self, observation: Observation, *, session_id: str | None = None) -> Observation:
        """An observation with its secrets redacted (unchanged when `observations` is off).
        `session_id`: the agent session it was observed in, whose real page says which
        snapshot text boxes are password inputs (their shown values are redacted too)."""
        if not self.observations:
            return observation
        if session_id is not None and self.password_input is not None:
            observation = self._password_values(observation, session_id)
        content = [self.value(block) if block.get("type") == "text" else block for block in observation.content]
        structured = self.value(observation.structured) if observation.structured is not None else None
        return replace(observation, content=content, structured=structured)


_SNAPSHOT_REF = re.compile(r"\[ref=((?:f\d+)?e\d+)\]")


def element_name(snapshot: str | None, ref: str) -> str | None:
    """The line of `ref`'s element in an accessibility snapshot (`- textbox "Password" [ref=e5]`),
    the name a typing call's target has; None when the ref is not in it."""
    if not snapshot or not re.fullmatch(r"(?:f\d+)?e\d+", ref or ""):
        return None
    match = re.search(_REF_LINE.format(ref=re.escape(ref)), snapshot, re.MULTILINE)
    return match[0].strip() if match else None


def build_redactor(
    *,
    enabled: bool,
    fields: Iterable[str],
    patterns: Iterable[str],
    observations: bool,
    key_env: str | None,
    key_file: Path,
) -> Redactor | None:
    """The redactor the `redaction` config section describes (None when turned off);
    reads or creates the key."""
    if not enabled:
        return None
    return Redactor(
        key=redaction_key(key_env=key_env, key_file=key_file),
        fields=fields,
        patterns=patterns,
        observations=observations,
    )


def typed_into(call: Call, session: Any) -> str | None:
    """The accessible name of the element a browser typing call targets, from the
    session's latest page snapshot (so typing into a password field is redacted even
    when the agent's element description does not say so)."""
    if call.channel != "browser" or call.tool not in _TYPING_TOOLS:
        return None
    ref = str(call.arguments.get("ref") or "")
    for turn in reversed(session.history):
        if turn.call.channel == "browser" and turn.call.server == call.server:
            return element_name(turn.observation.text, ref)
    return None
