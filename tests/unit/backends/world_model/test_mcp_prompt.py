"""The MCP-domain messages, pinned exactly for a 3-step session."""

import json
from pathlib import Path

from backends.world_model.mcp_prompt import build_mcp_messages
from backends.world_model.prompt import OMITTED

GOLDEN = Path(__file__).parent / "golden" / "mcp_three_step_session.json"
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "list_dir",
        "description": "List a folder",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
]


def three_step_messages(**overrides):
    arguments = dict(
        server="files",
        tools=TOOLS,
        history=[
            ({"name": "list_dir", "arguments": {"path": "/app"}}, "README.md\nsrc/"),
            ({"name": "read_file", "arguments": {"path": "/app/README.md"}}, "# App\nRun it with make."),
        ],
        action={"name": "read_file", "arguments": {"path": "/app/src/main.py"}},
        demonstrations=[
            ({"name": "read_file", "arguments": {"path": "/srv/b.py"}}, "import os"),
            ({"name": "read_file", "arguments": {"path": "/app/src/util.py"}}, "def helper():\n    return 1"),
        ],
        initial_state="A Python project in /app.",
        simulation_instruction="Files are small.",
    )
    arguments.update(overrides)
    return build_mcp_messages(**arguments)


def test_three_step_session_matches_golden():
    # To change the wording on purpose: regenerate the file, read it, commit it.
    assert three_step_messages() == json.loads(GOLDEN.read_text())


def test_layout_properties():
    messages = three_step_messages()
    # system, two history turns, two demonstration turns, the current action
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 4 + ["user"]
    system = messages[0]["content"]
    assert '"name": "read_file"' in system and "## Initial state" in system and "## Simulation instruction" in system
    assert messages[2]["content"] == "**Environment Observation:**\nREADME.md\nsrc/"
    # Demonstrations are marked turns after the history, the best one last, right
    # before the current action: small models copy the format of the turn before theirs.
    assert "in another session" in messages[5]["content"] and "/srv/b.py" in messages[5]["content"]
    assert "/app/src/util.py" in messages[7]["content"] and messages[8]["content"].endswith(
        "def helper():\n    return 1"
    )
    final = messages[-1]["content"]
    assert final.startswith("### Turn 5\n**Action:**") and "main.py" in final
    assert final.endswith("inside <predicted_observation></predicted_observation>, in the server's native format.")


def test_prefix_is_stable_from_step_to_step():
    step2 = three_step_messages()
    step3 = three_step_messages(
        history=[
            ({"name": "list_dir", "arguments": {"path": "/app"}}, "README.md\nsrc/"),
            ({"name": "read_file", "arguments": {"path": "/app/README.md"}}, "# App\nRun it with make."),
            ({"name": "read_file", "arguments": {"path": "/app/src/main.py"}}, "print('hi')"),
        ],
        action={"name": "list_dir", "arguments": {"path": "/app/src"}},
    )
    system_and_history = 1 + 2 * 2  # step 2's system message and its two history turns
    assert step3[:system_and_history] == step2[:system_and_history]


def test_trimming_shrinks_the_tool_list_first_then_drops_oldest_turns_with_a_marker():
    history = [({"name": "read_file", "arguments": {"path": f"/f{i}"}}, "x" * 300) for i in range(10)]
    messages = three_step_messages(history=history, budget_tokens=600, count_tokens=lambda t: len(t) // 4)
    assert '"list_dir"' not in messages[0]["content"] and "inputSchema" not in messages[0]["content"]
    # The called tool keeps its full definition, in the last turn.
    final = messages[-1]["content"]
    assert final.startswith("Definition of the tool `read_file`:") and '"inputSchema"' in final
    kept = (len(messages) - 2) // 2 - 2  # turns shown, less the two demonstrations
    assert messages[1]["content"].startswith(OMITTED.format(count=len(history) - kept))
    assert sum(len(m["content"]) // 4 + 8 for m in messages) <= 600


def test_a_trimmed_tool_list_does_not_depend_on_the_called_tool():
    # Otherwise a step calling another tool changes the system message, and the
    # model runner re-reads the whole prompt instead of reusing its cached prefix.
    history = [({"name": "read_file", "arguments": {"path": f"/f{i}"}}, "x" * 40) for i in range(3)]

    def messages_for(tool):
        return three_step_messages(
            history=history,
            demonstrations=[],
            action={"name": tool, "arguments": {"path": "/app"}},
            budget_tokens=420,
            count_tokens=lambda t: len(t) // 4,
        )

    read, listing = messages_for("read_file"), messages_for("list_dir")
    assert "inputSchema" not in read[0]["content"]  # trimmed
    assert read[:-1] == listing[:-1]
    assert "Definition of the tool `list_dir`" in listing[-1]["content"] and "List a folder" in listing[-1]["content"]


def test_select_demonstrations_best_last():
    rows = [
        {
            "tool": "read_file",
            "arguments": {"path": "/a"},
            "observation": {"content": [{"type": "text", "text": "A"}], "is_error": False},
        },
        {
            "tool": "read_file",
            "arguments": {"path": "/b"},
            "observation": {"content": [{"type": "text", "text": "B"}], "is_error": False},
        },
        {
            "tool": "read_file",
            "arguments": {"path": "/b"},
            "observation": {"content": [{"type": "text", "text": "E"}], "is_error": True},
        },
        {
            "tool": "list_dir",
            "arguments": {"path": "/b"},
            "observation": {"content": [{"type": "text", "text": "L"}], "is_error": False},
        },
    ]
    from backends.world_model.grounding import ground, observation_text
    from calls import Call

    chosen = ground(rows, Call("mcp", "fs", "read_file", {"path": "/b"}, "s"), k=2).rows
    # The same call's answers (its error too: the real server gave one), best last.
    assert [observation_text(row) for row in chosen] == ["E", "B"]


def test_trimmed_history_keeps_its_prefix_for_several_steps():
    # A window sliding one turn per step would change the first history message at
    # every step (and the model runner would re-read the whole history each time).
    def step(n):
        history = [({"name": "read_file", "arguments": {"path": f"/f{i}"}}, "y" * 200) for i in range(n)]
        messages = three_step_messages(
            history=history, demonstrations=[], budget_tokens=1500, count_tokens=lambda t: len(t) // 4
        )
        return json.dumps(messages[:-1])  # everything before the final turn

    prefixes = [step(n) for n in range(30, 50)]
    stable = sum(1 for a, b in zip(prefixes, prefixes[1:], strict=False) if b.startswith(a[:-1]))
    assert stable >= 12  # of 19 step-to-step transitions (sliding one turn at a time: 0)


def test_an_oversized_demonstration_is_cut_to_fit():
    big = "z" * 20_000
    messages = three_step_messages(
        history=[],
        demonstrations=[
            ({"name": "read_file", "arguments": {"path": "/a"}}, "small"),
            ({"name": "read_file", "arguments": {"path": "/b"}}, big),
        ],
        budget_tokens=2000,
        count_tokens=lambda t: len(t) // 4,
    )
    assert sum(len(m["content"]) // 4 + 8 for m in messages) <= 2000
    assert '"/b"' in messages[-3]["content"] and "characters cut]" in messages[-2]["content"]  # the best one stays, cut
    assert not any('"/a"' in m["content"] for m in messages)  # the lesser one went first


def test_signatures_list_each_tool_on_one_line_with_its_parameters():
    from backends.world_model.mcp_prompt import build_system

    tools = [
        {
            "name": "get_note",
            "description": "One note's\ntitle and body.",
            "inputSchema": {
                "type": "object",
                "properties": {"note_id": {"type": "integer"}, "full": {"type": "boolean"}},
                "required": ["note_id"],
            },
        }
    ]
    system = build_system("notes", tools, tool_list="signatures")
    assert "## Tools\n- get_note(note_id: integer, full?: boolean): One note's title and body." in system
    assert "inputSchema" not in system and "inputSchema" in build_system("notes", tools)  # json: the full definitions
