"""What a secret looks like: field names that hold credentials, and the shapes of
keys and tokens in any text. One list of names (`CREDENTIAL_FIELDS`, the
`redaction.fields` default) serves redaction and the replay key's credential
digest alike."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

CREDENTIAL_FIELDS: tuple[str, ...] = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "auth_token",
    "session_token",
    "api_key",
    "apikey",
    "access_key",
    "secret_key",
    "private_key",
    "client_secret",
    "authorization",
    "cookie",
    "set_cookie",
    "credential",
    "credentials",
    "signature",
    "pin",
    "otp",
)
# Names a browser field's accessible name has when what is typed into it is a secret.
SECRET_INPUT_NAME = re.compile(
    r"pass(?:word|code|phrase)?\b|\bpin\b|secret|one[- ]time|\botp\b|\bcvv\b|\bcvc\b", re.IGNORECASE
)
# Keys and tokens recognisable by their shape wherever they appear.
# Keys and tokens recognisable by their shape wherever they appear, each with the
# literal text it cannot appear without (a cheap test before the regex runs).
KEY_SHAPES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (triggers, re.compile(pattern))
    for triggers, pattern in (
        (("sk-",), r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),  # OpenAI, Anthropic
        (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b"),  # GitHub tokens
        (("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
        (("AKIA", "ASIA"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
        (("xox",), r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),  # Slack
        (("AIza",), r"\bAIza[0-9A-Za-z_-]{35}\b"),  # Google API keys
        (("_live_", "_test_"), r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe secret keys
        (("eyJ",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JWTs
        (("PRIVATE KEY",), r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z]+ )*PRIVATE KEY-----"),
    )
)
# `Authorization: Bearer …`, `Basic …`: the scheme stays, the credential goes.
AUTH_SCHEME = re.compile(r"\b(Bearer|Basic|Digest|Token)(\s+)([A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
# Header lines of raw HTTP text whose whole value is a credential.
SECRET_HEADER_LINE = re.compile(
    r"^((?:proxy-)?authorization|cookie|set-cookie|x-api-key|x-auth-token)([ \t]*:[ \t]*)([^\r\n]*)$",
    re.IGNORECASE | re.MULTILINE,
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SKIPPED_VALUES = frozenset({"", "null", "none", "true", "false", "undefined"})


@lru_cache(maxsize=8192)
def normal_name(name: str) -> str:
    """`apiKey`, `API-Key`, `api_key` -> `api_key`."""
    return _CAMEL.sub("_", name).lower().replace("-", "_").replace(".", "_").strip("_")


def is_credential_name(name: str, fields: Iterable[str] = CREDENTIAL_FIELDS) -> bool:
    """Whether a field, header, cookie or query parameter named `name` holds a
    credential: it is a listed name, or ends or starts with one as a whole word
    (`github_token`, `x-api-key`, `password_confirmation`; not `max_tokens`)."""
    return _matches(normal_name(name), tuple(fields))


@lru_cache(maxsize=8192)
def _matches(name: str, fields: tuple[str, ...]) -> bool:
    for field in _normal_fields(fields):
        if name == field or name.endswith("_" + field) or name.startswith(field + "_"):
            return True
    return False


@lru_cache(maxsize=16)
def _normal_fields(fields: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(normal_name(field) for field in fields)


_VALUE = re.compile(
    # JSON inside a JSON string (an upstream echoing a body) first: \"name\": \"value\"
    r"\\+\"(?P<esc>[^\"\\\n]*)\\+\""
    r"|\"(?P<dq>(?:[^\"\\\n]|\\.)*)\"|'(?P<sq>[^'\n]*)'|(?!(?:Bearer|Basic|Digest|Token)\s)(?P<bare>[^\s\"'&;,<>)\]}\\]+)",
    re.IGNORECASE,
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class Assignments:
    """`name: value`, `name=value`, `"name": "value"` and `--name value` in any text,
    for names that are, or end in, a credential field (`GITHUB_TOKEN=…`,
    `"apiKey": "…"`, `--password …`; not `spin: 3`).

    Found in two steps, for speed on large texts: a regex that starts at the field
    name (so the regex engine can skip ahead by its first letters), then a look
    back to the start of the name and a match of the value after it."""

    def __init__(self, fields: Iterable[str]) -> None:
        names = "|".join(sorted((_flexible(f) for f in fields), key=len, reverse=True))
        # Searched in the lower-cased text: a case-sensitive alternation lets the regex
        # engine skip ahead by first letters (an ignore-case one is ten times slower).
        self._assignment = re.compile(rf"(?:{names})(?![\w-])(?:\\*[\"'])?[ \t]*[:=][ \t]*")
        self._assignment_any_case = re.compile(self._assignment.pattern, re.IGNORECASE)
        self._flag = re.compile(rf"--(?:[\w-]*-)?(?:{names})(?![\w-])[ \t]+", re.IGNORECASE)
        # One word of each field that any text holding it must contain.
        self.words = tuple(sorted({normal_name(f).split("_")[-1] for f in fields}))

    def values(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, value) of every secret value, in order, not overlapping."""
        lowered = text.lower()
        if not any(word in lowered for word in self.words):
            return []
        found = []
        # Lower-casing keeps positions when it keeps the length (it never shortens a character).
        searched, pattern = (
            (lowered, self._assignment) if len(lowered) == len(text) else (text, self._assignment_any_case)
        )
        for match in pattern.finditer(searched):
            if self._name_starts_a_word_part(text, match.start()):
                found.append(self._value_after(text, match.end()))
        if "--" in text:
            found += [
                self._value_after(text, match.end())
                for match in self._flag.finditer(text)
                if not _inside_word(text, match.start())
            ]
        spans = sorted(span for span in found if span is not None)
        return [span for index, span in enumerate(spans) if index == 0 or span[0] >= spans[index - 1][1]]

    @staticmethod
    def _name_starts_a_word_part(text: str, start: int) -> bool:
        # The name is the field itself or ends in it after `_`, `.` or `-` (`GITHUB_TOKEN`).
        begin = start
        while begin > 0 and text[begin - 1] in _NAME_CHARS:
            begin -= 1
        return begin == start or text[start - 1] in "_.-"

    @staticmethod
    def _value_after(text: str, position: int) -> tuple[int, int, str] | None:
        value = _VALUE.match(text, position)
        if value is None:
            return None
        group = next(name for name in ("esc", "dq", "sq", "bare") if value[name] is not None)
        return value.start(group), value.end(group), value[group]


def _inside_word(text: str, start: int) -> bool:
    return start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-")


def _flexible(field: str) -> str:
    # api_key matches apiKey, api-key, API_KEY
    return "[-_]?".join(re.escape(part) for part in normal_name(field).split("_"))


def worth_redacting(value: str) -> bool:
    return value.strip().lower() not in _SKIPPED_VALUES
