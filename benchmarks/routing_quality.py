"""Routing quality of the learned router on a held-apart workload: how many calls it
takes off the real side after K learning sessions, and what that costs in answers.

The workload runs the project's own real servers (benchmarks/servers/, not the tests'
fixtures the router was tuned on) and the PyPI `mcp-server-time`, each session one
`simroute mcp` process over stdio: the current time and a time conversion, a fetch of
a page served on loopback (the same URL every session), the ticket counter's
`next_ticket` (a write), `current_ticket` (a read of that state) and `server_version`
(a constant), the git-style server's `workspace_info` (echoes its path argument) and
`list_files` (depends on the repository's contents) over a temporary repository made
for the session (its contents differ from session to session), and repeated reads.

Method, for K in (1, 3, 10), in a fresh folder with a fresh world (counter at 0):
  1. K learning sessions through `mode: shadow` (the bundled GGUF world model, 48
     tokens, a deadline), then `simroute drain` and `simroute train` (a failed train,
     e.g. too few labels, is reported and the run goes on without a model file);
  2. the store (.simroute/) copied three times, every copy with
     `learned: {explore_rate: 0, freeze: true}`, and one session run on each, one after
     another against the same real world (a new repository, the same page, the same
     counter): (a) `mode: learned`, (b) `mode: real`, the truth, (c) `mode: real` again,
     the real-vs-real floor. The counter moves on between the three runs (each issues a
     ticket): a replayed counter answer is then wrong, while a real one differs from the
     truth's by the same step as the floor's does;
  3. per call i, the divergence of each run's answer from the truth's answer i, with
     simroute's own comparator (`compare(..., channel="mcp", noise=BUILTIN_NOISE)` on
     the records' observations), and `simroute eval --session <truth session> --json`
     with the learned run's config over the truth copy's store: the share the same
     frozen state predicts for that session.

Figures per K: the learned run's off-real share (records of provenance sim or replay,
over all its records), its mean fidelity vs the truth (1 - divergence), the floor (the
second real run's mean fidelity vs the truth), the share `simroute eval` predicts,
the wrong answers served (calls served off-real whose divergence from the truth is
above max(the floor's divergence on that call, learned.max_divergence)), and the wrong
answers on the stateful tool: `current_ticket` answers of the learned run that are not
the counter's real state when they were served (the counter moves only by the
session's own real `next_ticket`, so that state is the counter after the session; the
divergence rule alone cannot see these, since a stale number and a newer real one are
one value apart alike).

Targets: at K = 3, off-real share >= 0.5 with fidelity >= floor - 0.05 and zero wrong
answers on the stateful tool; |predicted - live share| <= 0.05 at every K.

`--smoke`: K in (1, 2), two servers (the counter and the page reader) and five calls
a session, the learning sessions in `mode: real` (replay evidence from real answers; no
world model needed), no `simroute train`; judges no target, writes no file.

Duration: the shadow work (`simroute drain`) dominates: about 10 s per simulated call on
two cores, so K = 1 and 3 take about 10 minutes, K = 10 (140 calls) 30 minutes or more.

Usage: python benchmarks/routing_quality.py [--sessions 1 3 10] [--keep DIR] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _results import add_smoke_flag, row, write_results
from kit.launch import model_path, simroute_executable, write_config
from kit.workload import World, run_session, served_page, session_records, sessions_of

from calls import Observation
from shadow.compare.divergence import BUILTIN_NOISE, compare

MAX_DIVERGENCE = 0.2  # learned.max_divergence's default: an answer is acceptable at or below it
WORLD_MODEL = {"max_tokens": 48, "deadline_s": 120}
LEARNED = {"explore_rate": 0, "freeze": True}
STATEFUL = "current_ticket"
# The store in the config folder's .simroute/ (copied whole); the config writer's own default is beside the config.
STORE = {"path": ".simroute/records.db"}
LICENSE = "Permission is granted to use, copy and modify this workspace.\n"
SMOKE_SERVERS = ("tickets", "pages")
CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}


def repository_files(n: int) -> dict[str, str]:
    """A repository's contents: the license is the same everywhere, the rest differs with n."""
    files = {"LICENSE": LICENSE, "README.md": f"# project {n}\n\nWorkspace number {n}.\n"}
    files.update({f"module_{i}.py": f"VALUE = {n * 10 + i}\n" * (i + 1) for i in range(1 + n % 3)})
    return files


def workload(world: World, repository: Path, *, smoke: bool) -> list[tuple[str, dict[str, Any]]]:
    """One session's calls, in order (front names: <server>_<tool>)."""
    page = {"url": world.page_url}
    if smoke:  # two servers, five calls: every upstream adds to a session's start
        return [
            ("pages_fetch", page),
            ("tickets_next_ticket", {}),
            ("tickets_current_ticket", {}),
            ("tickets_server_version", {}),
            ("pages_fetch", page),
        ]
    path = {"path": str(repository)}
    return [
        ("time_get_current_time", {"timezone": "UTC"}),
        ("pages_fetch", page),
        ("tickets_next_ticket", {}),
        ("tickets_current_ticket", {}),
        ("tickets_server_version", {}),
        ("repo_workspace_info", path),
        ("repo_list_files", path),
        ("time_convert_time", CONVERT),
        ("repo_read_file", {**path, "name": "LICENSE"}),
        # Repeated reads, as an agent makes them.
        ("pages_fetch", page),
        ("tickets_server_version", {}),
        ("repo_list_files", path),
        ("time_convert_time", CONVERT),
        ("tickets_current_ticket", {}),
    ]


def simroute(*args: str, timeout: float | None = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([simroute_executable(), *args], capture_output=True, text=True, timeout=timeout)


@dataclass
class Run:
    """One session on one copy of the store."""

    config: Path
    session: str
    records: list[dict]
    answers: list[str]

    def observations(self) -> list[Observation]:
        return [Observation.from_json(_json(r["observation"])) for r in self.records]


@dataclass
class Outcome:
    k: int
    calls: int
    off_real: int
    fidelity: float
    floor: float
    wrong: int
    stateful_wrong: int
    stateful_wrong_by_divergence: int
    predicted: float | None
    eval_report: dict | None
    eval_error: str | None
    trained: str
    routes: dict[str, int] = field(default_factory=dict)
    wrong_calls: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.off_real / self.calls if self.calls else 0.0


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


async def session_run(config: Path, calls: list[tuple[str, dict[str, Any]]]) -> Run:
    before = set(sessions_of(config)) if (config.parent / ".simroute").exists() else set()
    answers = await run_session(config, calls)
    new = [s for s in sessions_of(config) if s not in before]
    if len(new) != 1:
        raise RuntimeError(f"{config}: expected one new session, found {new}")
    records = session_records(config, new[0])
    if len(records) != len(calls):
        raise RuntimeError(f"{config}: {len(calls)} calls made, {len(records)} records in session {new[0]}")
    texts = ["\n".join(getattr(block, "text", "") for block in answer.content) for answer in answers]
    return Run(config, new[0], records, texts)


def copy_store(source: Path, target: Path, **extra: Any) -> Path:
    """A copy of the learning folder's store under `target`, with its own config
    (learning frozen, no exploration: what the router knew when it started)."""
    target.mkdir()
    shutil.copytree(source / ".simroute", target / ".simroute")
    # Nothing is pending after `simroute drain`; were anything left, the runs would not start on it.
    return write_config(target, store=STORE, learned=LEARNED, shadow={"drain_on_start": False}, **extra)


async def measure(k: int, base: Path, url: str, *, smoke: bool) -> Outcome:
    folder = base / f"k{k}"
    world = World(folder / "world", url)
    trained = await learn(k, folder, world, smoke=smoke)
    return await evaluate(k, folder, world, smoke=smoke, trained=trained)


async def learn(k: int, folder: Path, world: World, *, smoke: bool) -> str:
    """K learning sessions in folder/learning, drained and trained; says how training went."""
    learning_folder = folder / "learning"
    learning_folder.mkdir(parents=True)
    servers = {"mcpServers": world.servers(*SMOKE_SERVERS) if smoke else world.servers()}
    if smoke:
        learning = write_config(learning_folder, mode="real", store=STORE, **servers)
    else:
        shadow = {"stop_grace_s": 0, "drain_on_start": False}
        learning = write_config(
            learning_folder, mode="shadow", shadow=shadow, world_model=WORLD_MODEL, store=STORE, **servers
        )
    for n in range(k):
        repository = world.repository(f"learning-{n}", repository_files(n))
        await session_run(learning, workload(world, repository, smoke=smoke))
        print(f"  K={k}: learning session {n + 1}/{k} done", file=sys.stderr)
    if not smoke:
        drained = simroute("drain", "--config", str(learning), timeout=None)  # as long as the world model takes
        if drained.returncode != 0:
            raise RuntimeError(f"simroute drain failed: {drained.stderr}")
        trained = simroute("train", "--config", str(learning))
        output = (trained.stderr or trained.stdout).strip().splitlines() or [""]
        trained_note = "trained" if trained.returncode == 0 else f"no model ({output[-1]})"
    else:
        trained_note = "not run (smoke)"
    return trained_note


async def evaluate(k: int, folder: Path, world: World, *, smoke: bool, trained: str) -> Outcome:
    """The learned, truth and floor runs on copies of folder/learning's store, compared."""
    learning_folder = folder / "learning"
    servers = {"mcpServers": world.servers(*SMOKE_SERVERS) if smoke else world.servers()}
    model = {} if smoke else {"world_model": WORLD_MODEL}
    configs = {
        name: copy_store(learning_folder, folder / name, mode=mode, **servers, **(model if mode == "learned" else {}))
        for name, mode in (("learned", "learned"), ("truth", "real"), ("floor", "real"))
    }
    repository = world.repository("evaluation", repository_files(k + 7))
    calls = workload(world, repository, smoke=smoke)
    learned = await session_run(configs["learned"], calls)
    counter_then = world.tickets_issued()  # the real state the learned run's reads had to answer
    truth = await session_run(configs["truth"], calls)
    floor = await session_run(configs["floor"], calls)

    truth_obs, learned_obs, floor_obs = truth.observations(), learned.observations(), floor.observations()
    learned_div = [
        compare(t, o, channel="mcp", noise=BUILTIN_NOISE).score for t, o in zip(truth_obs, learned_obs, strict=True)
    ]
    floor_div = [
        compare(t, o, channel="mcp", noise=BUILTIN_NOISE).score for t, o in zip(truth_obs, floor_obs, strict=True)
    ]
    off_real = [r["provenance"] in ("sim", "replay") for r in learned.records]
    routes: dict[str, int] = {}
    for record in learned.records:
        routes[record["provenance"]] = routes.get(record["provenance"], 0) + 1
    wrong_calls = [
        f"{r['tool']}#{i} ({r['provenance']}, divergence {d:.2f} > {max(f, MAX_DIVERGENCE):.2f})"
        for i, (r, away, d, f) in enumerate(zip(learned.records, off_real, learned_div, floor_div, strict=True))
        if away and d > max(f, MAX_DIVERGENCE)
    ]
    stateful_wrong = sum(
        1
        for r, text in zip(learned.records, learned.answers, strict=True)
        if r["tool"] == STATEFUL and text.strip() != f"current ticket {counter_then}"
    )
    stateful_by_divergence = sum(1 for c in wrong_calls if c.startswith(f"{STATEFUL}#"))

    # The prediction: the learned config (mode learned, frozen) over the truth copy's store,
    # deciding the truth session from what was known before it (eval decides by the config's mode).
    predicting = configs["truth"].with_name("predict.yaml")
    predicting.write_text(configs["learned"].read_text())
    evaluated = simroute("eval", "--config", str(predicting), "--session", truth.session, "--json")
    report, error = None, None
    if evaluated.returncode == 0:
        try:
            report = json.loads(evaluated.stdout)
        except json.JSONDecodeError:
            error = f"not JSON: {evaluated.stdout.strip()[:200]}"
    else:
        error = (evaluated.stderr or evaluated.stdout).strip()[-300:]
    return Outcome(
        k=k,
        calls=len(learned.records),
        off_real=sum(off_real),
        fidelity=statistics.fmean(1 - d for d in learned_div),
        floor=statistics.fmean(1 - d for d in floor_div),
        wrong=len(wrong_calls),
        stateful_wrong=stateful_wrong,
        stateful_wrong_by_divergence=stateful_by_divergence,
        predicted=report["off_real_share"] if report else None,
        eval_report=report,
        eval_error=error,
        trained=trained,
        routes=routes,
        wrong_calls=wrong_calls,
    )


def print_table(outcomes: list[Outcome]) -> None:
    print(
        f"\n{'K':>3} {'calls':>5} {'off-real':>8} {'share':>6} {'fidelity':>8} {'floor':>6} {'predicted':>9} "
        f"{'|diff|':>6} {'wrong':>5} {'stateful wrong':>14}  served by"
    )
    for o in outcomes:
        predicted = f"{o.predicted:9.3f}" if o.predicted is not None else f"{'n/a':>9}"
        diff = f"{abs(o.predicted - o.share):6.3f}" if o.predicted is not None else f"{'n/a':>6}"
        print(
            f"{o.k:3} {o.calls:5} {o.off_real:8} {o.share:6.3f} {o.fidelity:8.3f} {o.floor:6.3f} {predicted} {diff} "
            f"{o.wrong:5} {o.stateful_wrong:14}  {o.routes}"
        )
    for o in outcomes:
        print(f"\nK={o.k}: simroute train: {o.trained}")
        if o.wrong_calls:
            print(f"  wrong answers served: {'; '.join(o.wrong_calls)}")
        if o.stateful_wrong_by_divergence != o.stateful_wrong:
            print(
                f"  {STATEFUL}: {o.stateful_wrong} stale answer(s), "
                f"{o.stateful_wrong_by_divergence} over the divergence rule"
            )
        if o.eval_report is not None:
            why = o.eval_report.get("why_real")
            print(
                f"  simroute eval: routes {o.eval_report.get('routes')}, "
                f"fidelity {o.eval_report.get('fidelity')}, why real {why}"
            )
        else:
            print(f"  simroute eval --session --json did not answer: {o.eval_error}")


def judge(outcomes: list[Outcome]) -> list[str]:
    """The targets, each with met/MISSED."""
    lines = []
    at_three = next((o for o in outcomes if o.k == 3), None)
    if at_three is not None:
        met = at_three.share >= 0.5 and at_three.fidelity >= at_three.floor - 0.05 and at_three.stateful_wrong == 0
        lines.append(
            f"K=3: off-real share {at_three.share:.3f} >= 0.5, fidelity {at_three.fidelity:.3f} >= floor - 0.05 "
            f"({at_three.floor - 0.05:.3f}), stateful wrong {at_three.stateful_wrong} == 0: "
            f"{'met' if met else 'MISSED'}"
        )
    for o in outcomes:
        if o.predicted is None:
            lines.append(f"K={o.k}: |predicted - live share| <= 0.05: MISSED (no prediction)")
        else:
            gap = abs(o.predicted - o.share)
            lines.append(f"K={o.k}: |predicted - live share| = {gap:.3f} <= 0.05: {'met' if gap <= 0.05 else 'MISSED'}")
    return lines


def result_rows(outcomes: list[Outcome]) -> list[dict]:
    rows = []
    for o in outcomes:
        at_three = o.k == 3
        rows += [
            row(f"K={o.k}: off-real share", o.share, "share", target=">= 0.5" if at_three else None, better="higher"),
            row(
                f"K={o.k}: mean fidelity vs truth",
                o.fidelity,
                "fidelity",
                baseline="the real-vs-real floor",
                better="higher",
            ),
            row(f"K={o.k}: real-vs-real floor", o.floor, "fidelity"),
            row(
                f"K={o.k}: fidelity - floor",
                o.fidelity - o.floor,
                "fidelity",
                target=">= -0.05" if at_three else None,
                better="higher",
            ),
            row(f"K={o.k}: wrong answers served", o.wrong, "calls", better="lower"),
            row(
                f"K={o.k}: wrong answers on {STATEFUL}",
                o.stateful_wrong,
                "calls",
                target="== 0" if at_three else None,
                better="lower",
            ),
        ]
        if o.predicted is not None:
            rows += [
                row(f"K={o.k}: share predicted by simroute eval", o.predicted, "share"),
                row(
                    f"K={o.k}: |predicted - live share|",
                    abs(o.predicted - o.share),
                    "share",
                    target="<= 0.05",
                    better="lower",
                ),
            ]
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sessions", type=int, nargs="+", default=[1, 3, 10], help="learning sessions K, one measurement each"
    )
    parser.add_argument(
        "--keep", type=Path, help="work in this (new) folder and keep it, to read the stores afterwards"
    )
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.sessions = [1, 2]
    else:
        model_path()  # the bundled world model must be there: the shadow sessions need it
    base = options.keep or Path(tempfile.mkdtemp(prefix="simroute-routing-quality-"))
    base.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    outcomes = []
    try:
        with served_page(base) as url:
            for k in options.sessions:
                outcomes.append(await measure(k, base, url, smoke=options.smoke))
                print(f"K={k} measured ({time.perf_counter() - started:.0f} s so far)", file=sys.stderr)
    finally:
        if options.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    learning = "mode real (smoke)" if options.smoke else "mode shadow, bundled GGUF"
    print(f"\nlearned run vs truth, per K learning sessions ({learning}); {time.perf_counter() - started:.0f} s")
    print_table(outcomes)
    if options.smoke:
        print(
            "\ntargets: at K=3 share >= 0.5, fidelity >= floor - 0.05, 0 stateful wrong; |predicted - live| <= 0.05 "
            "(not judged in a smoke run)"
        )
        if unanswered := [o.k for o in outcomes if o.eval_report is None]:
            sys.exit(f"simroute eval --session --json did not answer at K={unanswered}")
        return
    print("\ntargets:")
    for line in judge(outcomes):
        print(f"  {line}")
    write_results(__file__, "Routing quality of the learned router on a held-apart workload", result_rows(outcomes))


if __name__ == "__main__":
    asyncio.run(main())
