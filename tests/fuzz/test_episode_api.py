"""The REST/episode API of `simroute serve` under cases Schemathesis generates from its
own `/openapi.json`: documented shapes (positive) and shapes the document forbids
(negative), on every operation, with episode ids that are open half the time (so
steps, verifies and closes reach real episodes, not only 404s).

No 5xx: a request the API cannot serve is the client's error, answered with a clear
4xx (a JSON `detail` or `error`); a 2xx answer matches the document. The process
keeps serving, its log holds no traceback, and every step that reached routing (its
answer names a record) is on record."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2 as httpx
import pytest
import schemathesis
from hypothesis import given
from hypothesis import strategies as st
from kit.fuzz import fuzz, tally
from kit.launch import records_of, toolbox_server, write_config
from kit.serve import serve_process
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance

pytestmark = pytest.mark.integration


@dataclass
class Api:
    process: subprocess.Popen
    url: str
    log: Path
    config: Path
    cases: st.SearchStrategy
    open: list[str] = field(default_factory=list)  # episode ids a reset answered
    records: set[str] = field(default_factory=set)  # record ids steps answered with
    answered: Counter[str] = field(default_factory=Counter)  # "METHOD path status" of each case


@pytest.fixture(scope="module")
def api(tmp_path_factory) -> Iterator[Api]:
    folder = tmp_path_factory.mktemp("fuzz-episodes")
    # A low cap: past it a reset is a 429; the test closes the oldest episodes to stay under it.
    config = write_config(folder, mcpServers={"toolbox": toolbox_server()}, episodes={"max_open_per_token": 8})
    log = folder / "serve.log"
    with serve_process(config, log) as (process, port):
        url = f"http://127.0.0.1:{port}"
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json", timeout=30)
        cases = schema.as_strategy(GenerationMode.POSITIVE) | schema.as_strategy(GenerationMode.NEGATIVE)
        yield Api(process, url, log, config, cases)


ROUTABLE_ACTIONS = st.just({"type": "list_tools"}) | st.builds(
    lambda text: {"type": "call_tool", "tool_name": "echo", "arguments": {"text": text}}, st.text(max_size=200)
)


def open_episode(api: Api) -> str:
    reset = httpx.post(f"{api.url}/episodes", json={}, timeout=60)
    assert reset.status_code == 201, reset.text
    return reset.json()["episode_id"]


@fuzz
@given(data=st.data())
def test_generated_requests_get_no_5xx_and_documented_answers(api: Api, data) -> None:
    tally("REST/episode API")
    case = data.draw(api.cases)
    # Drawn whatever the state (Hypothesis replays draws): an open episode half the time.
    use_open, pick, routable = data.draw(st.booleans()), data.draw(st.integers(0, 7)), data.draw(st.booleans())
    if "episode_id" in (case.path_parameters or {}) and case.path.endswith("/step") and routable:
        # A generated action almost never names a tool the episode has (a 422), and an
        # episode is open only after a generated reset: half the steps go to an open
        # episode (one is opened if none is) with a routable action of fuzzed arguments,
        # so routing and recording are fuzzed on every run, not only the validation.
        if not api.open:
            api.open.append(open_episode(api))
        case.path_parameters["episode_id"] = api.open[pick % len(api.open)]
        case.body = data.draw(ROUTABLE_ACTIONS)
    elif "episode_id" in (case.path_parameters or {}) and api.open and use_open:
        case.path_parameters["episode_id"] = api.open[pick % len(api.open)]
    response = case.call(base_url=api.url, timeout=120)
    api.answered[f"{case.method.upper()} {case.path} {response.status_code}"] += 1
    assert response.status_code < 500, (
        case.method,
        case.formatted_path,
        case.body,
        response.status_code,
        response.text[:500],
    )
    if response.status_code >= 400:
        if not (response.headers.get("content-type") or [""])[0].startswith("application/json"):
            # a path no route matches (an id with a line break): the framework's plain answer
            assert (response.status_code, response.text) in ((404, "Not Found"), (405, "Method Not Allowed")), (
                response.text[:300]
            )
            return
        detail = response.json()
        assert isinstance(detail, dict) and (detail.get("detail") or detail.get("error")), response.text[:500]
        return
    if case.method.upper() == "POST" and case.path == "/episodes" and response.status_code == 201:
        api.open.append(response.json()["episode_id"])
        if len(api.open) > 4:  # stay under the cap: the oldest goes
            assert httpx.delete(f"{api.url}/episodes/{api.open.pop(0)}", timeout=60).status_code == 204
    if case.method.upper() == "DELETE" and case.path_parameters.get("episode_id") in api.open:
        api.open.remove(case.path_parameters["episode_id"])
    if case.path.endswith("/step") and response.status_code == 200 and response.json()["info"].get("record_id"):
        api.records.add(response.json()["info"]["record_id"])
    case.validate_response(response, checks=[response_schema_conformance])


def test_after_the_fuzzing_an_episode_steps_and_every_step_is_recorded(api: Api) -> None:
    """Runs after the fuzz test of this module (pytest keeps the file's order)."""
    assert api.process.poll() is None, "the server died"
    reached = {k for k in api.answered if k.startswith(("POST /episodes 201", "POST /episodes/{episode_id}/step 200"))}
    assert len(reached) == 2, f"the fuzzer never opened an episode or stepped in one: {api.answered}"
    with httpx.Client(timeout=120, trust_env=False) as http:
        for episode in api.open:
            http.delete(f"{api.url}/episodes/{episode}")
        reset = http.post(f"{api.url}/episodes", json={})
        assert reset.status_code == 201, reset.text
        episode = reset.json()["episode_id"]
        step = http.post(
            f"{api.url}/episodes/{episode}/step",
            json={"type": "call_tool", "tool_name": "echo", "arguments": {"text": "after"}},
        )
        assert step.status_code == 200 and step.json()["observation"]["result"]["content"][0]["text"] == "after", (
            step.text
        )
        api.records.add(step.json()["info"]["record_id"])
    recorded = {r["id"] for r in records_of(api.config)}
    missing = api.records - recorded
    assert not missing, f"{len(missing)} steps that reached routing have no record, e.g. {sorted(missing)[:3]}"
    log = api.log.read_text()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 : log.index("Traceback") + 3000]
