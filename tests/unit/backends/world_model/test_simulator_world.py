"""The simulator tells every session its world, and the facts its answers stated that
the fitted history no longer shows (a model runner stub: prompt building is pure logic)."""

from kit.calls import with_slices

from backends.world_model.facts import FACTS_HEADING, StatedFacts
from backends.world_model.http_domain import HttpDomain
from backends.world_model.mcp_domain import McpDomain
from backends.world_model.simulator import WorldModelSimulator
from backends.world_model.terminal_domain import TerminalDomain
from backends.world_model.web_domain import WebDomain
from calls import Call, Observation, Provenance, Session, Turn, WorldDocuments


class ModelRunnerStub:
    def count_tokens(self, text: str) -> int:
        return len(text) // 4


def simulator(**options) -> WorldModelSimulator:
    mcp = McpDomain(tools_for=lambda server: [{"name": "t"}], output_schema_for=lambda server, tool: None)
    return WorldModelSimulator(
        ModelRunnerStub(),
        domains={"mcp": mcp, "http": HttpDomain(), "shell": TerminalDomain(), "browser": WebDomain()},
        max_tokens=64,
        **options,
    )  # type: ignore[arg-type]


MCP = Call("mcp", "crm", "t", {"n": 99}, "s")
HTTP = Call("http", "api.test", "GET", {"method": "GET", "url": "http://api.test/x", "path": "/x", "headers": {}}, "s")


def test_the_configured_world_reaches_every_channel_and_an_episode_world_stands_in_for_it():
    sim = simulator(world_document="Current date: 2031-04-02")
    shell = Call("shell", "shell", "shell_exec", {"command": "date"}, "s")
    browser = Call("browser", "browser", "browser_navigate", {"url": "https://lumen.test/"}, "s")
    for call in (MCP, HTTP, shell, browser):
        assert "Current date: 2031-04-02" in sim.messages_for(call, Session("s"), grounding=None)[0]["content"]
    episode = with_slices(Session("e"), WorldDocuments({"*": "Current date: 1999-12-31"}))
    system = sim.messages_for(HTTP, episode)[0]["content"]
    assert "1999-12-31" in system and "2031-04-02" not in system


def test_facts_whose_turns_no_longer_fit_come_back_in_the_last_message():
    sim = simulator(context_tokens=900)
    history = [
        Turn(
            Call("mcp", "crm", "t", {"n": i}, "s"),
            Observation([{"type": "text", "text": f"row {i} " + "z" * 200}], Provenance.SIM),
        )
        for i in range(30)
    ]
    session = with_slices(
        Session("s", history=history),
        StatedFacts({"crm id=1": (0, "name=Ada Park, plan=gold"), "file /w/a.txt": (1, "row 29 " + "z" * 200)}),
    )
    messages = sim.messages_for(MCP, session)
    prompt = "\n".join(m["content"] for m in messages)
    assert "earlier turns omitted" in prompt and "row 0 " not in prompt  # the turn that stated it is gone
    last = messages[-1]["content"]
    assert last.startswith(FACTS_HEADING + "\n- crm id=1: name=Ada Park, plan=gold")
    assert "file /w/a.txt" not in last  # the shown history still carries that one
    assert sum(len(m["content"]) // 4 + 8 for m in messages) <= 900 - 64
