"""Redaction before the world model and in replay keys, through simroute launched as
a user launches it: a sim-routed MCP call's secrets never reach the simulation
prompt (an OpenAI-compatible stub, tests/kit/model_stub.py, records what the model is sent), and
a name added to `redaction.fields` is both redacted in the record and part of the
replay key's credential digest."""

from __future__ import annotations

import json
import sys

import pytest
from kit.launch import meta_of, records_of, stdio_client
from kit.model_stub import ModelStub

pytestmark = pytest.mark.integration

REPORTS = '''
import uuid

from fastmcp import FastMCP

mcp = FastMCP("reports")


@mcp.tool(output_schema=None)  # a text tool: its answer is text, not {"result": …}
def report(name: str, api_key: str = "", license_code: str = "", note: str = "") -> str:
    """A report by name, for a caller with a key."""
    return f"report {name} {uuid.uuid4().hex}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
'''

API_KEY = "AKSECRETfield0123456789"
BEARER = "BTSECRETbearer0123456789"


def reports_server(folder) -> dict:
    script = folder / "reports.py"
    script.write_text(REPORTS)
    return {"command": sys.executable, "args": [str(script)]}


async def test_a_simulation_prompt_sees_the_redaction_marker_not_the_secret(make_config, tmp_path):
    with ModelStub() as model:
        config = make_config(
            mcpServers={"reports": reports_server(tmp_path)},
            mode="sim",
            world_model={"engine": "openai", "url": model.url, "max_tokens": 64, "deadline_s": 30},
        )
        async with stdio_client(config) as client:
            served = await client.call_tool(
                "report", {"name": "q3", "api_key": API_KEY, "note": f"Authorization: Bearer {BEARER}"}
            )
        assert meta_of(served)["provenance"] == "sim" and served.content[0].text == "report simulated"
    assert model.bodies, "the world model was never asked"
    prompt = json.dumps(model.bodies)
    assert "q3" in prompt  # the call did reach the prompt ...
    assert API_KEY not in prompt and BEARER not in prompt  # ... its secrets did not
    assert prompt.count("[redacted:") >= 2  # both replaced by the marker, in place
    assert "Bearer [redacted:" in prompt  # the scheme stays, the credential goes
    [record] = records_of(config)
    assert record["arguments"]["api_key"].startswith("[redacted:")


async def test_a_field_added_to_redaction_fields_is_redacted_and_keys_replay(make_config, tmp_path):
    from records.secret_patterns import CREDENTIAL_FIELDS

    assert "license_code" not in CREDENTIAL_FIELDS and not any(
        name in "license_code" for name in CREDENTIAL_FIELDS if len(name) > 3
    )
    sections = {
        "mcpServers": {"reports": reports_server(tmp_path)},
        "redaction": {"fields": [*CREDENTIAL_FIELDS, "license_code"]},
    }
    config = make_config(**sections)
    async with stdio_client(config) as client:
        first = await client.call_tool("report", {"name": "q3", "license_code": "LICENSE-A-0123456789"})
    real_a = first.content[0].text

    [record] = records_of(config)
    assert record["arguments"]["license_code"].startswith("[redacted:")  # redacted in the record
    assert "LICENSE-A-0123456789" not in json.dumps(record)

    config = make_config(**sections, mode="replay", replay={"on_miss": "error"})
    async with stdio_client(config) as client:
        same = await client.call_tool("report", {"name": "q3", "license_code": "LICENSE-A-0123456789"})
        other = await client.call_tool(
            "report", {"name": "q3", "license_code": "LICENSE-B-0123456789"}, raise_on_error=False
        )
    assert meta_of(same)["provenance"] == "replay" and same.content[0].text == real_a  # the same credential replays
    # A different credential in that field is a different replay key: never served another caller's answer.
    assert other.is_error and real_a not in other.content[0].text and "replay miss" in other.content[0].text
