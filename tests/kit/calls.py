"""Engine-level values for unit tests: a `Call` and a `Session` with the defaults most
tests do not care about, so a test spells out only what it is about."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from calls import Call, Observation, Session, SessionSlice, Turn

# The upstream a call of each channel is addressed to when a test does not name one:
# simroute's own channels are their own server; an MCP call goes to a generic one.
_DEFAULT_SERVER = {"shell": "shell", "browser": "browser"}


def make_call(
    tool: str = "tool",
    arguments: dict[str, Any] | None = None,
    *,
    server: str | None = None,
    channel: str = "mcp",
    session: str = "s",
) -> Call:
    """A call of `tool` with `arguments` (none by default) in session "s"."""
    return Call(
        channel,
        server or _DEFAULT_SERVER.get(channel, "srv"),
        tool,
        arguments if arguments is not None else {},
        session,
    )


def make_session(session_id: str = "s", history: Iterable[tuple[Call, Observation]] = ()) -> Session:
    """A fresh session that has already seen `history` (call, observation pairs, oldest first)."""
    return Session(session_id, history=[Turn(call, observation) for call, observation in history])


def with_slices(session: Session, *slices: SessionSlice) -> Session:
    """`session` holding `slices` (an episode's setup, its world, its own perturbation plan)."""
    for found in slices:
        session.slices[type(found)] = found
    return session
