"""No product module passes 400 lines, as the formatter writes it (CI runs
`ruff format --check` first, so the files on disk are the formatter's output).
A module that grows past it is probably two concepts: split it by concept."""

from __future__ import annotations

import sys
from pathlib import Path

LIMIT = 400
ROOMS = ("calls", "router", "backends", "shadow", "records", "policies", "simroute")


def oversized(root: Path) -> list[tuple[Path, int]]:
    found = []
    for room in ROOMS:
        for module in sorted((root / room).rglob("*.py")):
            lines = len(module.read_text().splitlines())
            if lines > LIMIT:
                found.append((module.relative_to(root), lines))
    return found


def main() -> int:
    found = oversized(Path(__file__).resolve().parent.parent)
    for module, lines in found:
        print(f"{module}: {lines} lines (limit {LIMIT}): split it by concept")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
