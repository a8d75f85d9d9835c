"""Ordered routing rules from the config file: `match` a call, pick a `route`.

Match keys: `channel`, `server`, `tool`, `arguments` (dotted paths; a key that
starts with `$` is JSONPath), `host` (without port), `method`, `path`,
`command` (any simple command of a shell command line, unwrapped), `safety`
(the gate's class), `session` (the agent session's id: a rehearsal or training
session named by its client). Actions: `route`, and optionally `shadow_rate`,
`deadline_s` and `perturbation` (a plan's name), carried on the decision. First
match wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from calls import Call, Decision, Mode, Session
from policies.errors import PolicyConfigError
from policies.matching import MISSING, Matcher, compile_argument_path, compile_pattern
from policies.safety.http import host_of
from policies.safety.shell import simple_commands
from policies.safety.verdict import SafetyClass, SafetyVerdict

_MATCH_KEYS = ("channel", "server", "tool", "arguments", "host", "method", "path", "command", "safety", "session")
_RULE_KEYS = {"match", "route", "name", "reason", "shadow_rate", "deadline_s", "perturbation"}
_CLASSES = {str(c) for c in SafetyClass}


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    route: Mode  # a route, or `learned` (resolved per call by the learned router)
    reason: str
    server: Matcher | None = None
    tool: Matcher | None = None
    channel: Matcher | None = None
    arguments: tuple[tuple[Any, Matcher], ...] = ()  # (lookup of one path, pattern)
    host: Matcher | None = None
    method: Matcher | None = None
    path: Matcher | None = None
    command: Matcher | None = None
    safety: frozenset[str] | None = None
    session: Matcher | None = None
    shadow_rate: float | None = None
    deadline_s: float | None = None
    perturbation: str | None = None  # the perturbation plan of the calls it decides

    def matches(self, call: Call, safety: SafetyVerdict | None = None) -> bool:
        if self.channel is not None and not self.channel(call.channel):
            return False
        if self.server is not None and not self.server(call.server):
            return False
        if self.tool is not None and not self.tool(call.tool):
            return False
        if self.session is not None and not self.session(call.session_id):
            return False
        if self.safety is not None and (safety is None or str(safety.cls) not in self.safety):
            return False
        if self.host is not None and not self.host(http_host(call)):
            return False
        if self.method is not None and not self.method(http_method(call)):
            return False
        if self.path is not None and not self.path(http_path(call)):
            return False
        if self.command is not None and not any(self.command(text) for text in shell_commands(call)):
            return False
        return all(any(matcher(value) for value in values(call.arguments)) for values, matcher in self.arguments)

    def decision(self, *, policy: str) -> Decision:
        route = self.route.route
        if route is None:
            raise PolicyConfigError(
                f"rule {self.name!r} routes to the learned router, which this rule list was not given"
            )
        return Decision(
            route,
            f"{policy}:{self.name}",
            self.reason,
            shadow_rate=self.shadow_rate,
            deadline_s=self.deadline_s,
            perturbation=self.perturbation,
        )


def http_host(call: Call) -> Any:
    if call.channel == "http":
        return host_of(call.server)
    if call.channel == "browser" and isinstance(call.arguments.get("url"), str):
        return urlsplit(call.arguments["url"]).hostname or MISSING
    return MISSING


def http_method(call: Call) -> Any:
    return str(call.arguments.get("method") or call.tool).upper() if call.channel == "http" else MISSING


def http_path(call: Call) -> Any:
    if call.channel == "http":
        return call.arguments.get("path") or "/"
    if call.channel == "browser" and isinstance(call.arguments.get("url"), str):
        return urlsplit(call.arguments["url"]).path or "/"
    return MISSING


def shell_commands(call: Call) -> list[str]:
    command = call.arguments.get("command") if call.channel == "shell" else None
    return simple_commands(command) if isinstance(command, str) else []


def parse_rule(data: Any, *, index: int = 0) -> Rule:
    """Parse one rule mapping. Raises PolicyConfigError with the offending key in the
    message (as `key: problem`), which the config loader maps to a line."""
    if not isinstance(data, Mapping):
        raise PolicyConfigError(f"a rule must be a mapping with 'match' and 'route', got {type(data).__name__}")
    unknown = set(data) - _RULE_KEYS
    if unknown:
        raise PolicyConfigError(f"{sorted(unknown)[0]}: unknown rule key (expected one of {sorted(_RULE_KEYS)})")
    if "route" not in data:
        raise PolicyConfigError("route: missing (one of real, sim, replay, shadow, deny, learned)")
    try:
        route = Mode(data["route"])
    except ValueError as exc:
        raise PolicyConfigError(
            f"route: {data['route']!r} is not one of real, sim, replay, shadow, deny, learned"
        ) from exc
    match = data.get("match", {})
    if match is None:
        match = {}
    if not isinstance(match, Mapping):
        raise PolicyConfigError(f"match: must be a mapping of {'/'.join(_MATCH_KEYS)} patterns")
    unknown = set(match) - set(_MATCH_KEYS)
    if unknown:
        raise PolicyConfigError(f"match.{sorted(unknown)[0]}: unknown match key (expected one of {list(_MATCH_KEYS)})")
    arguments = match.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise PolicyConfigError(
            "match.arguments: must be a mapping of dotted argument paths (or $ JSONPaths) to patterns"
        )

    def pattern(key: str) -> Matcher | None:
        if key not in match:
            return None
        try:
            return compile_pattern(match[key])
        except ValueError as exc:
            raise PolicyConfigError(f"match.{key}: {exc}") from exc

    compiled_args = []
    for path, value in arguments.items():
        try:
            compiled_args.append((compile_argument_path(str(path)), compile_pattern(value)))
        except ValueError as exc:
            raise PolicyConfigError(f"match.arguments.{path}: {exc}") from exc
    name = str(data.get("name") or f"rule[{index}]")
    return Rule(
        name=name,
        route=route,
        reason=str(data.get("reason") or f"matched {name}"),
        server=pattern("server"),
        tool=pattern("tool"),
        channel=pattern("channel"),
        arguments=tuple(compiled_args),
        host=pattern("host"),
        method=pattern("method"),
        path=pattern("path"),
        command=pattern("command"),
        safety=_safety_classes(match["safety"]) if "safety" in match else None,
        session=pattern("session"),
        shadow_rate=_number(data, "shadow_rate", low=0.0, high=1.0),
        deadline_s=_number(data, "deadline_s", low=0.0, high=None, open_low=True),
        perturbation=_plan_name(data.get("perturbation")),
    )


def _plan_name(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise PolicyConfigError(f"perturbation: must name a plan of perturbations.plans, got {value!r}")
    return value


def _safety_classes(value: Any) -> frozenset[str]:
    classes = [value] if isinstance(value, str) else value
    if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
        raise PolicyConfigError(f"match.safety: must be a class or a list of classes ({', '.join(sorted(_CLASSES))})")
    bad = [c for c in classes if c not in _CLASSES]
    if bad:
        raise PolicyConfigError(f"match.safety: {bad[0]!r} is not one of {', '.join(sorted(_CLASSES))}")
    return frozenset(classes)


def _number(
    data: Mapping[str, Any], key: str, *, low: float, high: float | None, open_low: bool = False
) -> float | None:
    if key not in data or data[key] is None:
        return None
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyConfigError(f"{key}: must be a number, got {value!r}")
    if value < low or (open_low and value == low) or (high is not None and value > high):
        bounds = f"{'>' if open_low else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
        raise PolicyConfigError(f"{key}: must be {bounds}, got {value!r}")
    return float(value)


class RulesPolicy:
    """First matching rule decides."""

    name = "rules"
    wants_safety = True  # the safety gate passes its verdict (for the `safety` match key)

    def __init__(self, rules: list[Rule], *, name: str = "rules", learned: Any = None) -> None:
        self.rules = list(rules)
        self.name = name
        # The learned router, for rules with `route: learned` (it decides the route;
        # the rule's own actions still apply).
        self.learned = learned

    def decide(self, call: Call, session: Session, safety: SafetyVerdict | None = None) -> Decision | None:
        for rule in self.rules:
            if rule.matches(call, safety):
                if rule.route is Mode.LEARNED and self.learned is not None:
                    decided = self.learned.decide(call, session, safety)
                    return replace(
                        decided,
                        reason=f"{self.name}:{rule.name} -> {decided.reason}",
                        shadow_rate=rule.shadow_rate,
                        deadline_s=rule.deadline_s,
                        perturbation=rule.perturbation,
                    )
                return rule.decision(policy=self.name)
        return None

    def trace(self, call: Call, safety: SafetyVerdict | None = None) -> list[dict[str, Any]]:
        """The rules tried for `call`, in order, up to the first that matches."""
        tried = []
        for rule in self.rules:
            matched = rule.matches(call, safety)
            tried.append({"rule": f"{self.name}:{rule.name}", "route": str(rule.route), "matched": matched})
            if matched:
                break
        return tried
