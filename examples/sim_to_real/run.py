"""Sim-to-real in miniature: a policy learns how to read a paginated, rate-limited API
from replayed episodes under a seeded perturbation plan, then is judged on the real API.

1. Record: one real episode reads every page of the catalogue (each page three times,
   paced under the rate limit) on a `simroute serve` that tags what it records as the
   recording `catalog-crawl`.
2. Train: a bandit over three strategies (strategies.py) plays `--budget` episodes on
   another `simroute serve`, each `route: replay` from that recording with a perturbation
   plan drawn from the episode's seed (503s and a 429 rate limit, both with Retry-After).
   Nothing reaches the API: a replay miss is an error, not a real call.
3. Evaluate on `route: real` episodes: the untrained bandit (uniform over strategies),
   the replay-trained one, and one trained on real episodes alone with the same budget.

The API counts every request that reached it, which is what each policy cost the real
side. Usage: python examples/sim_to_real/run.py [--budget 30] [--eval 20]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its modules beside it

from catalog_api import CLIENT_HEADER, Catalog, serving
from episodes import Answer, Episodes, InfraError
from policy import Bandit
from serve import RECORDING, write_config
from serve import serving as simroute_serving
from strategies import RETRIES, STRATEGIES

# The faults training sees, drawn from each episode's seed (docs/perturbations.md).
PLAN = {
    "rules": [
        {
            "name": "flaky",
            "kind": "error",
            "status": 503,
            "match": {"channel": "http"},
            "probability": 0.15,
            "retry_after_s": 1,
        },
        {
            "name": "api-limit",
            "kind": "rate_limit",
            "match": {"channel": "http"},
            "limit": 3,
            "window": 4,
            "retry_after_s": 1,
        },
    ]
}
TRAIN_OPTIONS = {"route": "replay", "recording": RECORDING, "channels": ["http"], "perturbation": PLAN}
REAL_OPTIONS = {"route": "real", "channels": ["http"]}
TRAIN_SEEDS, EVAL_SEEDS = 1000, 5000


@dataclass
class Spent:
    """What a phase cost the real API, and how it went."""

    episodes: int = 0
    successes: int = 0
    real_requests: int = 0
    real_429s: int = 0
    infra_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    answers: dict[str, int] = field(default_factory=dict)  # the steps' answers by provenance, and perturbations by kind

    @property
    def success(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0


@dataclass
class Result:
    policy: str
    choice: str  # what it plays when evaluated
    training: Spent
    evaluation: Spent
    recording: Spent | None = None  # the real episode its training replayed

    @property
    def real_cost(self) -> tuple[int, int]:
        """(requests, 429s) its training cost the real API, the recording included."""
        spent = [self.training, *([self.recording] if self.recording else [])]
        return sum(s.real_requests for s in spent), sum(s.real_429s for s in spent)

    @property
    def training_seconds(self) -> float:
        """Wall time of its training, the recording included."""
        return self.training.seconds + (self.recording.seconds if self.recording else 0.0)

    @property
    def infra_errors(self) -> list[str]:
        spent = [self.training, self.evaluation, *([self.recording] if self.recording else [])]
        return [error for s in spent for error in s.infra_errors]


def play(episodes: Episodes, base: str, strategy: str, seed: int, options: dict, client: str, *, real: bool) -> bool:
    """One episode with one strategy; whether it read the whole catalogue."""
    episode = episodes.reset(seed, options)
    try:

        def get(url: str) -> Answer:
            return episodes.get(episode, url, {CLIENT_HEADER: client})

        sleep: Callable[[float], None] = time.sleep if real else (lambda seconds: None)  # replay: virtual time
        return STRATEGIES[strategy](base, get, sleep) == Catalog().ids
    finally:
        episodes.close(episode)


def run_phase(catalog: Catalog, count: int, one: Callable[[int], bool]) -> Spent:
    """`count` episodes of `one(i)`; an infra error is counted and the episode dropped."""
    spent, started = Spent(), time.monotonic()
    catalog.counters.take()
    for i in range(count):
        try:
            success = one(i)
        except InfraError as error:
            spent.infra_errors.append(str(error))
            continue
        spent.episodes += 1
        spent.successes += success
    spent.real_requests, spent.real_429s = catalog.counters.take()
    spent.seconds = time.monotonic() - started
    return spent


def record(catalog: Catalog, base: str, url: str) -> Spent:
    """The recording: one real episode reading each page RETRIES + 1 times, paced under
    the limit, so a replayed retry has a recorded answer (replay answers a call's n-th
    repetition with the recording's n-th)."""
    episodes, pace_s = Episodes(url), catalog.window_s / catalog.limit + 0.05

    def crawl(i: int) -> bool:
        episode = episodes.reset(1, REAL_OPTIONS)
        try:
            page: str | None = f"{base}/items"
            while page is not None:
                answers = []
                for _ in range(RETRIES + 1):
                    answers.append(episodes.get(episode, page, {CLIENT_HEADER: "recorder"}))
                    time.sleep(pace_s)
                if any(a.status != 200 for a in answers):
                    raise InfraError(f"the recording crawl was refused at {page}: {[a.status for a in answers]}")
                cursor = answers[0].body.get("next_cursor")
                page = f"{base}/items?cursor={cursor}" if cursor else None
            return True
        finally:
            episodes.close(episode)

    spent = run_phase(catalog, 1, crawl)
    spent.answers = dict(sorted(episodes.answers.items()))
    return spent


def train(
    catalog: Catalog, base: str, url: str, budget: int, options: dict, *, real: bool, seed: int = 0
) -> tuple[Bandit, Spent]:
    bandit, episodes = Bandit(list(STRATEGIES), seed=seed), Episodes(url)

    def one(i: int) -> bool:
        arm = bandit.sample()
        success = play(episodes, base, arm, TRAIN_SEEDS + i, options, f"train-{seed}-{i}", real=real)
        bandit.learn(arm, success)
        return success

    spent = run_phase(catalog, budget, one)
    spent.answers = dict(sorted(episodes.answers.items()))
    return bandit, spent


def evaluate(catalog: Catalog, base: str, url: str, count: int, choose: Callable[[], str], name: str) -> Spent:
    episodes = Episodes(url)
    spent = run_phase(
        catalog,
        count,
        lambda i: play(episodes, base, choose(), EVAL_SEEDS + i, REAL_OPTIONS, f"eval-{name}-{i}", real=True),
    )
    spent.answers = dict(sorted(episodes.answers.items()))
    return spent


def run(budget: int, evaluations: int, workdir: Path, log: Callable[[str], None] = print) -> list[Result]:
    catalog = Catalog()
    recorder, trainer = write_config(workdir, record=True), write_config(workdir, record=False)
    with serving(catalog) as base, simroute_serving(recorder, trainer) as (record_url, url):
        recorded = record(catalog, base, record_url)
        log(f"recorded {RECORDING!r}: {recorded.real_requests} real requests")
        untrained = Bandit(list(STRATEGIES), seed=1)
        replayed, replay_training = train(catalog, base, url, budget, TRAIN_OPTIONS, real=False)
        log(f"trained on replay: {budget} episodes in {replay_training.seconds:.1f} s, plays {replayed.best()!r}")
        log(f"  its steps' answers: {replay_training.answers}")
        on_real, real_training = train(catalog, base, url, budget, REAL_OPTIONS, real=True)
        log(f"trained on real: {budget} episodes in {real_training.seconds:.1f} s, plays {on_real.best()!r}")
        log(f"  its steps' answers: {real_training.answers}")
        results = []
        for name, bandit, training, choose in [
            ("untrained", untrained, Spent(), untrained.sample),
            ("trained on replay + perturbations", replayed, replay_training, replayed.best),
            ("trained on real", on_real, real_training, on_real.best),
        ]:
            evaluation = evaluate(catalog, base, url, evaluations, choose, name.split()[-1])
            choice = "uniform over the strategies" if bandit is untrained else bandit.best()
            results.append(Result(name, choice, training, evaluation, recorded if bandit is replayed else None))
            log(f"evaluated {name!r} on real: {evaluation.successes}/{evaluation.episodes}")
    return results


def table(results: list[Result]) -> str:
    header = (
        f"{'policy':34} {'plays':30} {'train s':>7} {'train real calls':>16} {'train 429s':>10} "
        f"{'success on real':>15} {'eval real calls':>15}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        success = f"{r.evaluation.successes}/{r.evaluation.episodes} ({r.evaluation.success:.0%})"
        lines.append(
            f"{r.policy:34} {r.choice:30} {r.training_seconds:7.1f} {r.real_cost[0]:16} {r.real_cost[1]:10} "
            f"{success:>15} {r.evaluation.real_requests:15}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=30, help="training episodes, for each way of training")
    parser.add_argument("--eval", type=int, default=20, help="real episodes each policy is judged on")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sim-to-real-") as folder:
        print(table(run(options.budget, options.eval, Path(folder))))


if __name__ == "__main__":
    main()
