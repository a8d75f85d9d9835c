"""Replay across arguments that a tool only echoes back.

Agents in different episodes call the same tool with environment-specific values
(a repository path, a temp directory), so the replay key differs every time and
nothing replays. Where the real answers show that an argument's value only
appears verbatim in the answer, and the rest of the answer is identical for
different values, a call with a new value may replay a recording made for
another value, with the value substituted.

Evidence is kept per (tool, top-level string argument): answers of calls that
differ only in that argument are compared with the value replaced by a
placeholder. Two different values giving the same templated answer count for;
one pair that differs anywhere else (a repository whose contents differ) rules
the argument out for good. An argument is generalised once it has at least one
agreeing pair and no differing one. Template keys keep the replay key's token
namespace, so a recording is never served across tokens.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

from calls import Observation, ReplayAlias, call_key
from shadow.compare.substitution import json_escaped

PLACEHOLDER = "\x00echo\x00"
MIN_VALUE_CHARS = 4  # shorter values appear in answers by chance
MAX_TEMPLATES = 100_000


@dataclass(frozen=True, slots=True)
class _Seen:
    tool: str
    path: str
    value: str
    answer: str  # digest of the templated answer
    replay_key: str  # the latest recording of this template


def namespace_prefix(replay_key: str) -> str:
    """The token namespace a replay key starts with (`alice/`), or ''."""
    token, slash, _ = replay_key.partition("/")
    return f"{token}/" if slash else ""


def template_key(replay_key: str, channel: str, server: str, tool: str, arguments: dict[str, Any], path: str) -> str:
    return namespace_prefix(replay_key) + call_key(channel, server, tool, {**arguments, path: PLACEHOLDER})


def echoed_paths(arguments: dict[str, Any], text: str) -> list[tuple[str, str]]:
    """(argument, value) of the string arguments whose value the answer text holds verbatim."""
    out = []
    for path in sorted(arguments):
        value = arguments[path]
        if isinstance(value, str) and len(value) >= MIN_VALUE_CHARS and json_escaped(value) in text:
            out.append((path, value))
    return out


def answer_text(observation: Observation) -> str:
    return json.dumps(
        [observation.content, observation.structured, observation.is_error], sort_keys=True, ensure_ascii=False
    )


class EchoEvidence:
    def __init__(self) -> None:
        self._templates: OrderedDict[str, _Seen] = OrderedDict()
        self.agree: Counter[tuple[str, str]] = Counter()  # (tool key, argument) -> pairs agreeing
        self.differ: Counter[tuple[str, str]] = Counter()  # ... -> pairs differing beyond the value

    def generalised(self, tool: str, path: str) -> bool:
        return self.agree[(tool, path)] > 0 and not self.differ[(tool, path)]

    def alias(
        self, tool: str, replay_key: str, channel: str, server: str, name: str, arguments: dict[str, Any]
    ) -> ReplayAlias | None:
        """A recording this call may replay with a value substituted, if the evidence allows."""
        return _alias(self.generalised, self._templates, tool, replay_key, channel, server, name, arguments)

    def observe(
        self,
        tool: str,
        replay_key: str,
        channel: str,
        server: str,
        name: str,
        arguments: dict[str, Any],
        observation: Observation,
    ) -> None:
        """A real answer of a read-only call."""
        text = answer_text(observation)
        for path, value in echoed_paths(arguments, text):
            key = template_key(replay_key, channel, server, name, arguments, path)
            answer = hashlib.blake2b(
                text.replace(json_escaped(value), PLACEHOLDER).encode(), digest_size=16
            ).hexdigest()
            seen = self._templates.get(key)
            if seen is not None and seen.value != value:
                (self.agree if seen.answer == answer else self.differ)[(tool, path)] += 1
            self._templates[key] = _Seen(tool, path, value, answer, replay_key)
            self._templates.move_to_end(key)
            while len(self._templates) > MAX_TEMPLATES:
                self._templates.popitem(last=False)

    def index(self) -> EchoIndex:
        """What the decision path needs: the templates of generalised arguments."""
        generalised = {pair for pair in self.agree if self.generalised(*pair)}
        templates = {key: seen for key, seen in self._templates.items() if (seen.tool, seen.path) in generalised}
        return EchoIndex(frozenset(generalised), templates)


@dataclass(frozen=True, slots=True)
class EchoIndex:
    """A snapshot of `EchoEvidence` for the decision path (pure lookups)."""

    generalised: frozenset[tuple[str, str]] = frozenset()
    templates: dict[str, _Seen] | None = None

    def alias(
        self, tool: str, replay_key: str, channel: str, server: str, name: str, arguments: dict[str, Any]
    ) -> ReplayAlias | None:
        if not self.generalised or not self.templates:
            return None
        return _alias(
            lambda t, p: (t, p) in self.generalised, self.templates, tool, replay_key, channel, server, name, arguments
        )


def _alias(
    generalised, templates, tool: str, replay_key: str, channel: str, server: str, name: str, arguments: dict[str, Any]
):
    for path in sorted(arguments):
        value = arguments[path]
        if not isinstance(value, str) or len(value) < MIN_VALUE_CHARS or not generalised(tool, path):
            continue
        seen = templates.get(template_key(replay_key, channel, server, name, arguments, path))
        if seen is not None and seen.value != value:
            return ReplayAlias(seen.replay_key, path, seen.value, value)
    return None
