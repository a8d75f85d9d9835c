"""`resources/read` and `prompts/get` as routed calls: between their MCP results and
simroute observations, and which upstream a request is addressed to.

They are calls like any tool call (`tool: "resources/read"`, `arguments: {"uri":
…}`; `tool: "prompts/get"`, `arguments: {"name": …, "arguments": …}`): recorded,
and routed by the same policies (real and replay work, deny refuses; the world
model does not simulate them yet).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from fastmcp.prompts.base import Message, PromptResult
from fastmcp.resources.base import ResourceContent, ResourceResult
from mcp_types import AudioContent, EmbeddedResource, ImageContent, TextContent
from pydantic import TypeAdapter

from calls import Observation, Provenance

READ_RESOURCE = "resources/read"
GET_PROMPT = "prompts/get"

_MESSAGE_CONTENT = TypeAdapter(TextContent | ImageContent | AudioContent | EmbeddedResource)


def server_of_uri(uri: str, servers: Sequence[str], *, prefixed: bool) -> tuple[str, str] | None:
    """(server, the upstream's own URI) of a resource URI as the agent sees it: with
    several upstreams fastmcp namespaces `scheme://path` as `scheme://server/path`."""
    if not prefixed:
        return (servers[0], uri) if servers else None
    scheme, sep, path = uri.partition("://")
    if not sep:
        return None
    for server in sorted(servers, key=len, reverse=True):
        if path.startswith(f"{server}/"):
            return server, f"{scheme}://{path[len(server) + 1 :]}"
    return None


def namespaced_uri(server: str, uri: str) -> str:
    """A server's resource URI (or URI template) as the agent sees it when several servers
    are fronted: `scheme://path` -> `scheme://server/path` (as fastmcp namespaces them)."""
    scheme, sep, path = uri.partition("://")
    return f"{scheme}://{server}/{path}" if sep else uri


def observation_of_resource(result: ResourceResult, *, latency_s: float) -> Observation:
    blocks = []
    for item in result.contents:
        block: dict[str, Any] = {"type": "resource_contents", "mime_type": item.mime_type}
        if isinstance(item.content, bytes):
            block["blob"] = base64.b64encode(item.content).decode("ascii")
        else:
            block["text"] = item.content
        if item.meta:
            block["meta"] = item.meta
        blocks.append(block)
    return Observation(content=blocks, provenance=Provenance.REAL, latency_s=latency_s)


def resource_result(observation: Observation, meta: dict[str, Any]) -> ResourceResult:
    contents = []
    for block in observation.content:
        if block.get("type") != "resource_contents":
            continue
        data: str | bytes = base64.b64decode(block["blob"]) if "blob" in block else block.get("text", "")
        contents.append(ResourceContent(data, mime_type=block.get("mime_type"), meta=block.get("meta")))
    return ResourceResult(contents, meta=meta)


def observation_of_prompt(result: PromptResult, *, latency_s: float) -> Observation:
    blocks = [
        {
            "type": "prompt_message",
            "role": message.role,
            "content": message.content.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        for message in result.messages
    ]
    structured = {"description": result.description} if result.description else None
    return Observation(content=blocks, structured=structured, provenance=Provenance.REAL, latency_s=latency_s)


def prompt_result(observation: Observation, meta: dict[str, Any]) -> PromptResult:
    messages = [
        Message(_MESSAGE_CONTENT.validate_python(block["content"]), role=block.get("role", "user"))
        for block in observation.content
        if block.get("type") == "prompt_message"
    ]
    description = (observation.structured or {}).get("description")
    return PromptResult(messages, description=description, meta=meta)
