"""A small stateful MCP server: a notes store with create/list/get/delete, and a
`version` tool whose answer never changes. State lives in the process: a new
process starts empty, and ids count up from 1. With NOTES_STATE set, the notes are
also written (JSON) to that file after every change: tests read the real server's
state there, from outside simroute.

Run: python tests/servers/notes_store.py  (stdio)
"""

import json
import os

from fastmcp import FastMCP

mcp = FastMCP("notes")
NOTES: dict[int, tuple[str, str]] = {}
NEXT_ID = [1]


def changed() -> None:
    if path := os.environ.get("NOTES_STATE"):
        with open(path, "w") as out:
            json.dump({str(note_id): list(note) for note_id, note in NOTES.items()}, out)


@mcp.tool(output_schema=None)  # a text tool: no structured content
def version() -> str:
    """The server's version."""
    return "notes-store 2.4.1 (build 7731, sqlite backend)"


@mcp.tool(output_schema=None)  # a text tool: no structured content
def create_note(title: str, body: str) -> str:
    """Create a note; answers its id."""
    note_id = NEXT_ID[0]
    NEXT_ID[0] += 1
    NOTES[note_id] = (title, body)
    changed()
    return f"Created note {note_id}: {title}"


@mcp.tool(output_schema=None)  # a text tool: no structured content
def list_notes() -> str:
    """List the notes, one per line."""
    if not NOTES:
        return "No notes."
    return "\n".join(f"{note_id}. {title}" for note_id, (title, _) in sorted(NOTES.items()))


@mcp.tool(output_schema=None)  # a text tool: no structured content
def get_note(note_id: int) -> str:
    """One note's title and body."""
    if note_id not in NOTES:
        raise ValueError(f"note {note_id} not found")
    title, body = NOTES[note_id]
    return f"Note {note_id}: {title}\n{body}"


@mcp.tool(output_schema=None)  # a text tool: no structured content
def delete_note(note_id: int) -> str:
    """Delete a note."""
    if NOTES.pop(note_id, None) is None:
        raise ValueError(f"note {note_id} not found")
    changed()
    return f"Deleted note {note_id}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
