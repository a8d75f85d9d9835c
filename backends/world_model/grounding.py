"""Which recorded real observations a simulated call is grounded in: a pure
ranking over record rows (`Record.to_json()` dicts), whatever store they come
from.

Order of preference (best LAST in the result: small models copy the turn
nearest to their answer):
  1. real answers to the same call key from other sessions at the same point of
     their session (the n-th time the session made the call, as this one is
     about to): for a stateful tool, the answer given in the nearest state (the
     third `list_notes` of a session that created two notes and deleted one);
  2. this session's own earlier observations of the same call (same resource);
  3. real answers to the same call key from other sessions, newest first;
  4. real answers of the same tool, nearest arguments first;
within a token budget and a count. Identical answers are shown once.

Also read from the rows: whether every recorded answer to the call key agrees
(at this point of a session, when there are answers from that point), and then
the simulator samples at temperature 0 (the answer is still the model's);
and how long the tool's real answers are (the generation budget follows them).

The store has to answer: "real records of (channel, server, tool) with call_key K
from other sessions, newest first, up to N; then up to M newest real records of
the tool from other sessions" — the rows are handed over unranked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from calls import Call, Session

Row = Mapping[str, Any]
CountTokens = Callable[[str], int]
_OTHER_OCCURRENCE = 3.0  # the score of the same call recorded at another point of a session
_COMPARED_CHARS = 200  # argument strings are compared on their first characters: bounded work


@dataclass(slots=True)
class Grounding:
    rows: list[Row] = field(default_factory=list)  # the chosen examples, best last
    unanimous: bool = False  # the call key has recorded answers and they all agree
    # The outcome those answers agree on (at this point of a session when there are
    # answers from that point): True all errors, False all successes, None mixed/none.
    outcome_error: bool | None = None
    answer_tokens: int | None = None  # the longest real answer of the tool seen, in tokens
    answers: list[Row] = field(default_factory=list)  # every real row of the tool seen (for shapes)


def observation_text(row: Row) -> str:
    observation = row.get("observation") or {}
    return "\n".join(b.get("text", "") for b in observation.get("content") or [] if b.get("type") == "text").strip()


def answer_of(row: Row, text_of: Callable[[Row], str] = observation_text) -> str:
    """What counts as the same answer: the error flag and the text."""
    observation = row.get("observation") or {}
    return ("error:" if observation.get("is_error") else "") + text_of(row)


def arguments_key(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def similarity(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """How close two argument objects are, 0..1: per top-level key, 1 when equal,
    a string ratio for two strings, 0 otherwise; averaged over the keys of both."""
    keys = set(a) | set(b)
    if not keys:
        return 1.0
    total = 0.0
    for key in keys:
        x, y = a.get(key), b.get(key)
        if x == y:
            total += 1.0
        elif isinstance(x, str) and isinstance(y, str):
            total += SequenceMatcher(None, x[:_COMPARED_CHARS], y[:_COMPARED_CHARS], autojunk=False).ratio()
        elif key in a and key in b:
            total += 0.25  # present in both, different values
    return total / len(keys)


def session_rows(call: Call, session: Session) -> list[Row]:
    """This session's earlier turns on the same channel and server, as record rows."""
    return [
        {
            "session": session.id,
            "channel": turn.call.channel,
            "server": turn.call.server,
            "tool": turn.call.tool,
            "arguments": turn.call.arguments,
            "observation": turn.observation.to_json(),
        }
        for turn in session.history
        if turn.of_environment(call.channel, call.server) and not turn.perturbed
    ]


def ground(
    rows: Iterable[Row],
    call: Call,
    *,
    call_key: str | None = None,
    own: Sequence[Row] = (),
    k: int = 2,
    budget_tokens: int = 1000,
    count_tokens: CountTokens = lambda text: len(text) // 3,
    size_of: Callable[[Row], str] = observation_text,
    usable: Callable[[Row], bool] = lambda row: True,
) -> Grounding:
    """The examples for `call` from recorded real `rows` (other sessions) and this
    session's `own` rows. `usable` filters rows a domain cannot show (no
    structured page, …); `size_of` is the text whose tokens count against the budget."""
    same_arguments = arguments_key(call.arguments)

    def same_call(row: Row) -> bool:
        if call_key is not None and row.get("call_key") == call_key:
            return True
        return row.get("tool") == call.tool and arguments_key(row.get("arguments") or {}) == same_arguments

    own_rows = [row for row in own if row.get("tool") == call.tool and same_call(row) and usable(row)]
    occurrence = len(own_rows) + 1  # this is the n-th time the session makes the call

    scored: list[tuple[float, int, Row]] = []
    keyed_answers: set[str] = set()
    in_state_answers: set[str] = set()  # answers to the call key at the same occurrence
    keyed_errors: set[bool] = set()
    in_state_errors: set[bool] = set()
    answers: list[Row] = []
    longest: int | None = None
    for order, row in enumerate(rows):
        if row.get("tool") != call.tool or not usable(row) or row.get("perturbation"):
            continue  # a perturbed answer (even only delayed) is never an example
        answers.append(row)
        text = size_of(row)
        tokens = count_tokens(text)
        longest = tokens if longest is None else max(longest, tokens)
        error = bool((row.get("observation") or {}).get("is_error"))
        if same_call(row):
            keyed_answers.add(answer_of(row, size_of))
            keyed_errors.add(error)
            if row.get("occurrence") == occurrence:
                in_state_answers.add(answer_of(row, size_of))
                in_state_errors.add(error)
                scored.append((4.5, order, row))
            else:
                scored.append((_OTHER_OCCURRENCE, order, row))
        elif not error:  # another call's error says little about this one
            scored.append((1.0 + similarity(call.arguments, row.get("arguments") or {}), order, row))
    for order, row in enumerate(reversed(own_rows)):  # the latest own observation is the best
        scored.append((4.0, -1 - order, row))

    if in_state_answers:
        # Recorded answers to this call at this point of a session say what the state
        # gives; the same call's answers at other points show other states, and a small
        # model copies the first example it sees, not the most relevant one.
        scored = [item for item in scored if item[0] != _OTHER_OCCURRENCE]
    # Best first (score, then newest = lowest order), identical answers once.
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen: list[Row] = []
    seen: set[str] = set()
    spent = 0
    for _, _, row in scored:
        if len(chosen) == k:
            break
        answer = answer_of(row, size_of)
        if answer in seen:
            continue
        cost = count_tokens(size_of(row))
        if chosen and spent + cost > budget_tokens:
            continue  # the best is always kept (a domain cuts it to fit); others only within budget
        seen.add(answer)
        chosen.append(row)
        spent += cost
    agreeing = in_state_answers or keyed_answers
    outcomes = in_state_errors or keyed_errors
    return Grounding(
        rows=list(reversed(chosen)),
        unanimous=len(agreeing) == 1,
        answer_tokens=longest,
        answers=answers,
        outcome_error=next(iter(outcomes)) if len(outcomes) == 1 else None,
    )


def generation_budget(answer_tokens: int | None, ceiling: int, *, floor: int = 48) -> int:
    """max_tokens for a tool whose longest real answer took `answer_tokens`: room for
    half as much again and a margin; never above `ceiling` (world_model.max_tokens)."""
    if answer_tokens is None:
        return ceiling
    return max(1, min(ceiling, max(floor, int(answer_tokens * 1.5) + 16)))
