"""Ordered routing rules from the config file: `match` a call, pick a `route`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.matching import Matcher, compile_pattern, lookup
from router.types import Call, Decision, Route, Session

_MATCH_KEYS = {"server", "tool", "channel", "arguments"}
_RULE_KEYS = {"match", "route", "name", "reason"}


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    route: Route
    reason: str
    server: Matcher | None
    tool: Matcher | None
    channel: Matcher | None
    arguments: tuple[tuple[str, Matcher], ...]

    def matches(self, call: Call) -> bool:
        if self.channel is not None and not self.channel(call.channel):
            return False
        if self.server is not None and not self.server(call.server):
            return False
        if self.tool is not None and not self.tool(call.tool):
            return False
        return all(matcher(lookup(call.arguments, path)) for path, matcher in self.arguments)


def parse_rule(data: Any, *, index: int = 0) -> Rule:
    """Parse one rule mapping. Raises ValueError with the offending key in the
    message (as `key: problem`), which the config loader maps to a line."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a rule must be a mapping with 'match' and 'route', got {type(data).__name__}")
    unknown = set(data) - _RULE_KEYS
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: unknown rule key (expected one of {sorted(_RULE_KEYS)})")
    if "route" not in data:
        raise ValueError("route: missing (one of real, sim, replay, shadow, deny)")
    try:
        route = Route(data["route"])
    except ValueError as exc:
        raise ValueError(f"route: {data['route']!r} is not one of real, sim, replay, shadow, deny") from exc
    match = data.get("match", {})
    if match is None:
        match = {}
    if not isinstance(match, Mapping):
        raise ValueError("match: must be a mapping of server/tool/channel/arguments patterns")
    unknown = set(match) - _MATCH_KEYS
    if unknown:
        raise ValueError(f"match.{sorted(unknown)[0]}: unknown match key (expected one of {sorted(_MATCH_KEYS)})")
    arguments = match.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise ValueError("match.arguments: must be a mapping of dotted argument paths to patterns")

    def pattern(key: str) -> Matcher | None:
        if key not in match:
            return None
        try:
            return compile_pattern(match[key])
        except ValueError as exc:
            raise ValueError(f"match.{key}: {exc}") from exc

    compiled_args = []
    for path, value in arguments.items():
        try:
            compiled_args.append((str(path), compile_pattern(value)))
        except ValueError as exc:
            raise ValueError(f"match.arguments.{path}: {exc}") from exc
    name = str(data.get("name") or f"rule[{index}]")
    return Rule(
        name=name,
        route=route,
        reason=str(data.get("reason") or f"matched {name}"),
        server=pattern("server"),
        tool=pattern("tool"),
        channel=pattern("channel"),
        arguments=tuple(compiled_args),
    )


class RulesPolicy:
    """First matching rule decides."""

    name = "rules"

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = list(rules)

    def decide(self, call: Call, session: Session) -> Decision | None:
        for rule in self.rules:
            if rule.matches(call):
                return Decision(rule.route, f"rules:{rule.name}", rule.reason)
        return None
