"""Token namespaces in the learned router's statistics.

With tokens on, a session id is `token/session` (router/auth.py), and what the
learned router learns from one token's records is that token's: per-tool
statistics, labels, agreeing sessions, write effects and echo evidence are kept
under the namespace's prefix (`alice/` + the tool key). The namespaces the config
shares (`service.shared_namespaces`, e.g. a CI token's golden recordings) count
for every token: a token's view of a tool is its own statistics plus each shared
namespace's, and replay labels and recorded keys look in the shared namespaces
after the token's own (the same order as live replay, backends/replay.py).

A token with no record of its own still sees the shared namespaces' view, kept
under `SHARED_ONLY` (':' is not allowed in a token name, so it names no token).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from policies.learned.features import ToolStats

SHARED_ONLY = ":shared/"


def namespace_of(session_id: str) -> str:
    """The token namespace a (namespaced) session id lives in, as a prefix: `alice/`, or ''."""
    token, slash, _ = session_id.partition("/")
    return f"{token}/" if slash else ""


@dataclass(frozen=True, slots=True)
class Tenancy:
    """How statistics are kept apart: `namespaced` when tokens are on; `shared`, the
    shared namespaces' names."""

    namespaced: bool = False
    shared: tuple[str, ...] = ()

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The shared namespaces as prefixes (none without tokens)."""
        return tuple(f"{name}/" for name in self.shared) if self.namespaced else ()

    def own(self, session_id: str) -> str:
        """The prefix of a session's own statistics ('' without tokens)."""
        return namespace_of(session_id) if self.namespaced else ""

    def visible_keys(self, replay_key: str, session_id: str) -> list[str]:
        """A replay key in the session's namespace, then in each shared one."""
        own = self.own(session_id)
        prefixes = self.prefixes
        if not prefixes or not replay_key.startswith(own):
            return [replay_key]
        bare = replay_key[len(own) :]
        return [replay_key, *(prefix + bare for prefix in prefixes if prefix != own)]

    def view_key(self, session_id: str, tool: str, known: Mapping[str, object]) -> str:
        """The key of a session's view of `tool` in a snapshot's statistics `known`:
        its namespace's, else (a token new to the tool) the shared namespaces' alone."""
        key = self.own(session_id) + tool
        if key in known or not self.prefixes:
            return key
        return SHARED_ONLY + tool

    def views(self, stats: Mapping[str, ToolStats]) -> dict[str, ToolStats]:
        """Each namespace's view of each tool: its own statistics plus the shared
        namespaces' (and the shared namespaces' alone under `SHARED_ONLY`)."""
        prefixes = self.prefixes
        if not prefixes:
            return dict(stats)
        by_namespace: dict[str, dict[str, ToolStats]] = {}
        for key, value in stats.items():
            own = _prefix_of(key)
            by_namespace.setdefault(own, {})[key[len(own) :]] = value
        shared_tools = {tool for prefix in prefixes for tool in by_namespace.get(prefix, {})}
        out: dict[str, ToolStats] = {}
        for own in [*by_namespace, SHARED_ONLY]:
            mine = by_namespace.get(own, {})
            for tool in set(mine) | shared_tools:
                parts = [mine[tool]] if tool in mine else []
                parts += [by_namespace[p][tool] for p in prefixes if p != own and tool in by_namespace.get(p, {})]
                out[own + tool] = merged(parts)
        return out


NO_TOKENS = Tenancy()  # tokens off: one namespace


def _prefix_of(key: str) -> str:
    """The namespace prefix of a statistics key (before the tool key, whose server may hold '/')."""
    slash, sep = key.find("/"), key.find("\x1f")
    return key[: slash + 1] if 0 <= slash < sep else ""


def merged(parts: Iterable[ToolStats]) -> ToolStats:
    """The sum of several namespaces' statistics of one tool."""
    total = ToolStats()
    for part in parts:
        for spec in fields(ToolStats):
            setattr(total, spec.name, getattr(total, spec.name) + getattr(part, spec.name))
    return total
