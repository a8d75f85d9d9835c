"""Docstrings and docs that name a test file name one that exists (a moved test
leaves no stale pointer behind)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMED = re.compile(r"tests/[A-Za-z0-9_/]+\.py")


def test_every_named_test_file_exists():
    places = [
        p
        for folder in (
            "calls",
            "router",
            "backends",
            "policies",
            "shadow",
            "records",
            "simroute",
            "benchmarks",
            "scripts",
            "docs",
        )
        for p in (ROOT / folder).rglob("*")
        if p.suffix in (".py", ".md")
    ]
    stale = sorted(
        {
            f"{p.relative_to(ROOT)}: {name}"
            for p in places
            for name in NAMED.findall(p.read_text())
            if not (ROOT / name).exists()
        }
    )
    assert stale == []
