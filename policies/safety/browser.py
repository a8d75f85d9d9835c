"""The browser channel's classifier: what a click, a key press or typing does.

A click or key press on an element whose accessible name (or enclosing form)
says submit, buy, pay, delete, send, confirm… and typing into a password field
are side effects; on `safety.sensitive_domains` they are destructive. The
element's name comes from the agent's `element` description and from the page
snapshot the agent last saw (the session's history), where `[ref=eN]` names it.
Navigation and snapshots read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from calls import Session
from policies.safety.http import host_matches
from policies.safety.verdict import SafetyClass, SafetyVerdict

SAFE, SIDE, DESTRUCTIVE = SafetyClass.SAFE, SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE

_ACTION_WORDS = re.compile(
    r"\b(submit|buy|pay|payment|purchase|place (the |my )?order|checkout|check "
    r"out|delete|remove|erase|destroy|send|confirm|transfer|"
    r"sign up|register|publish|unsubscribe|cancel (my )?(account|subscription|order)|close (my |your "
    r")?account|deactivate|donate|withdraw)\b",
    re.IGNORECASE,
)
_SECRET_FIELD = re.compile(
    r"\b(password|passcode|passphrase|pin|secret|one-time code|otp|cvv|cvc|card number)\b", re.IGNORECASE
)
_LINE = re.compile(r"^(?P<indent>\s*)-\s*(?P<role>[\w-]+)(?:\s+\"(?P<name>(?:[^\"\\]|\\.)*)\")?")
_SUBMITTING_KEYS = frozenset({"enter", "return", "numpadenter"})


def element_context(snapshot: str, ref: str) -> tuple[str, str, list[str]] | None:
    """(role, name, names of enclosing forms) of `ref` in an aria snapshot, or None."""
    lines = snapshot.splitlines()
    marker = f"[ref={ref}]"
    for i, line in enumerate(lines):
        if marker not in line:
            continue
        match = _LINE.match(line)
        if match is None:
            return "", line, []
        indent = len(match.group("indent"))
        forms: list[str] = []
        for above in reversed(lines[:i]):
            parent = _LINE.match(above)
            if parent is not None and len(parent.group("indent")) < indent:
                indent = len(parent.group("indent"))
                if parent.group("role") == "form":
                    forms.append(parent.group("name") or "form")
        return match.group("role"), match.group("name") or "", forms
    return None


def last_page(session: Session | None) -> tuple[str, str]:
    """(url, snapshot) of the page the agent last saw in this session."""
    if session is None:
        return "", ""
    for turn in reversed(session.history):
        structured = turn.observation.structured
        if (
            turn.call.channel == "browser"
            and isinstance(structured, Mapping)
            and structured.get("snapshot") is not None
        ):
            return str(structured.get("url") or ""), str(structured.get("snapshot") or "")
    return "", ""


def classify_browser(
    tool: str, arguments: Mapping[str, Any], session: Session | None, *, sensitive_domains: tuple[str, ...]
) -> SafetyVerdict:
    action = tool.removeprefix("browser_")
    if action in (
        "navigate",
        "snapshot",
        "navigate_back",
        "close",
        "take_screenshot",
        "tabs",
        "wait_for",
        "console_messages",
        "network_requests",
        "resize",
        "hover",
    ):
        return SafetyVerdict(SAFE, f"browser {action} reads pages")
    url, snapshot = last_page(session)
    host = (urlsplit(url).hostname or "") if url else ""
    sensitive = host_matches(host, sensitive_domains) if host and sensitive_domains else None
    where = f" on {host} (safety.sensitive_domains {sensitive!r})" if sensitive else (f" on {host}" if host else "")
    escalated = DESTRUCTIVE if sensitive else SIDE
    ref = str(arguments.get("ref") or "")
    described = str(arguments.get("element") or "")
    context = element_context(snapshot, ref) if ref and snapshot else None
    role, name, forms = context or ("", "", [])
    label = " / ".join(x for x in (f"{role} {name!r}".strip() if role or name else "", described) if x)
    if action == "type":
        if _SECRET_FIELD.search(f"{name} {described}"):
            return SafetyVerdict(escalated, f"types into a password or secret field ({label}){where}")
        if arguments.get("submit"):
            return SafetyVerdict(escalated, f"types and submits ({label or 'a field'}){where}")
        return SafetyVerdict(SAFE, f"types into {label or 'a field'} without submitting")
    if action in ("click", "press_key", "select_option", "drag"):
        if action == "press_key":
            key = str(arguments.get("key") or "")
            if key.lower() not in _SUBMITTING_KEYS:
                return SafetyVerdict(SAFE, f"presses {key!r}")
            return SafetyVerdict(escalated, f"presses {key} (may submit the focused form){where}")
        text = " ".join((name, described, *forms))
        if match := _ACTION_WORDS.search(text):
            return SafetyVerdict(escalated, f"clicks {label} which says {match.group(0).lower()!r}{where}")
        if forms and role == "button":
            return SafetyVerdict(escalated, f"clicks a button in form {forms[0]!r}{where}")
        return SafetyVerdict(SAFE, f"clicks {label or 'an element'}")
    return SafetyVerdict(SIDE, f"browser action {action!r} is not known to be read-only{where}")
