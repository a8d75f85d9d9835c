"""Text compared by lines, and changed lines word by word.

A line that differs only in words of a noisy shape (a timestamp, a duration, a
uuid) is noise; a line that differs in other words is content. The amount of a
text's disagreement is the share of its lines that differ, a changed line
counting the share of its words that changed.
"""

from __future__ import annotations

import difflib

from shadow.compare.difference import Difference, compare_words, noise_key

# Over this many lines a text is compared in evenly spaced windows, not whole.
MAX_LINES = 4000
_WINDOWS, _WINDOW_LINES = 16, 48
_PUNCTUATION = "\"'`,;:()[]{}<>"


def compare_text(real: str, sim: str, path: str, *, sampled: bool = False) -> tuple[list[Difference], str]:
    """(differences, note): a text is one unit of comparison, so the amounts of its
    differences add up to at most 1. With `sampled` or over `MAX_LINES` lines, only
    windows of the text are compared and the note says so."""
    if real == sim:
        return [], ""
    real_lines, sim_lines = real.split("\n"), sim.split("\n")
    longest = max(len(real_lines), len(sim_lines))
    if not sampled and longest <= MAX_LINES:
        return _scaled(_diff_lines(real_lines, sim_lines, 0, 0, path), longest), ""
    compared = 0
    found: list[Difference] = []
    for window in range(_WINDOWS):
        real_start = window * max(0, len(real_lines) - _WINDOW_LINES) // max(1, _WINDOWS - 1)
        sim_start = window * max(0, len(sim_lines) - _WINDOW_LINES) // max(1, _WINDOWS - 1)
        real_part = real_lines[real_start : real_start + _WINDOW_LINES]
        sim_part = sim_lines[sim_start : sim_start + _WINDOW_LINES]
        found += _diff_lines(real_part, sim_part, real_start, sim_start, path)
        compared += max(len(real_part), len(sim_part))
    note = f"{path}: {len(real_lines)} and {len(sim_lines)} lines, compared in {_WINDOWS} windows of {_WINDOW_LINES}"
    return _scaled(found, max(1, compared)), note


def _scaled(found: list[Difference], lines: float) -> list[Difference]:
    return [Difference(d.path, d.kind, d.real, d.sim, d.amount / lines, d.noise_key, d.detector) for d in found]


def _diff_lines(real: list[str], sim: list[str], real_base: int, sim_base: int, path: str) -> list[Difference]:
    """Differences of two runs of lines, amounts in lines (a changed line counts
    the share of its words that changed)."""
    found: list[Difference] = []
    matcher = difflib.SequenceMatcher(None, real, sim, autojunk=False)
    for tag, r1, r2, s1, s2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(r2 - r1, s2 - s1) if tag == "replace" else 0
        for offset in range(paired):
            found += _diff_line(real[r1 + offset], sim[s1 + offset], f"{path}:{real_base + r1 + offset + 1}")
        for index in range(r1 + paired, r2):  # lines only the real side has
            line_path = f"{path}:{real_base + index + 1}"
            found.append(
                Difference(line_path, "content", real[index], None, 1.0, f"{noise_key(path)}#L{real_base + index + 1}")
            )
        for index in range(s1 + paired, s2):  # lines only the simulated side has
            line_path = f"{path}:+{sim_base + index + 1}"
            found.append(
                Difference(line_path, "content", None, sim[index], 1.0, f"{noise_key(path)}#L+{sim_base + index + 1}")
            )
    return found


def _diff_line(real: str, sim: str, line_path: str) -> list[Difference]:
    base = noise_key(line_path.rsplit(":", 1)[0]) + "#L" + line_path.rsplit(":", 1)[1]
    real_words, sim_words = real.split(), sim.split()
    if real_words == sim_words:  # only spacing differs
        return [Difference(line_path, "format", real, sim, 0.5, base)]
    if len(real_words) != len(sim_words):
        return [Difference(line_path, "content", real, sim, 1.0, base)]
    share = 1.0 / len(real_words)
    found: list[Difference] = []
    for position, (real_word, sim_word) in enumerate(zip(real_words, sim_words, strict=True)):
        if real_word != sim_word:
            real_core, sim_core = real_word.strip(_PUNCTUATION), sim_word.strip(_PUNCTUATION)
            if real_core and sim_core and real_word.replace(real_core, "", 1) == sim_word.replace(sim_core, "", 1):
                real_word, sim_word = real_core, sim_core  # `"2026-…Z",` in JSON-like text: the value inside
            found += compare_words(real_word, sim_word, line_path, amount=share, key=f"{base}.W{position + 1}")
    return found
