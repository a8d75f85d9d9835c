"""The learned router's current view of each tool, for the fidelity table.

Per tool: what the router would decide now for the tool's newest real call, and
P(acceptable) of each route beside it (sim, replay): from the loaded model where
the route was trained and the tool has enough labels, else the per-tool
Beta-Binomial estimate (policies/learned/policy.py `assess`, the decision path's
own code). The probabilities are asked as for a read-only call: the safety gate
only decides whether they are used (the decision is asked with the call's
recorded safety class).

Without a model card (`simroute train` not run yet) there is nothing to show:
the table says "not available yet".
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calls import Call, Session
from policies.learned import LearnedPolicy
from policies.safety.verdict import SAFE_READ, SafetyClass, SafetyVerdict

_SESSION = "dashboard-outlook"


def tool_outlook(
    policy: LearnedPolicy,
    channel: str,
    server: str,
    tool: str,
    example: dict[str, Any] | None,
    *,
    session: str = _SESSION,
) -> dict[str, Any]:
    """The decision and per-route probabilities for one tool. `example`: the tool's
    newest real record (its arguments, replay key and safety class), or None.
    `session`: the viewer's session id (with tokens, in its namespace: the
    statistics are that token's)."""
    arguments = (example or {}).get("arguments") or {}
    call = Call(channel, server, tool, arguments, session)
    recorded_key = (example or {}).get("replay_key") or (example or {}).get("call_key")
    # The example is a real recording of this very call: replay has something to serve.
    # Replay is eligible when the state knows a real recording of this key (as on the decision path).
    view = LearnedPolicy(
        policy.settings,
        replay_key_of=(lambda _call: recorded_key) if recorded_key else None,
        model=policy.model,
        state=policy.state,
    )
    probabilities = view.assess(call, Session(session), SAFE_READ)
    safety = _verdict(example)
    decided = view.assess(call, Session(session), safety)
    return {
        "decision": str(decided.route),
        "reason": decided.reason,
        "safety": str(safety.cls),
        "candidates": [c.to_json() for c in probabilities.candidates],
        "example": (example or {}).get("id"),
    }


def _verdict(example: dict[str, Any] | None) -> SafetyVerdict:
    try:
        return SafetyVerdict(
            SafetyClass((example or {}).get("safety_class") or "unknown"), (example or {}).get("safety_reason") or ""
        )
    except ValueError:
        return SafetyVerdict(SafetyClass.UNKNOWN, "unreadable safety class")


@dataclass
class RouterOutlook:
    """Keeps a learned policy current for the dashboard: the serving runtime's own
    (`service` given) or, with none, one built on first use once a model card exists
    (`make_service`), its model reloaded when the file changes and its statistics
    refreshed at most every `refresh_s`."""

    card: Path | None
    store: Any
    make_service: Any = None  # () -> LearnedService
    service: Any = None
    refresh_s: float = 30.0
    owned: bool = field(default=False, init=False)
    _refreshed: float = field(default=0.0, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)  # one service, made once

    async def policy(self) -> LearnedPolicy | None:
        if self.card is None or not self.card.exists():
            return None
        async with self._lock:
            return await self._current()

    async def _current(self) -> LearnedPolicy | None:
        if self.service is None:
            if self.make_service is None:
                return None
            self.service, self.owned = self.make_service(), True
            await self.service.start()
            self._refreshed = time.monotonic()
        elif self.owned:  # the runtime's own service keeps itself current
            if self.service._file_signature() != self.service._file_seen:
                await self.service.load_file()
            if time.monotonic() - self._refreshed >= self.refresh_s:
                await self.service.refresh()
                self._refreshed = time.monotonic()
        return self.service.policy

    async def annotate(self, rows: list[dict[str, Any]], *, namespaces: tuple[str, ...] | None = None) -> None:
        """Add each fidelity row's `router` outlook (None: not available yet), as the
        viewer's token sees it (`namespaces`: its own first)."""
        session = f"{namespaces[0]}{_SESSION}" if namespaces else _SESSION
        policy = await self.policy()
        for row in rows:
            row["router"] = None
            if policy is None or policy.model is None:
                continue
            examples = await self.store.examples(
                row["channel"],
                row["server"],
                row["tool"],
                exclude_session=session,
                call_key=None,
                limit=1,
                namespaces=namespaces,
            )
            example = examples[0] if examples else None
            row["router"] = tool_outlook(policy, row["channel"], row["server"], row["tool"], example, session=session)
