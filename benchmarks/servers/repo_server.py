"""A git-style server over the directories given as arguments: each tool takes the
path of a workspace (a directory under one of them). `workspace_info` answers the
path verbatim and is otherwise constant; `summary` answers the path too, with
figures that depend on the workspace's contents; `list_files` depends on the
contents; `read_file` answers one file's text.

Run: python benchmarks/servers/repo_server.py ROOT [ROOT...]  (stdio)
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastmcp import FastMCP
from mcp_types import ToolAnnotations

READS = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
ROOTS = [Path(root).resolve() for root in sys.argv[1:]]

mcp = FastMCP("repo")


def _workspace(path: str) -> Path:
    resolved = Path(path).resolve()
    if not any(resolved == root or root in resolved.parents for root in ROOTS):
        raise ValueError(f"{path} is outside the served directories")
    if not resolved.is_dir():
        raise ValueError(f"{path} is not a directory")
    return resolved


@mcp.tool(output_schema=None, annotations=READS)
def workspace_info(path: str) -> str:
    """The layout and default branch of the workspace at `path`."""
    _workspace(path)
    return f"workspace {path}: layout v2, default branch main, hooks none"


@mcp.tool(output_schema=None, annotations=READS)
def summary(path: str) -> str:
    """The path of the workspace, how many files it holds and their total size."""
    files = [p for p in _workspace(path).iterdir() if p.is_file()]
    return f"workspace {path}: {len(files)} files, {sum(p.stat().st_size for p in files)} bytes"


@mcp.tool(output_schema=None, annotations=READS)
def list_files(path: str) -> str:
    """The files of the workspace at `path`, sorted, with their sizes in bytes."""
    files = sorted(p for p in _workspace(path).iterdir() if p.is_file())
    if not files:
        return "no files"
    return "\n".join(f"{p.name} {p.stat().st_size}" for p in files)


@mcp.tool(output_schema=None, annotations=READS)
def read_file(path: str, name: str) -> str:
    """The text of the file `name` in the workspace at `path`."""
    workspace = _workspace(path)
    target = (workspace / name).resolve()
    if workspace not in target.parents:
        raise ValueError(f"{name} is outside the workspace")
    return target.read_text()


if __name__ == "__main__":
    mcp.run(show_banner=False)
