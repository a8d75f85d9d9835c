"""The Terminal domain: keystroke actions, screens with the status in the prompt,
and predictions read back into the real backend's shape."""

import json

from backends.shell.screen import ShellResult
from backends.world_model.terminal_domain import TerminalDomain
from calls import Call, Observation, Provenance, Session, Turn


def shell(command, **extra):
    return Call("shell", "shell", "shell_exec", {"command": command, **extra}, "s")


def real_turn(command, output, code, cwd):
    result = ShellResult(output, code, cwd)
    return Turn(
        shell(command),
        Observation([{"type": "text", "text": result.text()}], Provenance.REAL, structured=result.structured()),
    )


def test_messages_carry_the_real_history_as_screens():
    domain = TerminalDomain(describe_workspace=lambda: "README.md (10 bytes)", initial_state="A Python project.")
    session = Session(
        "s",
        history=[
            real_turn("echo hi > notes.txt", "", 0, "/workspace"),
            real_turn("cd src", "bash: cd: src: No such file or directory\n", 1, "/workspace"),
            Turn(
                Call("mcp", "time", "now", {}, "s"),
                Observation([{"type": "text", "text": "elsewhere"}], Provenance.REAL),
            ),
        ],
    )
    messages = domain.messages(
        shell("cat notes.txt"), session, budget_tokens=10_000, count_tokens=lambda t: len(t) // 4
    )
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    system = messages[0]["content"]
    assert "README.md (10 bytes)" in system and "A Python project." in system and "agent" in system
    assert "**Current State:**\nagent@sandbox:/workspace$" in messages[1]["content"]
    keys = json.loads(messages[1]["content"].split("```json\n")[1].split("\n```")[0])
    assert keys == [{"keystrokes": "echo hi > notes.txt\n", "duration": 30}]
    assert messages[4]["content"] == (
        "**Environment Observation:**\ncd src\nbash: cd: src: No such file or directory\n[1] agent@sandbox:/workspace$"
    )
    assert "Current State" not in messages[3]["content"] and "elsewhere" not in json.dumps(messages)
    assert "<predicted_observation>" in messages[-1]["content"] and "cat notes.txt" in messages[-1]["content"]


def test_a_prediction_becomes_a_result_with_status_only_when_shown():
    domain = TerminalDomain()
    shown = domain.observation(shell("cat notes.txt"), "cat notes.txt\nhi\n[0] agent@sandbox:/workspace$")
    assert (
        shown.structured["output"] == "hi"
        and shown.structured["exit_code"] == 0
        and shown.structured["cwd"] == "/workspace"
    )
    bare = domain.observation(shell("ls"), "notes.txt  src")
    assert bare.structured["output"] == "notes.txt  src"
    assert bare.structured["exit_code"] is None and bare.structured["cwd"] is None  # not shown: unknown
    assert "exit code unknown" in bare.text
    prompt_only = domain.parse_screen("cd /tmp", "agent@sandbox:/workspace$ cd /tmp\nagent@sandbox:/tmp$")
    assert prompt_only.output == "" and prompt_only.cwd == "/tmp" and prompt_only.exit_code is None


def test_old_turns_are_dropped_to_fit_the_budget():
    domain = TerminalDomain()
    session = Session("s", history=[real_turn(f"echo {i}", f"{i}\n" * 50, 0, "/workspace") for i in range(30)])
    messages = domain.messages(shell("pwd"), session, budget_tokens=1500, count_tokens=lambda t: len(t) // 4)
    assert sum(len(m["content"]) // 4 + 8 for m in messages) <= 1500
    assert "earlier turns omitted" in messages[1]["content"] and "echo 29" in json.dumps(messages)


def row(command, output, cwd="/workspace"):
    return {
        "tool": "shell_exec",
        "arguments": {"command": command},
        "session": "old",
        "observation": {"is_error": False, "structured": ShellResult(output, 0, cwd).structured()},
    }


def test_demonstrations_prefer_the_same_command_then_the_nearest():
    rows = [row("ls", "a b"), row("git status", "On branch main"), row("git log", "commit abc")]
    domain = TerminalDomain(records_for=lambda call: rows)
    chosen = domain.ground(shell("git status"), Session("s"), count_tokens=lambda t: len(t) // 4).rows
    assert [r["arguments"]["command"] for r in chosen] == ["git log", "git status"]  # best last


def test_the_grammar_forces_the_prompt_line_within_the_budget():
    from backends.world_model.grammars import terminal_grammar

    grammar = terminal_grammar(command="ls -la", user="agent", host="sandbox", max_tokens=64)
    assert grammar.startswith('root ::= "ls -la\\n" output prompt')
    assert 'prompt ::= "[" code "] agent@sandbox:" cwd "$"' in grammar
    # The output before the prompt line is bounded so that the line fits in the budget.
    bound = int(grammar.split("]{0,", 1)[1].split("}", 1)[0])
    assert 0 < bound <= 64 - len("ls -la\n") - len("[255] agent@sandbox:$")


def test_demonstrations_are_marked_turns_right_before_the_action():
    rows = [row("git status", "On branch main\n", "/repo"), row("git log", "commit abc\n", "/repo")]
    domain = TerminalDomain(records_for=lambda call: rows)
    session = Session("s", history=[real_turn("cd /workspace", "", 0, "/workspace")])
    messages = domain.messages(shell("git status"), session, budget_tokens=10_000, count_tokens=lambda t: len(t) // 4)
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert "in another session" in messages[3]["content"] and '"git log\\n"' in messages[3]["content"]
    # The best example is the turn right before the current action.
    assert messages[5]["content"].endswith('```json\n[{"keystrokes": "git status\\n", "duration": 30}]\n```')
    assert (
        messages[6]["content"] == "**Environment Observation:**\ngit status\nOn branch main\n[0] agent@sandbox:/repo$"
    )
    assert messages[7]["content"].startswith("### Turn 4\n**Action:**")


def test_a_warm_calls_budget_leaves_the_grammar_room_for_the_recorded_output():
    """The grammar counts bytes and reserves the echo and prompt line first: the
    budget of a call with recorded screens must leave room for output as long as theirs."""
    from backends.world_model.grammars import terminal_grammar
    from backends.world_model.grounding import generation_budget

    output = (
        "total 8\ndrwxr-xr-x 2 agent agent 4096 Jan  1 00:00 .\n-rw-r--r-- 1 agent agent   10 Jan  1 00:00 README.md\n"
    )
    rows = [row("ls -la", output)]
    domain = TerminalDomain(records_for=lambda call: rows)
    call = shell("ls -la")
    grounding = domain.ground(call, Session("s"), count_tokens=lambda t: len(t) // 4)
    max_tokens = generation_budget(grounding.answer_tokens, 512)
    grammar = domain.constraint(call, Session("s"), grounding, max_tokens=max_tokens).grammar
    bound = int(grammar.split("]{0,", 1)[1].split("}", 1)[0])
    assert bound >= len(output.encode())
    assert grammar == terminal_grammar(command="ls -la", user="agent", host="sandbox", max_tokens=max_tokens)


def test_the_first_prompt_line_ends_the_screen():
    """What a model writes after the prompt line (a fence, talk about its answer) is not output."""
    screen = (
        "cat notes.txt\nhello from the sandbox\n[0] agent@sandbox:/workspace$\n```\n\n"
        "This is a very simple example of a real-world observation.\n[1] agent@sandbox:/tmp$"
    )
    result = TerminalDomain().parse_screen("cat notes.txt", screen)
    assert (result.output, result.exit_code, result.cwd) == ("hello from the sandbox", 0, "/workspace")
