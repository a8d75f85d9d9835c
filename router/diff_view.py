"""`simroute diff`'s view of a shadowed record: the real and simulated sides line by
line, divergent lines in red, lines that differ only in noise dimmed, then the
divergent and masked paths of the record's evidence."""

from __future__ import annotations

import difflib
import json
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from router.types import Observation
from shadow.text_diff import compare_text

DIVERGENT, MASKED = "bold red", "dim"


def render_diff(row: dict[str, Any], *, max_lines: int = 80) -> Group:
    real, sim = Observation.from_json(row["observation"]), Observation.from_json(row["shadow"])
    score, kind = row.get("divergence"), row.get("divergence_kind") or "-"
    evidence = row.get("divergence_evidence") or {}
    header = Text.assemble(
        (f"{row['id']}", "bold"), f"  {row['session']} #{row['step']}  {row['server']}.{row['tool']}  route {row['route']}  status {row['status']}\n",
        f"arguments {json.dumps(row['arguments'], ensure_ascii=False)[:200]}\n",
        "divergence ", (f"{score if score is not None else '-'} ({kind})", DIVERGENT if kind not in ("none", "-") else "green"),
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
    """Both texts aligned line by line (difflib), each changed row styled by whether
    its differences are all noise (built-in detectors) or not."""
    real_lines, sim_lines = real_text.split("\n"), sim_text.split("\n")
    styles: dict[int, str] = {}
    for difference in compare_text(real_text, sim_text, "$")[0]:
        number = difference.path.split(":", 1)[1].split("#", 1)[0]
        if number.startswith("+"):
            continue
        line = int(number)
        noisy = difference.detector is not None
        styles[line] = DIVERGENT if not noisy or styles.get(line) == DIVERGENT else MASKED
    table = Table(show_header=True, header_style="bold", expand=True)
    table.add_column("", width=1, no_wrap=True)
    table.add_column("real", overflow="fold", ratio=1)
    table.add_column("simulated", overflow="fold", ratio=1)
    rows = 0
    matcher = difflib.SequenceMatcher(None, real_lines, sim_lines, autojunk=False)
    for tag, r1, r2, s1, s2 in matcher.get_opcodes():
        for offset in range(max(r2 - r1, s2 - s1)):
            if rows >= max_lines:
                table.add_row("…", f"(cut at {max_lines} lines)", "")
                return table
            real_index, sim_index = r1 + offset, s1 + offset
            real_line = real_lines[real_index] if real_index < r2 else ""
            sim_line = sim_lines[sim_index] if sim_index < s2 else ""
            if tag == "equal":
                table.add_row(" ", real_line, sim_line)
            else:
                style = styles.get(real_index + 1, DIVERGENT) if real_index < r2 and sim_index < s2 else DIVERGENT
                table.add_row(Text("≠" if style == DIVERGENT else "~", style=style), Text(real_line, style=style), Text(sim_line, style=style))
            rows += 1
    return table


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
