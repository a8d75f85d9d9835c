"""`simroute compare-models`' run: each held-out session's calls replayed against
each candidate world model, in step order, with the history the router would give
it (the observations the agent saw before the call) and examples from the
training side only (router/runtime/example_lookup.py ExampleLookup.withheld).

A candidate is built the way the router serves it (router/runtime/simulated_side.py): the
config's world-model settings, with the candidate's GGUF file in-process or its
endpoint as an OpenAI-compatible model runner. Candidates run one after the other: one
model in memory at a time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from backends.replay import ReplayBackend
from backends.world_model.checks import check
from backends.world_model.model_runner import Completion
from backends.world_state.session import WorldState
from calls import Observation, Session, Turn
from records.judge.pairs import Pair
from records.judge.run import JudgeModel, judge_pair
from records.record import Record
from records.store.protocol import RecordStore
from router.config import Config
from router.reports.compare_state import HistoryStates
from router.reports.held_out import HeldOut, real_answer
from router.reports.model_compare import CallResult
from router.runtime.example_lookup import keyed_lookup
from router.runtime.simulated_side import build_model_runner, build_world_model_simulator, with_world_state
from router.runtime.training_prompts import DOMAINS
from shadow.compare.divergence import compare

# What the simulator answers when the model gave none (simulator.py): never well-formed.
_MODEL_FAILED = ("simroute: world model failed", "simroute: no world-model domain")
_FLOOR_CANDIDATES = 8


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    location: str  # a GGUF file, or an OpenAI-compatible endpoint's base URL
    lora_path: str | None = None  # a GGUF LoRA adapter the in-process model applies (`world_model.lora_path`)

    @property
    def served(self) -> bool:
        return self.location.startswith(("http://", "https://"))

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "model": self.location, **({"lora_path": self.lora_path} if self.lora_path else {})}


def parse_candidate(text: str) -> Candidate:
    """`NAME=LOCATION` or `LOCATION` (named after the file or the endpoint); a GGUF file
    with an adapter is `MODEL.gguf+ADAPTER.gguf` (the way a simulated answer's source
    names them). Raises ValueError for a GGUF file that does not exist."""
    name, sep, location = text.partition("=")
    if not sep or "://" in name:
        name, location = "", text
    location = location.strip()
    if not location:
        raise ValueError(f"no model in {text!r} (NAME=FILE.gguf or NAME=http://host:port/v1)")
    lora_path = None
    model, plus, adapter = location.rpartition("+")
    if plus and model.endswith(".gguf") and adapter.endswith(".gguf") and "://" not in location:
        location, lora_path = model, adapter
        if not Path(adapter).expanduser().is_file():
            raise ValueError(f"{adapter}: no such GGUF adapter")
    candidate = Candidate(name.strip() or _default_name(location), location, lora_path)
    if not candidate.served and not Path(location).expanduser().is_file():
        raise ValueError(f"{location}: no such GGUF file (or give an endpoint as http://host:port/v1)")
    return candidate


def _default_name(location: str) -> str:
    if location.startswith(("http://", "https://")):
        return location.split("://", 1)[1].split("/", 1)[0]
    return Path(location).stem


def candidate_config(config: Config, candidate: Candidate, *, temperature: float | None) -> Config:
    """The config the router would run with `candidate` as its world model."""
    update: dict[str, Any] = {} if temperature is None else {"temperature": temperature}
    if candidate.served:
        update |= {"engine": "openai", "url": candidate.location}
    else:
        # The candidate is the files it names: the configured adapter belongs to the configured model.
        lora_path = str(Path(candidate.lora_path).expanduser().resolve()) if candidate.lora_path else None
        update |= {
            "engine": "llama",
            "model_path": str(Path(candidate.location).expanduser().resolve()),
            "lora_path": lora_path,
        }
    return config.model_copy(update={"world_model": config.world_model.model_copy(update=update)})


class MeteredModelRunner:
    """A model runner that keeps what the current call cost (every attempt's
    tokens) and the prompts it was sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.completions: list[Completion] = []
        self.prompts: list[list[dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def reset(self) -> None:
        self.completions, self.prompts = [], []

    async def complete(self, messages: list[dict[str, Any]], **options: Any) -> Completion:
        self.prompts.append(messages)
        completion = await self.inner.complete(messages, **options)
        self.completions.append(completion)
        return completion


@dataclass(slots=True)
class Target:
    """A held-out call, what the agent had seen before it, and its real answer."""

    record: Record
    turns: list[Turn]  # the session's turns, shared by its targets (a copy each would grow with the square)
    seen: int  # how many of them the agent had seen before this call
    real: Observation
    times: list[float] = field(default_factory=list)  # when each turn was recorded (shared as `turns`)
    floor: float | None = None
    schema: dict[str, Any] | None = field(default=None)

    @property
    def history(self) -> list[Turn]:
        return self.turns[: self.seen]


async def targets(store: RecordStore, sessions: Sequence[str], *, max_calls: int | None) -> list[Target]:
    """The held-out calls with a real answer, in session and step order."""
    out: list[Target] = []
    for session in sessions:
        history: list[Turn] = []
        times: list[float] = []
        async for row in store.session_rows(session):
            try:
                record = Record.from_json(row)
            except (AttributeError, KeyError, TypeError, ValueError):
                continue  # an unreadable record is neither a target nor history
            real = real_answer(record)
            if real is not None and record.call.channel in DOMAINS:
                if max_calls is not None and len(out) == max_calls:
                    return out
                schema = _output_schema(store, record)
                out.append(Target(record, history, len(history), real, times=times, schema=schema))
            if record.status in ("complete", "pending", "skipped"):
                history.append(Turn(record.call, record.served, perturbed=record.perturbation is not None))
                times.append(record.ts)
    return out


async def held_out_sessions(store: RecordStore, held_out: HeldOut, *, max_sessions: int | None) -> list[str]:
    if held_out.sessions is not None:
        return sorted(held_out.sessions)[:max_sessions]
    found: list[str] = []
    async for session in _unique(store.session_ids()):
        if held_out.withheld(session):
            found.append(session)
            if max_sessions is not None and len(found) == max_sessions:
                break
    return sorted(found)


async def _unique(ids: AsyncIterator[str]) -> AsyncIterator[str]:
    seen: set[str] = set()
    async for item in ids:
        if item not in seen:
            seen.add(item)
            yield item


async def add_floors(store: RecordStore, found: Sequence[Target], keys: Any) -> None:
    """Each target's real-vs-real floor: its real answer against another session's real
    answer to the same call (at the same point of its session when there is one)."""
    for target in found:
        call = target.record.call
        rows = await store.examples(
            call.channel,
            call.server,
            call.tool,
            exclude_session=call.session_id,
            call_key=keys.keys(call).replay,
            limit=_FLOOR_CANDIDATES,
        )
        same = [
            row
            for row in rows
            if row.get("call_key") == target.record.call_key
            and not row.get("perturbation")
            and row.get("provenance", "real") == "real"
        ]
        # The same point of a session first.
        same.sort(key=lambda row: row.get("occurrence") != target.record.occurrence)
        if same:
            other = Observation.from_json(same[0]["observation"])
            target.floor = compare(target.real, other, channel=call.channel).score


async def run_candidate(
    config: Config,
    store: RecordStore,
    candidate: Candidate,
    found: Sequence[Target],
    keys: ReplayBackend,
    *,
    temperature: float | None,
    on_prompt: Callable[[Candidate, Record, list[dict[str, Any]]], None] = lambda candidate, record, messages: None,
    judge: JudgeModel | None = None,
    judge_deadline_s: float = 120.0,
    world_state: bool = False,
) -> list[CallResult]:
    """`candidate`'s answer to each target, scored. `world_state`: answered end to end, as
    the sim route answers with the config's world-state layer (router/reports/compare_state.py);
    else by the world model alone."""
    cfg = candidate_config(config, candidate, temperature=temperature)
    model_runner = MeteredModelRunner(build_model_runner(cfg))
    lookup = keyed_lookup(store, keys)
    lookup.loop = asyncio.get_running_loop()
    simulator = build_world_model_simulator(cfg, store, model_runner, lookup)
    states = None
    if world_state:
        simulator = with_world_state(cfg, store, simulator, keys)
        states = HistoryStates()
    results = []
    try:
        for target in found:
            call = target.record.call
            model_runner.reset()
            await lookup.prefetch(call)
            session = Session(id=call.session_id, history=target.history, steps=target.record.step)
            if states is not None:
                session.slices[WorldState] = states.before(call.session_id, target.turns, target.times, target.seen)
            simulated = await simulator.simulate(call, session, deadline_s=cfg.world_model.deadline_s)
            for messages in model_runner.prompts:
                on_prompt(candidate, target.record, messages)
            result = _result(candidate, target, simulated, model_runner.completions)
            if judge is not None and result.well_formed:  # a failed simulation has no answer to score
                result = replace(result, judge_score=await _judge_score(judge, target, simulated, judge_deadline_s))
            results.append(result)
    finally:
        await model_runner.inner.aclose()
    return results


async def _judge_score(judge: JudgeModel, target: Target, simulated: Observation, deadline_s: float) -> float | None:
    """The judge's 0–100 score of `simulated` against the real answer (`simroute judge`'s
    prompt and retry); None when its verdict stayed unreadable or its call failed."""
    done = await judge_pair(judge, Pair("simulated", target.record, target.real, simulated), deadline_s=deadline_s)
    return done.verdict.score_100 if done.verdict is not None else None


def _result(candidate: Candidate, target: Target, simulated: Observation, completions: list[Completion]) -> CallResult:
    call = target.record.call
    failed = simulated.is_error and simulated.text.startswith(_MODEL_FAILED)
    json_body = call.channel == "http" and _is_json((target.real.structured or {}).get("body"))
    problem = (
        simulated.text[:200] if failed else check(call.channel, simulated, schema=target.schema, json_body=json_body)
    )
    return CallResult(
        candidate=candidate.name,
        domain=DOMAINS[call.channel],
        channel=call.channel,
        server=call.server,
        tool=call.tool,
        session=call.session_id,
        step=target.record.step,
        divergence=compare(target.real, simulated, channel=call.channel).score,
        well_formed=problem is None,
        latency_s=simulated.latency_s,
        prompt_tokens=sum(c.prompt_tokens for c in completions),
        completion_tokens=sum(c.completion_tokens for c in completions),
        floor=target.floor,
        problem=problem,
        simulated=simulated.text[:80],
        answered_by=simulated.source.sub if simulated.source is not None else None,
    )


def _output_schema(store: RecordStore, record: Record) -> dict[str, Any] | None:
    if record.call.channel != "mcp":
        return None
    for definition in store.tool_snapshot(record.call.server) or []:
        if definition.get("name") == record.call.tool:
            return definition.get("outputSchema")
    return None


def _is_json(body: Any) -> bool:
    try:
        json.loads(body or "")
    except (TypeError, ValueError):
        return False
    return True
