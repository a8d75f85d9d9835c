"""`simroute diff`'s view of a shadowed record: the real and simulated sides line by
line, divergent lines in red, lines that differ only in noise dimmed, then the
divergent and masked paths of the record's evidence."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from calls import Observation
from shadow.compare.line_diff import DIVERGENT as DIVERGENT_LINE
from shadow.compare.line_diff import EQUAL, aligned, text_states

DIVERGENT, MASKED = "bold red", "dim"


def render_diff(row: dict[str, Any], *, max_lines: int = 80) -> Group:
    real, sim = Observation.from_json(row["observation"]), Observation.from_json(row["shadow"])
    score, kind = row.get("divergence"), row.get("divergence_kind") or "-"
    evidence = row.get("divergence_evidence") or {}
    header = Text.assemble(
        (f"{row['id']}", "bold"),
        f"  {row['session']} #{row['step']}  {row['server']}.{row['tool']}  "
        f"route {row['route']}  status {row['status']}\n",
        f"arguments {json.dumps(row['arguments'], ensure_ascii=False)[:200]}\n",
        "divergence ",
        (f"{score if score is not None else '-'} ({kind})", DIVERGENT if kind not in ("none", "-") else "green"),
        f"   real {real.provenance}, simulated {sim.provenance}",
    )
    parts: list[Any] = [header]
    if evidence.get("note"):
        parts.append(Text(f"note: {evidence['note']}", style="italic"))
    parts.append(side_by_side(real.text, sim.text, max_lines=max_lines))
    if evidence.get("divergent"):
        table = Table(title="divergent paths", title_justify="left", show_lines=False)
        for column in ("path", "kind", "real", "simulated"):
            table.add_column(column, overflow="fold")
        for item in evidence["divergent"]:
            table.add_row(item["path"], item["kind"], _cell(item.get("real")), _cell(item.get("sim")), style=DIVERGENT)
        parts.append(table)
    if evidence.get("masked"):
        parts.append(Text("masked as noise: " + ", ".join(evidence["masked"]), style=MASKED))
    return Group(*parts)


def side_by_side(real_text: str, sim_text: str, *, max_lines: int) -> Table:
    """Both texts aligned line by line, each changed row styled by whether its
    differences are all noise (built-in detectors) or not (shadow/compare/line_diff.py)."""
    diff = aligned(real_text, sim_text, text_states(real_text, sim_text), max_rows=max_lines)
    table = Table(show_header=True, header_style="bold", expand=True)
    table.add_column("", width=1, no_wrap=True)
    table.add_column("real", overflow="fold", ratio=1)
    table.add_column("simulated", overflow="fold", ratio=1)
    for row in diff["rows"]:
        real_line, sim_line = row["real"] or "", row["sim"] or ""
        if row["state"] == EQUAL:
            table.add_row(" ", real_line, sim_line)
        else:
            style = DIVERGENT if row["state"] == DIVERGENT_LINE else MASKED
            table.add_row(
                Text("≠" if style == DIVERGENT else "~", style=style),
                Text(real_line, style=style),
                Text(sim_line, style=style),
            )
    if diff["cut"]:
        table.add_row("…", f"(cut at {max_lines} lines)", "")
    return table


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
