"""The Terminal domain: shell commands as keystrokes, terminal screens as observations.

Action      = a JSON array of keystrokes, e.g. [{"keystrokes": "ls -la\\n", "duration": 30}]
Observation = the screen after it: the command's echo, its output and the next
              prompt, which shows the exit status: `[0] agent@sandbox:/workspace$`
Initial     = the first turn's **Current State** is the empty prompt; the system
              message describes OS, user, working directory and workspace files.

A prediction becomes a `ShellResult` like the real sandbox's: the exit code and
working directory are read from the predicted prompt line. The in-process
model runner's grammar forces that line (within the token budget: the output before it
is bounded), so they are always there; an endpoint model that leaves them out is
asked once more.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from backends.shell.screen import ShellResult, trim_screen
from backends.world_model.checks import check_terminal
from backends.world_model.domain import Constraint, CountTokens
from backends.world_model.grammars import terminal_grammar
from backends.world_model.grounding import Grounding, Row, ground, session_rows
from backends.world_model.prompt import (
    CLOSING,
    EXAMPLE_NOTE,
    RenderExample,
    omit_oldest,
    render_observation,
)
from calls import Call, Observation, Provenance, Session

TASK = (
    "You are a Linux terminal: a bash shell in a Debian sandbox. An AI agent types commands. "
    "For each action, predict exactly the screen the terminal shows next: the command's output as "
    "the real programs print it, then the next prompt. The prompt starts with the exit status of the "
    "command in brackets, then user@host:directory$. Stay consistent with everything shown earlier "
    "in this session: files created, the working directory, environment variables."
)
_PROMPT_LINE = re.compile(r"^\s*(?:\[(-?\d+)\]\s*)?([\w.-]+)@([\w.-]+):(.*?)\$\s*$")
# What the grammar reserves for the prompt line besides the echo: "[255] ", the
# user@host head and up to 60 bytes of working directory (grammars.terminal_grammar).
PROMPT_LINE_ROOM = 90

Example = tuple[str, ShellResult]  # (command, result)


class TerminalDomain:
    def __init__(
        self,
        *,
        user: str = "agent",
        hostname: str = "sandbox",
        home_cwd: str = "/workspace",
        describe_workspace: Callable[[], str] = lambda: "",
        records_for: Callable[[Call], Sequence[Row]] = lambda call: (),
        call_key_of: Callable[[Call], str] | None = None,
        demonstrations: int = 2,
        initial_state: str | None = None,
        simulation_instruction: str | None = None,
        screen_lines: int = 200,
        screen_chars: int = 16000,
    ) -> None:
        self.user, self.hostname, self.home_cwd = user, hostname, home_cwd
        self.describe_workspace = describe_workspace
        self.records_for = records_for
        self.call_key_of = call_key_of
        self.demonstrations = demonstrations
        self.initial_state = initial_state
        self.simulation_instruction = simulation_instruction
        self.screen_lines, self.screen_chars = screen_lines, screen_chars

    # --- the prompt ------------------------------------------------------------------

    def prompt(self, cwd: str | None, exit_code: int | None = None) -> str:
        status = f"[{exit_code}] " if exit_code is not None else ""
        return f"{status}{self.user}@{self.hostname}:{cwd or self.home_cwd}$ "

    def screen(self, command: str, result: ShellResult) -> str:
        """What the terminal shows after `command`: echo, output, next prompt."""
        output = result.output.rstrip("\n")
        lines = [command.rstrip("\n")] + ([output] if output else [])
        code: int | None = result.exit_code
        if result.timed_out:
            lines.append("^C")
            code = 130
        lines.append(self.prompt(result.cwd, code).rstrip())
        return "\n".join(lines)

    def system(self, world: str | None = None) -> str:
        """`world`: an episode's own initial state (its files, its world document)."""
        parts = [
            TASK,
            "## Action space\nEach action is a JSON array of keystrokes typed into the terminal: "
            '[{"keystrokes": "<text, ending with \\n to run it>", "duration": <seconds to wait>}].',
        ]
        state = [
            "OS: Debian GNU/Linux 13 (trixie), bash 5, coreutils, "
            f"python3, git. User: {self.user} (uid 1000, not root). "
            f"Host: {self.hostname}. Working directory: {self.home_cwd}. No network access. The root filesystem is "
            f"read-only; {self.home_cwd}, /tmp and the home directory are writable."
        ]
        listing = self.describe_workspace()
        if listing:
            state.append(f"Files in {self.home_cwd}:\n{listing}")
        if self.initial_state:
            state.append(self.initial_state.strip())
        if world:
            state.append(world.strip())
        parts.append("## Initial state\n" + "\n\n".join(state))
        if self.simulation_instruction:
            parts.append("## Simulation instruction\n" + self.simulation_instruction.strip())
        return "\n\n".join(parts)

    def render_action(self, command: str, timeout_s: Any, number: int, *, show_state: bool = True) -> str:
        keys = json.dumps(
            [{"keystrokes": command.rstrip("\n") + "\n", "duration": timeout_s or 30}], ensure_ascii=False
        )
        head = f"### Turn {number}\n"
        if number == 1 and show_state:
            head += f"**Current State:**\n{self.prompt(None).rstrip()}\n\n"
        return head + f"**Action:**\n```json\n{keys}\n```"

    def ground(
        self, call: Call, session: Session, *, count_tokens: CountTokens, budget_tokens: int = 1200
    ) -> Grounding:
        def usable(row: Row) -> bool:
            observation = row.get("observation") or {}
            return bool(observation.get("structured")) and bool((row.get("arguments") or {}).get("command"))

        def screen_of(row: Row) -> str:
            return self.screen(
                str(row["arguments"]["command"]), ShellResult.from_structured(row["observation"]["structured"])
            )

        grounding = ground(
            self.records_for(call),
            call,
            call_key=self.call_key_of(call) if self.call_key_of else None,
            own=session_rows(call, session),
            k=self.demonstrations,
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
            size_of=screen_of,
            usable=usable,
        )
        if grounding.answers:
            # The terminal grammar bounds the screen in bytes, and takes the echo and the
            # prompt line out of the budget first: a budget sized in tokens of recorded
            # screens would leave no room for any output. Size it in bytes instead.
            longest_output = max(
                len(ShellResult.from_structured(row["observation"]["structured"]).output.encode())
                for row in grounding.answers
            )
            echo = len(str(call.arguments.get("command", "")).encode()) + 1
            grounding.answer_tokens = longest_output + echo + PROMPT_LINE_ROOM
        return grounding

    def messages(
        self,
        call: Call,
        session: Session,
        *,
        budget_tokens: int,
        count_tokens: CountTokens,
        grounding: Grounding | None = None,
    ) -> list[dict[str, str]]:
        turns = [
            (
                turn.call.arguments.get("command", ""),
                turn.call.arguments.get("timeout_s"),
                ShellResult.from_structured(turn.observation.structured or {"output": turn.observation.text}),
            )
            for turn in session.history
            if turn.of_environment(call.channel, call.server)
        ]
        if grounding is None:
            grounding = self.ground(call, session, count_tokens=count_tokens, budget_tokens=budget_tokens // 3)
        demonstrations = [
            (str(row["arguments"]["command"]), ShellResult.from_structured(row["observation"]["structured"]))
            for row in grounding.rows
        ]

        def render_turn(index: int, number: int) -> tuple[str, str]:
            command, timeout_s, result = turns[index]
            return self.render_action(command, timeout_s, number), render_observation(self.screen(command, result))

        def render_example(command: str, result: ShellResult) -> RenderExample:
            # Marked as another session's: its files and directory are not this terminal's.
            return lambda number: (
                EXAMPLE_NOTE.format(what="screen of this terminal")
                + self.render_action(command, None, number, show_state=False),
                render_observation(self.screen(command, result)),
            )

        def render_final(number: int) -> str:
            return (
                self.render_action(call.arguments.get("command", ""), call.arguments.get("timeout_s"), number)
                + "\n\n"
                + CLOSING.format(what="terminal")
            )

        system = self.system(session.world_document_for(call.channel))
        examples = [render_example(command, result) for command, result in demonstrations]
        messages, _ = omit_oldest(  # the whole history when it fits
            system,
            len(turns),
            render_turn,
            render_final,
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
            examples=examples,
        )
        return messages

    # --- the answer --------------------------------------------------------------------

    def refusal(self, call: Call, session: Session) -> str | None:
        return None

    def constraint(self, call: Call, session: Session, grounding: Grounding, *, max_tokens: int) -> Constraint:
        command = str(call.arguments.get("command", ""))
        return Constraint(
            max_tokens=max_tokens,
            grammar=terminal_grammar(command=command, user=self.user, host=self.hostname, max_tokens=max_tokens),
            temperature=0.0 if grounding.unanimous else None,
            check=check_terminal,
        )

    def observation(self, call: Call, prediction: str | dict[str, Any]) -> Observation:
        result = self.parse_screen(call.arguments.get("command", ""), str(prediction))
        return Observation(
            [{"type": "text", "text": result.text()}],
            Provenance.SIM,
            is_error=result.is_error,
            structured=result.structured(),
        )

    def parse_screen(self, command: str, screen: str) -> ShellResult:
        lines = screen.replace("\r\n", "\n").strip("\n").split("\n")
        # The echo of the command (alone, or after a prompt) is not output.
        first = lines[0].strip() if lines else ""
        typed = command.strip()
        if typed and (first == typed or (first.endswith("$ " + typed) and _PROMPT_LINE.match(first[: -len(typed)]))):
            lines = lines[1:]
        # The first prompt line ends the command's screen: what a model writes after it
        # (another fence, talk about the answer) is not this command's output.
        first_prompt = next((i for i, line in enumerate(lines) if _PROMPT_LINE.match(line)), None)
        if first_prompt is not None:
            lines = lines[: first_prompt + 1]
        exit_code = cwd = None
        if lines and (match := _PROMPT_LINE.match(lines[-1])):
            exit_code = int(match.group(1)) if match.group(1) is not None else None
            cwd = match.group(4).strip() or None
            lines = lines[:-1]
        output, truncated = trim_screen("\n".join(lines), max_lines=self.screen_lines, max_chars=self.screen_chars)
        return ShellResult(output, exit_code, cwd, truncated=truncated)
