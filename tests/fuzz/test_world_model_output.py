"""Whatever a world model writes, the simulator answers with a well-formed
observation or a clear error, on every channel: never an exception, never an empty
success, always tagged `sim`. The model is the one part faked here (a model runner that
returns the fuzzer's text); domains, parsers and checks are the real ones."""

from __future__ import annotations

import asyncio
import json

import jsonschema
from hypothesis import example, given
from hypothesis import strategies as st
from kit.fuzz import fuzz, tally

from backends.browser.page_state import PageState
from backends.http.messages import HttpSettings, make_call
from backends.world_model.http_domain import HttpDomain
from backends.world_model.mcp_domain import McpDomain
from backends.world_model.model_runner import Completion
from backends.world_model.simulator import WorldModelSimulator
from backends.world_model.terminal_domain import TerminalDomain
from backends.world_model.web_domain import WebDomain
from calls import Call, Observation, Provenance, Session, Turn

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "temp_c": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city", "temp_c"],
}


class TextModelRunner:
    """The model's side of the exchange: it answers every request with `text`."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def start(self) -> None:
        pass

    def count_tokens(self, text: str) -> int:
        return len(text) // 4

    async def complete(self, messages, **kwargs) -> Completion:
        return Completion(self.text, 100, len(self.text) // 4, 100, 0.001, "stop")

    async def aclose(self) -> None:
        pass


def _page_session() -> Session:
    page = PageState("http://site.test/", "Home", '- heading "Welcome" [level=1] [ref=e1]\n- link "About" [ref=e2]')
    navigate = Call("browser", "browser", "browser_navigate", {"url": "http://site.test/"}, "s")
    return Session(
        "s",
        history=[
            Turn(
                navigate,
                Observation([{"type": "text", "text": page.text()}], Provenance.REAL, structured=page.structured()),
            )
        ],
    )


def _cases() -> list[tuple[str, WorldModelSimulator, Call, Session]]:
    tools = lambda server: [{"name": "weather", "description": "the weather", "outputSchema": SCHEMA}, {"name": "note"}]  # noqa: E731
    mcp = McpDomain(
        tools_for=tools, records_for=lambda call: [], output_schema_for=lambda s, t: SCHEMA if t == "weather" else None
    )
    domains = {"mcp": mcp, "http": HttpDomain(), "shell": TerminalDomain(), "browser": WebDomain()}
    http_call = make_call(
        method="GET",
        url="http://api.test/users/3",
        headers=[("Accept", "application/json")],
        body=b"",
        session_id="s",
        settings=HttpSettings(),
    )
    return [
        ("mcp structured", domains, Call("mcp", "srv", "weather", {"city": "Lima"}, "s"), Session("s")),
        ("mcp text", domains, Call("mcp", "srv", "note", {"id": 1}, "s"), Session("s")),
        ("http", domains, http_call, Session("s")),
        ("shell", domains, Call("shell", "shell", "shell_exec", {"command": "cat notes.txt"}, "s"), Session("s")),
        (
            "browser",
            domains,
            Call("browser", "browser", "browser_click", {"ref": "e2", "element": "About"}, "s"),
            _page_session(),
        ),
    ]  # type: ignore[list-item]


CASES = _cases()
# What models write: free text, JSON (right, wrong and broken), fenced blocks, the
# protocol's tags, HTTP and page shapes, and bytes no tokenizer should produce.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
PIECES = st.sampled_from(
    [
        "<predicted_observation>", "</predicted_observation>", "<think>", "</think>", "```", "```json\n", "```yaml\n",
        "HTTP/1.1 200 OK\n", "Content-Type: application/json\n\n", "- Page URL: http://site.test/about\n",
        "- Page Snapshot:\n", "Error: ", "cat notes.txt\n", "[0] agent@sandbox:/workspace$", "[1] agent@sandbox:/tmp$ ",
        "\r\n", '{"city": "Lima", "temp_c": 19}', "\n\n", "\x00", "\ud800",
    ]
)  # fmt: skip
TEXTS = (
    st.text(max_size=400)
    | st.builds(json.dumps, JSON_VALUES)
    | st.lists(PIECES | st.text(max_size=30), max_size=12).map("".join)
)


def _simulate(case: tuple, text: str) -> Observation:
    _, domains, call, session = case
    simulator = WorldModelSimulator(TextModelRunner(text), domains=domains, constrained_output=True)
    return asyncio.run(simulator.simulate(call, session, deadline_s=5))


@fuzz
@given(case=st.sampled_from(CASES), text=TEXTS)
@example(case=CASES[0], text='{"city": "Lima", "temp_c": 19}')
@example(case=CASES[0], text='{"city": "Lima"}')
@example(case=CASES[2], text="HTTP/1.1 999 Nope\nContent-Length: -5\n\n")
@example(case=CASES[4], text="- Page URL: javascript:alert(1)\n- Page Snapshot:\n```yaml\n\n```")
@example(case=CASES[3], text="\x00" * 50)
@example(case=CASES[3], text="cat notes.txt\nhello\n[0] agent@sandbox:/workspace$")
def test_any_model_text_becomes_an_answer_or_a_clear_error(case: tuple, text: str) -> None:
    tally("world-model output parsers")
    observation = _simulate(case, text)
    assert isinstance(observation, Observation) and observation.provenance is Provenance.SIM
    if observation.is_error:
        assert observation.text.strip(), "an error observation says what failed"
        return
    assert observation.content or observation.structured is not None, "an empty success"
    if case[0] == "mcp structured":  # a success of a tool with an output schema fits the schema
        jsonschema.validate(observation.structured, SCHEMA)
