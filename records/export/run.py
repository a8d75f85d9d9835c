"""The export's driver: every session of the store (of the token namespaces asked
for), each read in step order a page at a time, its examples written as they
come (or, hardest first, spooled to a scratch file and sorted there: lines.py).
Memory holds one session's recent history and the open files, never the store:
it stays flat as the store grows (benchmarks/export_scaling.py)."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from records.export.examples import Example, Generation, PromptBuilder, SessionExamples, Skips
from records.export.formats import WRITERS
from records.export.lines import Files, HardestFirst, InSessionOrder, Lines
from records.export.options import FORMATS, SPLITS, ExportFilter, ExportPlan
from records.export.seen import SeenOnDisk
from records.export.trajectories import Trajectory
from records.record import Record
from records.store.protocol import RecordStore


@dataclass(slots=True)
class ExportCounts:
    records: int = 0
    sessions: Counter[str] = field(default_factory=Counter)  # by split, those that gave examples
    lines: dict[str, Counter[str]] = field(default_factory=dict)  # by format, then split
    by_domain: Counter[str] = field(default_factory=Counter)  # examples (real targets)
    by_route: Counter[str] = field(default_factory=Counter)
    duplicates: int = 0  # examples (or pairs) identical to one already written
    skips: Skips = field(default_factory=Skips)


NO_PREFILL = Generation()

# The card's account of the order of each file's lines (format and split: the split is
# by session whatever the order, a line is always in its session's split).
SESSION_ORDER = {"by": "session", "sessions": "as the store lists them", "records": "in step order"}
HARDEST_FIRST = {
    "by": "divergence",
    "direction": "descending",
    "without_divergence": "last",
    "ties": "session order",
    "within": "each file",
}


def dataset_files(plan: ExportPlan) -> dict[str, dict[str, str]]:
    """Where each format's split goes, relative to the output folder."""
    return {name: {side: f"{name}/{side}.jsonl" for side in SPLITS} for name in plan.formats}


def written_files(plan: ExportPlan, counts: ExportCounts) -> dict[str, dict[str, str | None]]:
    """Each format's split's file, or None where it had no lines (no file is written)."""
    return {
        name: {side: relative if counts.lines[name][side] else None for side, relative in sides.items()}
        for name, sides in dataset_files(plan).items()
    }


async def export(
    store: RecordStore,
    builder: PromptBuilder,
    plan: ExportPlan,
    out: Path,
    *,
    progress: Callable[[int], None] = lambda n: None,
) -> ExportCounts:
    """Writes `plan`'s formats under `out` (see `dataset_files`); returns the counts."""
    counts = ExportCounts(lines={name: Counter() for name in plan.formats})
    out.mkdir(parents=True, exist_ok=True)
    # The scratch files can grow as large as the dataset (the hardest-first spool): they
    # go where the dataset goes, not to a /tmp that may be held in memory.
    with tempfile.TemporaryDirectory(prefix=".simroute-export-", dir=out) as scratch, ExitStack() as stack:
        paths = {
            (name, side): out / relative
            for name, sides in dataset_files(plan).items()
            for side, relative in sides.items()
        }
        for name in FORMATS:  # a dataset written here before (--overwrite): none of its files stays
            for side in SPLITS:
                (out / name / f"{side}.jsonl").unlink(missing_ok=True)
        files = Files(paths)
        stack.callback(files.close)
        seen = SeenOnDisk(Path(scratch) / "seen.db").open()
        stack.callback(seen.close)
        lines: Lines = InSessionOrder(files)
        if plan.hardest_first:
            spool = HardestFirst(files, Path(scratch) / "hardest.db")
            stack.callback(spool.close)
            lines = spool
        pairs = "preference" in plan.formats
        async for session in _sessions(store, plan):
            if not seen.add("session\0" + session):
                continue  # named twice by the store's listing
            side = plan.split.side(session)
            examples = SessionExamples(builder, plan.filter, counts.skips, pairs=pairs)
            trajectory = Trajectory(session) if "trajectories" in plan.formats else None
            wrote = False
            async for row in store.session_rows(session):
                counts.records += 1
                progress(1)
                try:
                    record = Record.from_json(row)
                except (AttributeError, KeyError, TypeError, ValueError):
                    counts.skips.unreadable += 1
                    continue
                if trajectory is not None:
                    trajectory.feed(record)
                await builder.ready(record.call)
                example = examples.feed(record)
                if example is not None:
                    wrote = _write(example, side, plan, lines, seen, counts) or wrote
            if trajectory is not None and (line := trajectory.line(side)) is not None:
                lines.add("trajectories", side, None, line)
                counts.lines["trajectories"][side] += 1
                wrote = True
            if wrote:
                counts.sessions[side] += 1
        lines.finish()
    return counts


async def _sessions(store: RecordStore, plan: ExportPlan) -> AsyncIterator[str]:
    async for session in sessions(store, plan.filter):
        yield session


async def sessions(store: RecordStore, where: ExportFilter) -> AsyncIterator[str]:
    """The sessions `where` reads: the one it names, or those of its token namespaces."""
    if where.session is not None:
        if where.in_scope(where.session):
            yield where.session
        return
    for prefix in where.prefixes:
        async for session in store.session_ids(prefix=prefix):
            yield session


def _write(example: Example, side: str, plan: ExportPlan, lines: Lines, seen: SeenOnDisk, counts: ExportCounts) -> bool:
    wrote = False
    divergence = example.record.divergence
    identity = json.dumps([example.prompt, example.target], ensure_ascii=False, sort_keys=True)
    if seen.add("example\0" + identity):
        for name in plan.formats:
            if name in WRITERS and name != "preference":
                lines.add(name, side, divergence, WRITERS[name](example, side))
                counts.lines[name][side] += 1
                wrote = True
        counts.by_domain[example.domain] += 1
        counts.by_route[str(example.record.decision.route)] += 1
    else:
        counts.duplicates += 1
    if "preference" in plan.formats and example.rejected is not None:
        if seen.add("pair\0" + identity + "\0" + example.rejected):
            lines.add("preference", side, divergence, WRITERS["preference"](example, side))
            counts.lines["preference"][side] += 1
            wrote = True
        else:
            counts.duplicates += 1
    return wrote


def card(
    counts: ExportCounts,
    plan: ExportPlan,
    *,
    source: dict[str, Any],
    version: str,
    created: str,
    generation: Generation = NO_PREFILL,
) -> dict[str, Any]:
    """The dataset card (`dataset.json`): what was exported, from where, how."""
    return {
        "simroute_version": version,
        "created": created,
        "source": source,
        "formats": list(plan.formats),
        # None: the split had no lines, and no file was written for it.
        "files": written_files(plan, counts),
        "generation": {
            "prefill": generation.prefill,
            "target": "the observation, after the prefill"
            if generation.prefill
            else "the observation inside <predicted_observation> tags",
        },
        "filters": plan.filter.describe(),
        "demonstrations": {"shown": plan.demonstrations, "from": "other train-side sessions of the exported namespaces"}
        if plan.demonstrations
        else {"shown": False},
        "order": HARDEST_FIRST if plan.hardest_first else SESSION_ORDER,
        "split": {
            "by": "session",
            "seed": plan.split.seed,
            "test_fraction": plan.split.test_fraction,
            "sessions": {side: counts.sessions[side] for side in SPLITS},
        },
        "counts": {
            "records_read": counts.records,
            "lines": {name: {side: by_side[side] for side in SPLITS} for name, by_side in counts.lines.items()},
            "examples_by_domain": dict(sorted(counts.by_domain.items())),
            "examples_by_route": dict(sorted(counts.by_route.items())),
            "duplicates_collapsed": counts.duplicates,
            "skipped": counts.skips.as_dict(),
        },
    }
