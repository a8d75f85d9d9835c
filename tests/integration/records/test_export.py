"""`simroute export` on a store filled by real runs, as a user runs it: simroute in
front of the test toolbox MCP server (shadowed against an OpenAI-compatible model
stub that keeps the prompts it was sent), the shell sandbox, the browser, the HTTP
channel, a replaying session and a simulated one; then every file of the dataset is read."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import httpx2 as httpx
import pytest
from kit.export import export_dataset, lines, load_agentworldbench
from kit.http import start_proxy
from kit.launch import meta_of, records_of, stdio_client, toolbox_server, write_config
from kit.model_stub import ModelStub
from servers.http_upstream import serve_upstream
from servers.web_pages import WebPages

from backends.world_model.prompt import is_demonstration
from records.export.options import SessionSplit

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "export_agentworldbench.jsonl"
SIMULATED = "report simulated"  # in the stub's one answer
SECRET = "MSECRETexport0123456789"
# The fixed session of the golden file: a text tool, a stateful one, a real error, and
# a call made twice (the live prompt shows the session's own earlier answer to it).
GOLDEN_CALLS = [
    ("echo", {"text": "alpha"}),
    ("next_ticket", {}),
    ("fail", {"message": "disk full"}),
    ("echo", {"text": "alpha"}),
]
FORMATS = ("agentworldbench", "messages", "preference")


def simulated_echo(body: dict) -> str:
    """The stub's answer: marked as simulated, and naming the text the call asked to echo
    (simroute holds a simulated answer to the field its recorded answers echo)."""
    asked = re.findall(r'"text": "([^"]*)"', body["messages"][-1]["content"])
    return json.dumps({"result": " ".join([SIMULATED, *asked[-1:]])})


async def session(config: Path, calls) -> list:
    async with stdio_client(config) as client:
        return [await client.call_tool(tool, arguments, raise_on_error=False) for tool, arguments in calls]


def config_for(folder: Path, model: ModelStub, **sections) -> Path:
    return write_config(
        folder,
        mcpServers={"toolbox": toolbox_server(TOOLBOX_TICKETS=str(folder / "tickets"))},
        world_model={"engine": "openai", "url": model.url, "max_tokens": 64, "deadline_s": 30},
        **sections,
    )


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> dict:
    """A store filled by real runs of every kind, and what the model stub was sent."""
    import asyncio

    folder = tmp_path_factory.mktemp("export")
    with ModelStub(answer=simulated_echo) as model:  # the shape of echo's output schema
        shadowed = config_for(folder, model, mode="shadow")
        golden = asyncio.run(session(shadowed, GOLDEN_CALLS))
        assert [meta_of(r)["provenance"] for r in golden] == ["real"] * 4
        asyncio.run(session(shadowed, [("echo", {"text": f"password={SECRET}"}), ("echo", {"text": "beta"})]))
        asyncio.run(session(shadowed, [("echo", {"text": "alpha"})]))  # the golden session's first example again
        replaying = config_for(folder, model, mode="replay")
        replayed = asyncio.run(session(replaying, [("echo", {"text": "alpha"}), ("echo", {"text": "omega"})]))
        assert [meta_of(r)["provenance"] for r in replayed] == ["replay", "real"]  # a miss goes real
        # The model must write this answer (its prompt is exported): not an aligned recorded session's.
        simulating = config_for(folder, model, mode="sim", world_state={"mcp_alignment": False})
        simulated = asyncio.run(session(simulating, [("echo", {"text": "gamma"})]))
        assert SIMULATED in simulated[0].content[0].text
        shell = config_for(folder, model, mode="shadow", shell={"enabled": True, "pool_size": 0})
        asyncio.run(session(shell, [("shell_exec", {"command": "echo hello from the sandbox"})]))
        with WebPages() as site:
            browser = config_for(
                folder,
                model,
                mode="shadow",
                browser={"enabled": True, "isolation": "host", "allowed_origins": ["http://127.0.0.1:*"]},
            )
            [page] = asyncio.run(session(browser, [("browser_navigate", {"url": site.url("/login")})]))
            assert not page.is_error
        with serve_upstream() as upstream:
            proxy = start_proxy(shadowed)
            try:
                assert httpx.Client(proxy=proxy.url, timeout=30).get(f"{upstream}/json").status_code == 200
            finally:
                proxy.stop()
        bodies = list(model.bodies)
    rows = records_of(shadowed)
    golden_session = rows[0]["session"]
    return {"config": shadowed, "folder": folder, "rows": rows, "golden_session": golden_session, "bodies": bodies}


@pytest.fixture(scope="module")
def dataset(filled, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("dataset")
    # Without demonstrations, a prompt is exactly what the live model was sent when the
    # call was made (no other session was recorded before the golden one's calls): the
    # sessions fall to a side by a hash of their random ids, and the recorded answers a
    # prompt would show depend on which.
    card = export_dataset(filled["config"], out, "--test-fraction", "0.5", "--seed", "7", "--no-demonstrations")
    files = {name: {side: written_lines(out, card, name, side) for side in ("train", "test")} for name in FORMATS}
    return {"out": out, "card": card, "files": files}


def written_lines(out: Path, card: dict, name: str, side: str) -> list[dict]:
    """A split's lines; a split without lines has no file, and the card names none."""
    path = card["files"][name][side]
    if path is None:
        assert not (out / name / f"{side}.jsonl").exists() and card["counts"]["lines"][name][side] == 0
        return []
    return lines(out / path)


def every_line(dataset, name: str) -> list[dict]:
    return dataset["files"][name]["train"] + dataset["files"][name]["test"]


def test_every_channel_is_exported_and_the_card_counts_the_lines(filled, dataset):
    card = dataset["card"]
    assert {row["channel"] for row in filled["rows"]} == {"mcp", "shell", "browser", "http"}
    for name in FORMATS:
        for side in ("train", "test"):
            assert card["counts"]["lines"][name][side] == len(dataset["files"][name][side])
    examples = every_line(dataset, "agentworldbench")
    assert {line["domain"] for line in examples} == {"MCP", "Terminal", "Web"}
    assert {line["meta"]["channel"] for line in examples} == {"mcp", "shell", "browser", "http"}
    assert card["counts"]["examples_by_domain"]["Terminal"] == 1 and card["counts"]["examples_by_domain"]["Web"] == 1
    assert sum(card["counts"]["examples_by_route"].values()) == len(examples)
    assert card["counts"]["records_read"] == len(filled["rows"])
    assert card["source"] == {"store": "sqlite", "path": str(filled["folder"] / "records.db")}
    assert card["simroute_version"] and card["split"]["seed"] == 7 and card["filters"]["tokens"] == []
    terminal = next(line for line in examples if line["domain"] == "Terminal")
    assert (
        "hello from the sandbox" in terminal["answer"] and "$" in terminal["answer"]
    )  # the screen, with its prompt line
    web = next(line for line in examples if line["domain"] == "Web")
    assert "/login" in web["answer"] and 'textbox "Password"' in web["answer"]  # the page: its address and snapshot


def comparable(line: dict) -> dict:
    return {key: line[key] for key in ("domain", "system", "turns", "turn_idx", "answer")}


def test_agentworldbench_lines_match_the_golden_file_and_load(filled, dataset):
    ours = sorted(
        (
            line
            for line in every_line(dataset, "agentworldbench")
            if line["meta"]["session"] == filled["golden_session"]
        ),
        key=lambda line: line["meta"]["step"],
    )
    if os.environ.get("SIMROUTE_WRITE_GOLDEN"):  # a session whose first example is no other session's duplicate
        assert len(ours) == len(GOLDEN_CALLS)
        GOLDEN.write_text(
            "".join(json.dumps(comparable(line), ensure_ascii=False) + "\n" for line in ours), encoding="utf-8"
        )
    golden = lines(GOLDEN)
    assert [line["answer"] for line in golden] == [
        "alpha",
        "ticket 1",
        "Error: Error calling tool 'fail': disk full",
        "alpha",
    ]
    exported = [comparable(line) for line in every_line(dataset, "agentworldbench")]
    # Each golden line exported once: by the golden session, or (its first call, made
    # again by another session) by whichever of the two sessions the export read first.
    assert all(exported.count(line) == 1 for line in golden)
    assert all(comparable(line) in golden for line in ours) and len(ours) >= len(GOLDEN_CALLS) - 1
    samples = load_agentworldbench_both(dataset)
    assert sum(1 for sample in samples if sample["meta"]["session"] == filled["golden_session"]) == len(ours)


def load_agentworldbench_both(dataset) -> list[dict]:
    """Both splits' samples; a split can be empty (sessions fall to a side by a hash of
    their random ids), and an empty split has no file."""
    return [
        sample
        for side, path in dataset["card"]["files"]["agentworldbench"].items()
        if path is not None
        for sample in load_agentworldbench(dataset["out"] / path)
    ]


def test_prompt_turns_equal_the_prompts_the_live_world_model_was_sent(filled, dataset):
    sent = [body["messages"] for body in filled["bodies"]]
    for line in lines(GOLDEN):  # every call of the fixed session was simulated (shadowed) with exactly this prompt
        prompt = [{"role": "system", "content": line["system"]}] + [
            {"role": t["role"], "content": t["content"]} for t in line["turns"]
        ]
        assert prompt in sent, prompt[-1]["content"]
    last = lines(GOLDEN)[-1]["turns"]
    assert "(A real result of this server in another session" in last[-3]["content"]  # its own earlier answer, shown
    samples = [s for s in load_agentworldbench_both(dataset) if s["meta"]["session"] == filled["golden_session"]]
    assert samples and all(sample["messages"] in sent for sample in samples)


def demonstrations(line: dict) -> list[str]:
    """The recorded answers a `messages` line's prompt shows (the assistant turns after a
    demonstration's note)."""
    messages = line["messages"][:-1]
    return [
        answer["content"]
        for action, answer in zip(messages, messages[1:], strict=False)
        if action["role"] == "user" and answer["role"] == "assistant" and is_demonstration(action["content"])
    ]


def test_prompts_show_the_train_sides_recorded_answers_of_the_tool_and_never_the_test_sides(filled, tmp_path):
    def session_of(text: str) -> str:
        [session] = {row["session"] for row in filled["rows"] if row["arguments"].get("text") == text}
        return session

    beta_session, alpha_omega = session_of("beta"), session_of("omega")  # the secret's session; the replaying one
    # A seed that puts the "beta" session on the test side and the golden and the replaying one on the train side.
    seed = next(
        seed
        for seed in range(1000)
        if SessionSplit(0.5, seed).side(beta_session) == "test"
        and {SessionSplit(0.5, seed).side(s) for s in (filled["golden_session"], alpha_omega)} == {"train"}
    )
    card = export_dataset(
        filled["config"], tmp_path, "--test-fraction", "0.5", "--seed", str(seed), "--format", "messages"
    )
    assert card["demonstrations"]["shown"] is True
    exported = [line for path in card["files"]["messages"].values() if path for line in lines(tmp_path / path)]
    everything = [answer for line in exported for answer in demonstrations(line)]
    # The omega call (train side) is shown other sessions' answers of echo, the train side's:
    omega = next(
        line
        for line in exported
        if line["meta"]["session"] == alpha_omega and "omega" in line["messages"][-1]["content"]
    )
    assert any("alpha" in answer for answer in demonstrations(omega)), demonstrations(omega)
    # ... and no prompt, on either side, shows an answer only the test-side session gave.
    assert everything and not any("beta" in answer or "password" in answer for answer in everything)


def test_only_real_observations_are_targets(dataset):
    for line in every_line(dataset, "agentworldbench"):
        assert SIMULATED not in line["answer"] and line["meta"]["served"] in ("real", "replay", "sim")
    for line in every_line(dataset, "messages"):
        target = line["messages"][-1]
        assert target["role"] == "assistant" and target["weight"] == 1 and target["provenance"] == "real"
        assert SIMULATED not in target["content"]
        for context in line["messages"][1:-1]:
            if context["role"] == "assistant":
                assert context["weight"] == 0 and context["provenance"] in ("real", "replay", "sim")
    pairs = every_line(dataset, "preference")
    assert pairs, "shadowed calls whose two sides diverged give preference pairs"
    for pair in pairs:
        assert SIMULATED not in pair["chosen"][0]["content"] and SIMULATED in pair["rejected"][0]["content"]
    # The session that replayed: its replayed observation shows as context, marked; its real one is the target.
    replayed = [line for line in every_line(dataset, "agentworldbench") if line["answer"] == "omega"]
    assert len(replayed) == 1
    assert [t["provenance"] for t in replayed[0]["turns"] if t["role"] == "assistant"] == ["replay"]
    assert dataset["card"]["counts"]["skipped"]["no_real_observation"] >= 1  # the simulated session's call


def test_a_secret_redacted_in_the_store_is_absent_from_every_file(filled, dataset):
    assert any(SECRET not in json.dumps(row) and "[redacted:" in json.dumps(row) for row in filled["rows"])
    files = [path for path in dataset["out"].rglob("*") if path.is_file()]
    written = [path for sides in dataset["card"]["files"].values() for path in sides.values() if path is not None]
    assert len(files) == 1 + len(written)  # the card, and each split that had lines (no empty file)
    assert [path.name for path in files if SECRET.encode() in path.read_bytes()] == []
    assert any("[redacted:" in path.read_text() for path in files)  # the call is there, its secret is not


def test_the_split_never_puts_a_session_on_both_sides_and_duplicates_collapse(dataset):
    split = SessionSplit(test_fraction=0.5, seed=7)
    for name in FORMATS:
        sides = {side: {line["meta"]["session"] for line in dataset["files"][name][side]} for side in ("train", "test")}
        assert not sides["train"] & sides["test"]
        for side, sessions in sides.items():
            assert all(split.side(session) == side for session in sessions)
    examples = every_line(dataset, "agentworldbench")
    identities = [json.dumps([line["system"], line["turns"], line["answer"]]) for line in examples]
    assert len(identities) == len(set(identities))
    assert (
        dataset["card"]["counts"]["duplicates_collapsed"] >= 1
    )  # the third session repeated the golden one's first call


def test_filters_pick_targets_and_token_namespaces_pick_sessions(filled, tmp_path):
    card = export_dataset(filled["config"], tmp_path / "shell", "--channel", "shell", "--format", "messages")
    assert card["counts"]["lines"]["messages"] == {"train": 1, "test": 0} or card["counts"]["lines"]["messages"] == {
        "train": 0,
        "test": 1,
    }
    card = export_dataset(filled["config"], tmp_path / "hard", "--min-divergence", "0.01", "--tool", "toolbox.echo")
    hard = written_lines(tmp_path / "hard", card, "agentworldbench", "train") + written_lines(
        tmp_path / "hard", card, "agentworldbench", "test"
    )
    assert hard and all(line["meta"]["tool"] == "echo" and line["meta"]["divergence"] >= 0.01 for line in hard)
    card = export_dataset(filled["config"], tmp_path / "token", "--token", "nobody")
    assert card["counts"]["records_read"] == 0  # no session lives in that namespace
