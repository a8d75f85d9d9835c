"""The Web domain: browser tool calls as actions, pages as observations.

Action      = a playwright-mcp tool call, e.g. {"name": "browser_click", "arguments": {"ref": "e6"}}
Observation = the page after it, as the real browser tools print it: page URL,
              title and the accessibility snapshot with [ref=…] markers
Initial     = the first turn's **Current State** is the page before the first
              action (no page: "No open tabs…"); the system message describes
              the browser, its tools, and the configured initial state.

Refusals answer without the model where the real browser would fail the same
way: a ref the last snapshot did not show, an action with no page open, a URL
outside the allowlist. A prediction is parsed leniently into a `PageState` of the
same shape as the real one; what the model left out (often URL and title) is
kept from the last page, or for a navigation taken from the action.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from backends.browser.page_state import (
    NO_OPEN_PAGE,
    NO_PAGE,
    PageState,
    blocked_message,
    host_allowed,
    normalize_url,
    parse_page_text,
    refs_in,
    trim_snapshot,
    unknown_ref_message,
)
from backends.world_model.checks import check_web
from backends.world_model.domain import Constraint, CountTokens
from backends.world_model.grammars import web_grammar
from backends.world_model.grounding import Grounding, Row, ground, session_rows
from backends.world_model.prompt import CLOSING, cut_to_fit, omit_oldest, render_observation, size
from calls import Call, Observation, Provenance, Session

TASK = (
    "You are a web browser (Chromium, driven through Playwright by an AI agent). For each browser "
    "action, predict exactly what the browser tools return next: the page URL, the page title and the "
    "accessibility snapshot of the page after the action, in the same YAML-like form with an element "
    "reference [ref=…] on every element the agent can interact with. Pages must be consistent with "
    "everything shown earlier in this session: following a link loads the page it points to, a "
    "submitted form shows its result, going back shows the previous page."
)
ACTIONS = [
    {"name": "browser_navigate", "arguments": {"url": "string"}, "description": "Navigate to a URL"},
    {"name": "browser_snapshot", "arguments": {}, "description": "Capture accessibility snapshot of the current page"},
    {
        "name": "browser_click",
        "arguments": {"ref": "string", "element": "string (optional)"},
        "description": "Perform click on a web page",
    },
    {
        "name": "browser_type",
        "arguments": {"ref": "string", "text": "string", "submit": "boolean (optional)"},
        "description": "Type text into editable element",
    },
    {"name": "browser_press_key", "arguments": {"key": "string"}, "description": "Press a key on the keyboard"},
    {"name": "browser_navigate_back", "arguments": {}, "description": "Go back to the previous page in the history"},
    {"name": "browser_close", "arguments": {}, "description": "Close the page"},
]
NEEDS_PAGE = {"browser_snapshot", "browser_click", "browser_type", "browser_press_key", "browser_navigate_back"}
NEEDS_REF = {"browser_click", "browser_type"}

# Snapshot sizes in the prompt, in characters. Earlier pages are shown shorter than the
# page the action applies to; each is rendered the same way at every step (the
# model runner's prefix cache holds) except the latest, which is shortened only when the
# prompt does not fit otherwise.
HISTORY_SNAPSHOT_CHARS = 1200
LATEST_SNAPSHOT_CHARS = (8000, 4000, 2000, 1000)
DEMONSTRATION_SNAPSHOT_CHARS = 2500

Example = tuple[dict[str, Any], PageState]  # (action, the page it showed)


class WebDomain:
    def __init__(
        self,
        *,
        records_for: Callable[[Call], Sequence[Row]] = lambda call: (),
        call_key_of: Callable[[Call], str] | None = None,
        demonstrations: int = 2,
        initial_state: str | None = None,
        simulation_instruction: str | None = None,
        snapshot_max_chars: int = 20000,
        allowed_domains: Sequence[str] | None = None,
    ) -> None:
        self.records_for = records_for
        self.call_key_of = call_key_of
        self.demonstrations = demonstrations
        self.initial_state = initial_state
        self.simulation_instruction = simulation_instruction
        self.snapshot_max_chars = snapshot_max_chars
        self.allowed_domains = list(allowed_domains or [])
        # The page each session's next prediction starts from (observation() is not
        # given the session); a bounded cache, the session's history is the truth.
        self._last_page: OrderedDict[str, PageState | None] = OrderedDict()

    # --- the session's pages ---------------------------------------------------------

    @staticmethod
    def pages(call: Call, session: Session) -> list[tuple[Call, PageState]]:
        """The browser turns of this session (same channel and server), oldest first."""
        return [
            (turn.call, page_of(turn.observation))
            for turn in session.history
            if turn.of_environment(call.channel, call.server)
        ]

    @staticmethod
    def current_page(turns: Sequence[tuple[Call, PageState]]) -> PageState | None:
        """The page shown now: the last turn's page, skipping errors that showed none;
        None when no page is open (nothing yet, or closed)."""
        for past, page in reversed(turns):
            if past.tool == "browser_close":
                return None
            if page.snapshot is not None or page.url is not None:
                return page
        return None

    def _remember(self, session_id: str, page: PageState | None) -> None:
        self._last_page[session_id] = page
        self._last_page.move_to_end(session_id)
        while len(self._last_page) > 1024:
            self._last_page.popitem(last=False)

    # --- refusals --------------------------------------------------------------------

    def refusal(self, call: Call, session: Session) -> str | None:
        page = self.current_page(self.pages(call, session))
        self._remember(session.id, page)
        if call.tool == "browser_navigate":
            url = normalize_url(str(call.arguments.get("url", "")))
            if not host_allowed(url, self.allowed_domains):
                return PageState(None, None, None, error=blocked_message(url, self.allowed_domains)).text()
            return None
        if call.tool in NEEDS_PAGE and page is None and not self.initial_state:
            return PageState(None, None, None, error=NO_OPEN_PAGE).text()
        if call.tool in NEEDS_REF:
            ref = str(call.arguments.get("ref", ""))
            if page is not None and ref not in refs_in(page.snapshot):
                return PageState(None, None, None, error=unknown_ref_message(ref)).text()
        return None

    # --- the prompt ------------------------------------------------------------------

    def system(self, world: str | None = None) -> str:
        """`world`: the session's world document (configured, or an episode's)."""
        parts = [TASK, "## Action space\n```json\n" + json.dumps(ACTIONS, indent=2) + "\n```"]
        state = []
        if self.allowed_domains:
            state.append(f"The browser may load pages of these sites only: {', '.join(self.allowed_domains)}.")
        if self.initial_state:
            state.append(self.initial_state.strip())
        if world:
            state.append(world.strip())
        if state:
            parts.append("## Initial state\n" + "\n\n".join(state))
        if self.simulation_instruction:
            parts.append("## Simulation instruction\n" + self.simulation_instruction.strip())
        return "\n\n".join(parts)

    @staticmethod
    def render_action(
        call_or_action: Call | dict[str, Any], number: int | None, current_state: str | None = None
    ) -> str:
        if isinstance(call_or_action, Call):
            action = {"name": call_or_action.tool, "arguments": call_or_action.arguments}
        else:
            action = call_or_action
        body = json.dumps(
            {"name": action["name"], "arguments": action.get("arguments", {})}, indent=2, ensure_ascii=False
        )
        head = f"### Turn {number}\n" if number is not None else ""
        if current_state is not None:
            head += f"**Current State:**\n{current_state}\n\n"
        return head + f"**Action:**\n```json\n{body}\n```"

    @staticmethod
    def page_text(page: PageState, max_chars: int) -> str:
        if page.snapshot is None:
            return page.text()
        snapshot, _ = trim_snapshot(page.snapshot, max_chars)
        return PageState(page.url, page.title, snapshot, error=page.error, events=page.events).text()

    def ground(
        self, call: Call, session: Session, *, count_tokens: CountTokens, budget_tokens: int = 1500
    ) -> Grounding:
        def usable(row: Row) -> bool:
            observation = row.get("observation") or {}
            return not observation.get("is_error") and bool((observation.get("structured") or {}).get("snapshot"))

        return ground(
            self.records_for(call),
            call,
            call_key=self.call_key_of(call) if self.call_key_of else None,
            own=session_rows(call, session),
            k=self.demonstrations,
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
            size_of=lambda row: self.page_text(
                PageState.from_structured(row["observation"]["structured"]), DEMONSTRATION_SNAPSHOT_CHARS
            ),
            usable=usable,
        )

    def messages(
        self,
        call: Call,
        session: Session,
        *,
        budget_tokens: int,
        count_tokens: CountTokens,
        grounding: Grounding | None = None,
    ) -> list[dict[str, str]]:
        turns = self.pages(call, session)
        first_state = self.initial_state.strip() if self.initial_state else NO_PAGE
        system = self.system(session.world_document_for(call.channel))
        # Demonstrations are (action, page) turns of their own, right before the current
        # action: small models answer in the real format only when a real observation of
        # the same tool is the turn just before. After the history, so the system +
        # history prefix stays byte-identical from step to step (the prefix cache holds).
        if grounding is None:
            grounding = self.ground(call, session, count_tokens=count_tokens, budget_tokens=budget_tokens // 3)
        demonstrations = [
            (
                {"name": call.tool, "arguments": row.get("arguments") or {}},
                PageState.from_structured(row["observation"]["structured"]),
            )
            for row in grounding.rows
        ]

        def demonstration_messages(examples: Sequence[Example], chars: int) -> list[dict[str, str]]:
            out = []
            for action, page in examples:
                out.append(
                    {"role": "user", "content": "An example from another session:\n" + self.render_action(action, None)}
                )
                out.append({"role": "assistant", "content": render_observation(self.page_text(page, chars))})
            return out

        examples = demonstration_messages(demonstrations, DEMONSTRATION_SNAPSHOT_CHARS)
        while len(demonstrations) > 1 and size(examples, count_tokens) > budget_tokens // 3:
            demonstrations = demonstrations[1:]  # the best is last and stays
            examples = demonstration_messages(demonstrations, DEMONSTRATION_SNAPSHOT_CHARS)
        if size(examples, count_tokens) > budget_tokens // 3:
            examples = demonstration_messages(demonstrations, DEMONSTRATION_SNAPSHOT_CHARS // 4)
        budget = budget_tokens - size(examples, count_tokens)

        def render_final(number: int) -> str:
            return (
                self.render_action(call, number, first_state if number == 1 else None)
                + "\n\n"
                + CLOSING.format(what="browser")
            )

        def fit(latest_chars: int) -> list[dict[str, str]]:
            def render_turn(index: int, number: int) -> tuple[str, str]:
                past, page = turns[index]
                cap = latest_chars if index == len(turns) - 1 else HISTORY_SNAPSHOT_CHARS
                return self.render_action(past, number, first_state if number == 1 else None), render_observation(
                    self.page_text(page, cap)
                )

            messages, _ = omit_oldest(  # the whole history when it fits
                system, len(turns), render_turn, render_final, budget_tokens=budget, count_tokens=count_tokens
            )
            return messages

        for latest_chars in LATEST_SNAPSHOT_CHARS:
            messages = fit(latest_chars)
            if size(messages, count_tokens) <= budget:
                break
        if size(messages, count_tokens) > budget and len(messages) >= 3:
            # Every earlier turn is gone and the page acted on is still too long: cut it.
            last = messages[-2]["content"]
            messages[-2]["content"] = cut_to_fit(last, size(messages, count_tokens) - budget, count_tokens)
        return messages[:-1] + examples + messages[-1:]  # the model runner reports an overflow if this does not fit

    # --- the answer ------------------------------------------------------------------

    def constraint(self, call: Call, session: Session, grounding: Grounding, *, max_tokens: int) -> Constraint:
        url = normalize_url(str(call.arguments.get("url", ""))) if call.tool == "browser_navigate" else None
        return Constraint(
            max_tokens=max_tokens,
            grammar=None if call.tool == "browser_close" else web_grammar(max_tokens=max_tokens, url=url),
            temperature=0.0 if grounding.unanimous else None,
            check=check_web,
        )

    def observation(self, call: Call, prediction: str) -> Observation:
        previous = self._last_page.get(call.session_id)
        if call.tool == "browser_close":
            # Closing always answers the same; whatever the model said, no page is left.
            page = PageState(None, None, None)
        else:
            if call.tool == "browser_navigate":
                # The URL the real browser would show, when the model does not say.
                previous = PageState(normalize_url(str(call.arguments.get("url", ""))), None, None)
            page = parse_page_text(str(prediction), previous=previous)
            if page.snapshot is not None:
                page.snapshot, page.truncated = trim_snapshot(page.snapshot, self.snapshot_max_chars)
            if page.url is None and page.snapshot is not None:
                page.url = "unknown"
        self._remember(call.session_id, page)
        structured = None if page.snapshot is None and page.url is None and page.is_error else page.structured()
        return Observation(
            [{"type": "text", "text": page.text()}], Provenance.SIM, is_error=page.is_error, structured=structured
        )


def page_of(observation: Observation) -> PageState:
    """The page an observation showed (real or simulated, from its structured content or text)."""
    if observation.structured and ("snapshot" in observation.structured or "url" in observation.structured):
        return PageState.from_structured(observation.structured)
    page = parse_page_text(observation.text)
    if observation.is_error and page.error is None:
        page.error = observation.text.strip()
    if page.error is not None and page.url is None and not (page.snapshot or "").strip():
        page.snapshot = None
    return page
