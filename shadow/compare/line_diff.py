"""The record view's diffs. The JSON tree shows both sides in the canonical form
the divergence was computed on, so its paths are the evidence's. The line diffs
align real and simulated line by line (difflib), each row marked equal, divergent
or masked (noise):

- text: the observations' text, any channel; a changed line is noise when the
  built-in detectors (timestamps, ids, durations…) explain all its differences
  (shadow/compare/text_diff.py, as `simroute diff` shows it);
- screen (shell) and snapshot (browser): the canonical section the divergence was
  computed on (shadow/compare/observation_forms.py), marked by the record's own evidence:
  its divergent paths (`$.screen:12`, a simulated-only line `$.screen:+3`) and the
  paths the noise model masked.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from calls import Observation
from shadow.compare.observation_forms import canonical
from shadow.compare.text_diff import compare_text

MAX_ROWS = 2000
EQUAL, DIVERGENT, MASKED = "equal", "divergent", "masked"
SECTIONS = {"shell": "screen", "browser": "snapshot"}  # channel -> its line-diffed section


def _line_of(path: str, prefix: str) -> tuple[str, int] | None:
    """("real" | "sim", 1-based line) of a difference's path under `prefix`
    (`$.screen:12`, `$.screen:+3#instant`), else None."""
    match = re.match(rf"^{re.escape(prefix)}:(\+?)(\d+)", path)
    if match is None:
        return None
    return ("sim" if match[1] else "real", int(match[2]))


def evidence_states(section: str, evidence: dict[str, Any]) -> dict[tuple[str, int], str]:
    """Line states from a record's evidence (divergent wins over masked on a line)."""
    states: dict[tuple[str, int], str] = {}
    for path in evidence.get("masked") or []:
        if (line := _line_of(path, f"$.{section}")) is not None:
            states[line] = MASKED
    for item in evidence.get("divergent") or []:
        if (line := _line_of(item.get("path", ""), f"$.{section}")) is not None:
            states[line] = DIVERGENT
    return states


def text_states(real_text: str, sim_text: str) -> dict[tuple[str, int], str]:
    """Line states from the text diff: noise when a detector explains every difference."""
    states: dict[tuple[str, int], str] = {}
    for difference in compare_text(real_text, sim_text, "$")[0]:
        line = _line_of(difference.path, "$")
        if line is None:
            continue
        noisy = difference.detector is not None
        states[line] = DIVERGENT if not noisy or states.get(line) == DIVERGENT else MASKED
    return states


def aligned(
    real_text: str, sim_text: str, states: dict[tuple[str, int], str], *, max_rows: int = MAX_ROWS
) -> dict[str, Any]:
    """Rows {real, sim, real_line, sim_line, state}. A changed line the states do not
    name (evidence lists a capped number of paths) counts as divergent."""
    real_lines, sim_lines = real_text.split("\n"), sim_text.split("\n")
    rows: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(None, real_lines, sim_lines, autojunk=False)
    for tag, r1, r2, s1, s2 in matcher.get_opcodes():
        for offset in range(max(r2 - r1, s2 - s1)):
            if len(rows) >= max_rows:
                return {"rows": rows, "cut": True}
            real_index, sim_index = r1 + offset, s1 + offset
            has_real, has_sim = real_index < r2, sim_index < s2
            if tag == "equal":
                state = EQUAL
            else:
                state = (
                    (has_real and states.get(("real", real_index + 1)))
                    or (has_sim and states.get(("sim", sim_index + 1)))
                    or DIVERGENT
                )
            rows.append(
                {
                    "real": real_lines[real_index] if has_real else None,
                    "sim": sim_lines[sim_index] if has_sim else None,
                    "real_line": real_index + 1 if has_real else None,
                    "sim_line": sim_index + 1 if has_sim else None,
                    "state": state,
                }
            )
    return {"rows": rows, "cut": False}


def compared(form: Any) -> dict[str, Any]:
    """A canonical form as the tree the divergence's paths name: the outcome facts
    (`$.exit_code`, `$.error`) and the sections (`$.result.count`, `$.screen`)."""
    return {**{name: fact.value for name, fact in form.outcome.items()}, **form.sections}


def record_diffs(row: dict[str, Any]) -> dict[str, Any]:
    """The views a shadowed record's page offers: `tree` (both sides in the canonical
    form the evidence's paths name), `text` (the observations' text), and `screen` for
    shell or `snapshot` for browser records. Empty when the record was not shadowed."""
    if not row.get("observation") or not row.get("shadow"):
        return {}
    served, other = Observation.from_json(row["observation"]), Observation.from_json(row["shadow"])
    real, sim = (served, other) if row.get("provenance") == "real" else (other, served)
    channel = row.get("channel", "mcp")
    real_form, sim_form = canonical(real, channel), canonical(sim, channel)
    diffs: dict[str, Any] = {
        "tree": {"real": compared(real_form), "sim": compared(sim_form)},
        "text": aligned(real.text, sim.text, text_states(real.text, sim.text)),
    }
    section = SECTIONS.get(channel)
    if section is not None:
        real_text, sim_text = real_form.sections.get(section), sim_form.sections.get(section)
        if isinstance(real_text, str) and isinstance(sim_text, str):
            diffs[section] = aligned(
                real_text, sim_text, evidence_states(section, row.get("divergence_evidence") or {})
            )
    return diffs
