"""The config's `safety` and `rehearsal` sections: what the safety gate classifies and
holds back, and what rehearsal lets run real (policies/safety/, policies/rehearsal.py).
Strict pydantic models; each field's description is the configuration reference's text."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveInt

from backends.options import Strict

SafetyClassName = Literal["safe", "side_effect", "destructive"]


class SafetyConfig(Strict):
    """The safety gate: every call is classed safe, side_effect or destructive."""

    max_command_chars: PositiveInt = Field(
        default=10_000, description="Longer shell command lines are not parsed, and never `safe`."
    )
    trusted_servers: list[str] = Field(
        default=[], description="MCP servers whose tool annotations may also make a call safer."
    )
    production_hosts: list[str] = Field(
        default=[], description="HTTP hosts (globs, with subdomains) where any write is `destructive`."
    )
    sensitive_domains: list[str] = Field(
        default=[], description="Sites where submitting, buying, deleting… in a browser is `destructive`."
    )
    http_safe_methods: list[str] = Field(default=["GET", "HEAD", "OPTIONS"], description="HTTP methods that read.")
    tools: dict[str, dict[str, SafetyClassName]] = Field(
        default={}, description="Per server and tool (globs): the class, overriding the classifier."
    )

    def settings(self):
        from policies.safety import SafetySettings
        from policies.safety.verdict import SafetyClass

        return SafetySettings(
            max_command_chars=self.max_command_chars,
            trusted_servers=tuple(self.trusted_servers),
            production_hosts=tuple(self.production_hosts),
            sensitive_domains=tuple(self.sensitive_domains),
            http_safe_methods=frozenset(m.upper() for m in self.http_safe_methods),
            tools=tuple(
                (server, tool, SafetyClass(cls)) for server, tools in self.tools.items() for tool, cls in tools.items()
            ),
        )


class RehearsalConfig(Strict):
    """Rehearsal: calls whose class is diverted on their channel never reach the real side."""

    enabled: bool = Field(
        default=False, description="Divert calls whose class is in `rehearsal.divert` away from the real side."
    )
    on_divert: Literal["sim", "deny", "fork"] = Field(
        default="sim",
        description=(
            "What a diverted call gets: `sim`, `deny`, or `fork` (run on a throwaway copy of the real state where"
            " the channel can fork, the shell; else `sim`)."
        ),
    )
    divert: dict[Literal["shell", "mcp", "http", "browser"], list[SafetyClassName]] = Field(
        default={},
        description="Per channel, the classes diverted (default shell: destructive; others: side_effect, destructive).",
    )
    allow: list[Any] = Field(default=[], description="Rules that run before the gate, in the form of `rules`.")
