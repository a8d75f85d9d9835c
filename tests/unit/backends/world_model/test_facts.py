"""Stated facts: what one answered call states, how a session keeps them within its
limit, and the block the world model is given back."""

from backends.shell.screen import ShellResult
from backends.world_model.facts import FACTS_HEADING, keep_facts, render_facts, stated_facts
from calls import Call, Observation, Provenance


def text(value: str, *, structured=None, is_error=False) -> Observation:
    return Observation([{"type": "text", "text": value}], Provenance.SIM, is_error=is_error, structured=structured)


def shell(command: str, output: str = "", *, cwd: str = "/workspace", exit_code: int = 0) -> tuple[Call, Observation]:
    result = ShellResult(output, exit_code, cwd)
    return Call("shell", "shell", "exec", {"command": command}, "s"), text(
        result.text(), structured=result.structured()
    )


def test_json_entities_are_kept_by_identifier_with_their_scalar_fields():
    answer = text(
        '{"orders": [{"id": 41, "item": "lamp", "total": 12.5, "tags": ["x"]}, {"order_id": "B-7", "status": '
        '"shipped"}]}'
    )
    facts = stated_facts(Call("mcp", "shop", "list_orders", {}, "s"), answer)
    assert facts == {"shop id=41": "item=lamp, total=12.5", "shop order_id=B-7": "status=shipped"}


def test_an_http_json_body_states_its_entities_and_a_text_body_the_answer_itself():
    call = Call(
        "http", "api.test", "GET", {"method": "GET", "url": "https://api.test/users/7", "path": "/users/7"}, "s"
    )
    body = {"status": 200, "headers": [], "body": '{"id": 7, "name": "Ada Park"}', "body_encoding": "text"}
    assert stated_facts(call, text("HTTP/1.1 200 OK", structured=body)) == {"api.test id=7": "name=Ada Park"}
    plain = {**body, "body": "pong"}
    assert stated_facts(call, text("HTTP/1.1 200 OK", structured=plain)) == {"GET https://api.test/users/7": "200 pong"}


def test_files_written_by_a_tool_or_an_echo_and_read_by_cat():
    write = Call("mcp", "files", "write_file", {"path": "/data/todo.md", "content": "buy milk"}, "s")
    assert stated_facts(write, text("ok")) == {"file /data/todo.md": "buy milk"}
    assert stated_facts(*shell("cd /workspace && echo 'hello  there' > notes.txt")) == {
        "file /workspace/notes.txt": "hello there"
    }
    assert stated_facts(*shell("echo one > a.txt; echo two >> a.txt")) == {"file /workspace/a.txt": "one two"}
    assert stated_facts(*shell("cat /etc/motd", "Welcome to Lumen")) == {"file /etc/motd": "Welcome to Lumen"}
    assert stated_facts(*shell("cat missing", "cat: missing: No such file", exit_code=1)) == {
        "$ cat missing": "cat: missing: No such file"
    }


def test_a_text_answer_is_kept_by_its_call_cut_short_and_an_error_states_nothing():
    call = Call("mcp", "weather", "forecast", {"city": "Lima"}, "s")
    facts = stated_facts(call, text("Lima: 19 °C,\n  light drizzle " + "x" * 400))
    [(key, value)] = facts.items()
    assert (
        key == 'weather.forecast({"city":"Lima"})'
        and value.startswith("Lima: 19 °C, light drizzle")
        and len(value) == 240
    )
    assert stated_facts(call, text("no such city", is_error=True)) == {}
    # A text tool's answer, wrapped by FastMCP.
    wrapped = text('{\n  "result": "19 °C"\n}', structured={"result": "19 °C"})
    assert stated_facts(call, wrapped) == {'weather.forecast({"city":"Lima"})': "19 °C"}


def test_a_session_keeps_its_oldest_facts_updates_them_and_drops_new_ones_past_the_limit():
    kept: dict = {}
    assert keep_facts(kept, {"a": "1", "b": "2"}, step=0, limit=2) == {"a": (0, "1"), "b": (0, "2")}
    assert keep_facts(kept, {"a": "1"}, step=3, limit=2) == {}  # stated again, unchanged
    assert keep_facts(kept, {"a": "9", "c": "3"}, step=4, limit=2) == {"a": (4, "9")}  # updated; c: full
    assert kept == {"a": (4, "9"), "b": (0, "2")}


def test_the_block_lists_facts_oldest_first_leaves_out_what_the_prompt_shows_and_fits_its_budget():
    kept = {"later": (5, "shown in the history already"), "first": (1, "Ada Park"), "second": (2, "x" * 50)}
    block = render_facts(kept, shown="... shown in   the history already ...")
    assert block.splitlines() == [FACTS_HEADING, "- first: Ada Park", "- second: " + "x" * 50]
    assert render_facts(kept, budget_chars=len(FACTS_HEADING) + 20).splitlines() == [FACTS_HEADING, "- first: Ada Park"]
    whole = render_facts(kept)
    assert render_facts(kept, budget_chars=len(whole)) == whole  # exactly its own size fits
    assert render_facts({}) == ""
