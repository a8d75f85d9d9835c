"""The simulated-MCP workload the world-model latency benchmarks share: `mcp-server-time`'s
two tools, one recorded `get_current_time` answer as the example, and the zones the
calls ask about. A simulated `get_current_time` call is a short prompt and a short,
schema-shaped answer: the world model's common case."""

from __future__ import annotations

from backends.world_model.mcp_domain import McpDomain

DEFAULT_MODEL = "~/.cache/simroute/models/SmolLM2-135M-Instruct.Q4_1.gguf"
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "timezone": {"type": "string"},
        "datetime": {"type": "string"},
        "day_of_week": {"type": "string"},
        "is_dst": {"type": "boolean"},
    },
    "required": ["timezone", "datetime", "day_of_week", "is_dst"],
}
TOOLS = [
    {
        "name": "get_current_time",
        "description": "Get current time in a specific timezone",
        "inputSchema": {
            "type": "object",
            "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}},
            "required": ["timezone"],
        },
        "outputSchema": OUTPUT_SCHEMA,
    },
    {
        "name": "convert_time",
        "description": "Convert time between timezones",
        "inputSchema": {
            "type": "object",
            "properties": {
                "source_timezone": {"type": "string"},
                "time": {"type": "string"},
                "target_timezone": {"type": "string"},
            },
            "required": ["source_timezone", "time", "target_timezone"],
        },
    },
]
ZONES = ["Europe/Paris", "Asia/Tokyo", "America/Lima", "Africa/Cairo", "Australia/Perth"]
DEMO = '{"timezone": "Asia/Tokyo", "datetime": "2026-11-22T18:05:30+09:00", "day_of_week": "Sunday", "is_dst": false}'


def time_domain() -> McpDomain:
    """The MCP domain of the time server: its tools, the recorded example, the output schema."""
    return McpDomain(
        tools_for=lambda server: TOOLS,
        records_for=lambda call: [
            {
                "session": "recorded",
                "tool": "get_current_time",
                "arguments": {"timezone": "Asia/Tokyo"},
                "observation": {"content": [{"type": "text", "text": DEMO}], "is_error": False},
            }
        ],
        output_schema_for=lambda server, tool: OUTPUT_SCHEMA if tool == "get_current_time" else None,
    )
