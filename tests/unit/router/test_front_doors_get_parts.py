"""The MCP front door and the episodes are handed the parts they route with (`McpParts`,
`EpisodeParts`: router/runtime/parts.py), never the `Runtime` that assembles them, as
the HTTP channel gets `RoutingParts`. Read from the source: no module under
router/mcp or router/episodes imports `Runtime`, or its module, even for typing."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FRONT_DOORS = ("router/mcp", "router/episodes")


def runtime_imports(path: Path) -> list[str]:
    """Each import in `path` that reaches `Runtime` (line: statement)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: import {a.name}" for a in node.names if a.name.startswith("router.runtime.runtime")
            ]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names = {a.name for a in node.names}
            if node.module == "router.runtime.runtime" or (node.module.startswith("router") and "Runtime" in names):
                found.append(f"{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}")
            elif node.module == "router.runtime" and "runtime" in names:
                found.append(f"{node.lineno}: from router.runtime import runtime")
    return found


def test_no_module_of_the_mcp_door_or_the_episodes_imports_the_runtime():
    modules = [path for front_door in FRONT_DOORS for path in sorted((ROOT / front_door).rglob("*.py"))]
    assert len(modules) > 20  # the front doors were found (not a vacuous pass)
    offenders = {str(path.relative_to(ROOT)): found for path in modules if (found := runtime_imports(path))}
    assert offenders == {}, f"hand these the parts they route with (router/runtime/parts.py), not Runtime: {offenders}"


def test_the_scan_sees_each_way_of_importing_the_runtime(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "import router.runtime.runtime\n"
        "from router.runtime import runtime\n"
        "if TYPE_CHECKING:\n"
        "    from router.runtime.runtime import Runtime\n"
        "from router.runtime.parts import McpParts\n"
    )
    assert runtime_imports(module) == [
        "2: import router.runtime.runtime",
        "3: from router.runtime import runtime",
        "5: from router.runtime.runtime import Runtime",
    ]
