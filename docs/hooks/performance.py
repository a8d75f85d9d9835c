"""MkDocs hook: the performance page's table, rendered at build time from the
benchmarks' own results, so the page shows what the scripts last measured.

Every benchmark script writes `benchmarks/results/<script-name>.json`:
`{"benchmark", "title", "command", "measured_at", "machine", "rows": [{"metric",
"value", "unit", "baseline", "target", "better"}]}`. The page `performance.md` holds
the marker `<!-- simroute:benchmark-results -->`; this hook replaces it with one row
per benchmark metric (benchmark, metric, value and unit, baseline, target, when it
was measured), then how to run each benchmark again. With no results it says so.
`SIMROUTE_BENCHMARK_RESULTS` names another results folder (e.g. to preview one).
A results file that cannot be read is a warning, which fails a strict build.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

MARKER = "<!-- simroute:benchmark-results -->"
log = logging.getLogger("mkdocs.hooks.performance")
_results_dir: Path | None = None


def on_config(config: Any) -> Any:
    global _results_dir
    override = os.environ.get("SIMROUTE_BENCHMARK_RESULTS")
    root = Path(config["config_file_path"]).resolve().parent
    _results_dir = Path(override) if override else root / "benchmarks" / "results"
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown or _results_dir is None:
        return markdown
    return markdown.replace(MARKER, render_results(_results_dir))


def load_results(folder: Path) -> list[dict[str, Any]]:
    """Every results file in the folder, by benchmark name; unreadable ones are logged and left out."""
    results = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(result, dict) or not isinstance(result.get("rows"), list):
                raise ValueError("expected an object with a list of rows")
        except (OSError, ValueError) as exc:
            log.warning("benchmark results %s cannot be read: %s", path, exc)
            continue
        result.setdefault("benchmark", path.stem)
        results.append(result)
    return sorted(results, key=lambda r: str(r["benchmark"]))


def render_results(folder: Path) -> str:
    results = load_results(folder)
    if not results:
        return (
            f"No benchmark results yet: the folder `{_shown(folder)}` holds no results file. "
            "Run `make bench` (or one script of `benchmarks/`) and build the docs again."
        )
    lines = [
        "| benchmark | metric | latest value | baseline | target | measured at |",
        "|-----------|--------|--------------|----------|--------|-------------|",
    ]
    for result in results:
        for row in result["rows"]:
            cells = [
                f"`{result['benchmark']}`",
                str(row.get("metric", "")),
                _value(row.get("value"), row.get("unit")),
                str(row.get("baseline") or "—"),
                _target(row.get("target"), row.get("better")),
                str(result.get("measured_at", "—")),
            ]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", "How each was measured, and the command that measures it again:", ""]
    for result in results:
        title = result.get("title") or result["benchmark"]
        machine = f" On: {result['machine']}." if result.get("machine") else ""
        lines.append(f"- **`{result['benchmark']}`**: {title}.{machine} `{result.get('command', '')}`")
    return "\n".join(lines)


def _value(value: Any, unit: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = str(value)
    elif float(value).is_integer() and abs(value) >= 1000:
        text = f"{int(value):,}"
    elif abs(value) >= 1000:
        text = f"{value:,.0f}"
    else:
        text = f"{value:.4g}"
    return f"{text} {unit}".strip() if unit else text


def _target(target: Any, better: Any) -> str:
    parts = [str(target)] if target else []
    if better in ("lower", "higher"):
        parts.append(f"({better} is better)")
    return " ".join(parts) or "—"


def _cell(text: str) -> str:
    return text.replace("|", "&#124;").replace("\n", " ")


def _shown(folder: Path) -> str:
    try:
        return str(folder.relative_to(Path.cwd()))
    except ValueError:
        return str(folder)
