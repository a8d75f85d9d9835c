"""`simroute explain`: the decision for a call, without executing anything.

Reads the config and the record store's tool snapshots (read-only), builds the
same policy chain the router runs, and reports for each call its route, the
deciding policy and why, the safety class and why, and the rules tried. No
upstream, sandbox, browser or model is started. Each call is explained in a
fresh agent session (no pins from earlier calls).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from backends.http.messages import HttpSettings, make_call
from calls import Call, Decision, Route, Session
from policies.base import decide
from policies.rules import RulesPolicy
from policies.safety.policy import SafetyPolicy
from router.addons.perturbation.addon import Perturber
from router.config import Config
from router.engine.tool_catalog import ToolCatalog
from router.reports.learned_policy import learned_json
from router.runtime.policy_chain import build_policies, virtual_servers

SESSION = "explain"
_FALLBACK = Decision(Route.REAL, "default", "no policy answered")
_CALL_KEYS = {"channel", "name", "tool", "server", "arguments", "session"}


class CallFormatError(ValueError):
    """A call to explain is malformed; the message says what is wrong."""


def call_from_json(data: Any, config: Config) -> Call:
    """The `Call` a JSON object describes, with the defaults of `simroute explain`:
    `channel` (default mcp), `name` or `tool`, `server` (shell: shell; browser:
    browser; mcp: the only configured server; http: from the URL), `arguments`.
    An HTTP call's `name` may be `METHOD URL`; host, path and query are derived as
    the proxy derives them."""
    if not isinstance(data, Mapping):
        raise CallFormatError(f"a call must be a JSON object, got {type(data).__name__}")
    unknown = set(data) - _CALL_KEYS
    if unknown:
        raise CallFormatError(f"unknown key {sorted(unknown)[0]!r} (expected {', '.join(sorted(_CALL_KEYS))})")
    channel = data.get("channel", "mcp")
    if channel not in ("mcp", "shell", "browser", "http"):
        raise CallFormatError(f"channel must be mcp, shell, browser or http, got {channel!r}")
    if "name" in data and "tool" in data and data["name"] != data["tool"]:
        raise CallFormatError("give the tool as 'name' or 'tool', not both")
    name = data.get("name", data.get("tool"))
    arguments = data.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise CallFormatError("arguments must be a JSON object")
    session = str(data.get("session") or SESSION)
    if channel == "http":
        return _http_call(name, dict(arguments), data.get("server"), config, session)
    if not isinstance(name, str) or not name:
        raise CallFormatError("name (or tool) is required: the tool's name")
    server = data.get("server")
    if server is None:
        server = _default_server(channel, config)
    return Call(channel, str(server), name, dict(arguments), session)


def _default_server(channel: str, config: Config) -> str:
    if channel in ("shell", "browser"):
        return channel
    servers = list(config.upstreams)
    if len(servers) == 1:
        return servers[0]
    raise CallFormatError(f"server is required for an MCP call (configured servers: {', '.join(servers) or 'none'})")


def _http_call(name: Any, arguments: dict[str, Any], server: Any, config: Config, session: str) -> Call:
    method, url = arguments.get("method"), arguments.get("url")
    if isinstance(name, str) and name.strip():
        head, _, tail = name.strip().partition(" ")
        if tail.strip():
            method, url = method or head, url or tail.strip()
        else:
            method = method or head
    if not isinstance(url, str) or "://" not in url:
        raise CallFormatError("an HTTP call needs a URL: name 'METHOD URL' or arguments.url (http://… or https://…)")
    body = arguments.get("body")
    headers = arguments.get("headers") or {}
    if not isinstance(headers, Mapping):
        raise CallFormatError("arguments.headers must be a JSON object")
    pairs = [(str(k), str(v)) for k, v in headers.items()]
    if isinstance(body, (dict, list)):
        data = json.dumps(body).encode()
        if not any(k.lower() == "content-type" for k, _ in pairs):
            pairs.append(("Content-Type", "application/json"))
    elif body is None:
        data = b""
    else:
        data = str(body).encode()
    settings = HttpSettings(
        record_headers=tuple(h.lower() for h in config.http.record_headers), max_body_bytes=config.http.max_body_bytes
    )
    call = make_call(
        method=str(method or "GET"), url=url, headers=pairs, body=data, session_id=session, settings=settings
    )
    if server is not None and str(server) != call.server:
        raise CallFormatError(f"server {server!r} does not match the URL's host {call.server!r}")
    return call


class Explainer:
    """The router's policy chain, built once, explaining calls one by one."""

    def __init__(self, config: Config, *, catalog: ToolCatalog | None = None, learned=None) -> None:
        self.config = config
        self.catalog = catalog if catalog is not None else ToolCatalog()
        self.learned = learned  # the learned router, loaded with its model and statistics
        for server, spec in config.virtual_servers.items():  # the gate reads a virtual server's declared annotations
            self.catalog.update(server, spec.definitions())
        self.policies = build_policies(config, tools_meta=self.catalog.lookup, learned=learned)
        self.virtual = virtual_servers(config)  # applied after the chain, as the engine applies it
        self.perturber = Perturber.from_config(config.perturbations)

    def explain(self, call: Call) -> dict[str, Any]:
        session = Session(call.session_id)
        chosen = decide(self.policies, call, session, fallback=_FALLBACK)
        decision = self.virtual.route(call, chosen)
        result: dict[str, Any] = {
            "call": {"channel": call.channel, "server": call.server, "tool": call.tool},
            "route": str(decision.route),
            "policy": decision.policy,
            "reason": decision.reason,
            "safety_class": decision.safety,
            "safety_reason": decision.safety_reason,
            "rules_tried": self._rules_tried(call, session, chosen),
        }
        if decision.policy == "learned" and self.learned is not None:
            gate = self.policies[0] if isinstance(self.policies[0], SafetyPolicy) else None
            result["learned"] = learned_json(
                self.learned, call, Session(call.session_id), gate.verdict(call, session) if gate else None
            )
        if decision.shadow_rate is not None:
            result["shadow_rate"] = decision.shadow_rate
        if decision.deadline_s is not None:
            result["deadline_s"] = decision.deadline_s
        perturbation = self._perturbation(call, session, decision)
        if perturbation is not None:
            result["perturbation"] = perturbation
        return result

    def _perturbation(self, call: Call, session: Session, decision: Decision) -> dict[str, Any] | None:
        """The plan the call falls under, its rules that match, and what the plan decides
        for it as a session's first call (the decision the router makes, n = 1)."""
        plan = self.perturber.plan_for(session, decision.perturbation)
        if plan is None:
            return None
        matched = plan.matching(call, decision.safety)
        seed, key = plan.key(session.id, session.seed)
        first = plan.decide([(rule, 1) for rule, _ in matched], seed=seed, key=key, step=0)
        return {
            "plan": plan.name,
            "rules_matching": [f"{plan.name}:{rule.name}" for rule, _ in matched],
            "first_call": first.meta() if first is not None else None,
        }

    def _rules_tried(self, call: Call, session: Session, decision: Decision) -> list[dict[str, Any]]:
        """The rule lists in chain order, each up to its first match; a list after the
        deciding policy was not reached."""
        gate = self.policies[0] if self.policies and isinstance(self.policies[0], SafetyPolicy) else None
        chain = gate.inner if gate is not None else self.policies
        verdict = gate.verdict(call, session) if gate is not None else None
        tried: list[dict[str, Any]] = []
        for policy in chain:
            rules = policy.allow if hasattr(policy, "allow") else policy
            if isinstance(rules, RulesPolicy):
                tried.extend(rules.trace(call, verdict))
                if any(entry["matched"] for entry in tried):
                    break
            if getattr(policy, "name", None) == decision.policy:
                break
        return tried


def read_calls(lines: Iterator[str]) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON or the CallFormatError) of each non-blank line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            yield number, CallFormatError(f"not JSON: {exc}")
