"""One entry for every channel: `SafetyClassifier.classify(call, session)`.

Pure: the tool definitions MCP annotations come from are reached through a
lookup callable built at start (from the record store's tool snapshots and the
listings the MCP front door sees), never read on the decision path.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from calls import Call, Session
from policies.safety.browser import classify_browser
from policies.safety.http import classify_http
from policies.safety.mcp import classify_mcp
from policies.safety.shell import classify_shell
from policies.safety.verdict import SafetyClass, SafetyVerdict

ToolLookup = Callable[[str, str], Mapping[str, Any] | None]
_MAX_CACHED_TOOLS = 4096  # a bound, whatever tool names calls carry


def no_tools(server: str, tool: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class SafetySettings:
    """The `safety` config section, as the classifiers use it."""

    max_command_chars: int = 10_000
    trusted_servers: tuple[str, ...] = ()
    production_hosts: tuple[str, ...] = ()
    sensitive_domains: tuple[str, ...] = ()
    http_safe_methods: frozenset[str] = frozenset({"GET", "HEAD", "OPTIONS"})
    # (server glob, tool glob, class), first match wins
    tools: tuple[tuple[str, str, SafetyClass], ...] = ()

    def tool_override(self, server: str, tool: str) -> SafetyClass | None:
        for server_glob, tool_glob, cls in self.tools:
            if fnmatch.fnmatchcase(server, server_glob) and fnmatch.fnmatchcase(tool, tool_glob):
                return cls
        return None


@dataclass(slots=True)
class SafetyClassifier:
    settings: SafetySettings = field(default_factory=SafetySettings)
    tools_meta: ToolLookup = no_tools
    # An MCP tool's verdict depends only on its definition: kept per (server, tool) while
    # the catalog hands out the same definition object (a new listing makes new ones).
    _mcp_verdicts: dict[tuple[str, str], tuple[Any, SafetyVerdict]] = field(default_factory=dict, repr=False)

    def classify(self, call: Call, session: Session | None = None) -> SafetyVerdict:
        """The call's class and why. May raise on a classifier bug: the caller records
        `unknown` and rehearsal fails closed."""
        settings = self.settings
        override = settings.tool_override(call.server, call.tool)
        if override is not None and call.channel != "mcp":
            return SafetyVerdict(override, f"safety.tools sets {call.server}.{call.tool} to {override}")
        if call.channel == "shell":
            command = call.arguments.get("command")
            if not isinstance(command, str):
                return SafetyVerdict(SafetyClass.SIDE_EFFECT, "no command text to analyse", analysed=False)
            return classify_shell(command, max_chars=settings.max_command_chars)
        if call.channel == "http":
            return classify_http(
                call.server,
                call.arguments,
                safe_methods=settings.http_safe_methods,
                production_hosts=settings.production_hosts,
            )
        if call.channel == "browser":
            return classify_browser(call.tool, call.arguments, session, sensitive_domains=settings.sensitive_domains)
        definition = self.tools_meta(call.server, call.tool)
        key = (call.server, call.tool)
        cached = self._mcp_verdicts.get(key)
        if cached is not None and cached[0] is definition:
            return cached[1]
        verdict = classify_mcp(
            call.server, call.tool, definition, trusted=call.server in settings.trusted_servers, override=override
        )
        if len(self._mcp_verdicts) >= _MAX_CACHED_TOOLS:
            self._mcp_verdicts.clear()
        self._mcp_verdicts[key] = (definition, verdict)
        return verdict


def classify(
    call: Call,
    *,
    tools_meta: ToolLookup = no_tools,
    settings: SafetySettings | None = None,
    session: Session | None = None,
) -> SafetyVerdict:
    """Classify one call (a convenience over `SafetyClassifier`)."""
    return SafetyClassifier(settings or SafetySettings(), tools_meta).classify(call, session)
