"""A session's records, in step order, to training examples.

The prompt of an example is the one the live simulator would have built for the
call at that point of the session: the same history (what the agent was served,
as stored: redacted), the same domain code (a `PromptBuilder` handed in, made
from backends/world_model's domains by router/), and the same demonstrations
(recorded answers of the same tool from other sessions), taken from the train
side only, so that no test answer enters a prompt.

Provenance-aware: the target is always a real observation, the served one or the
real side of a shadowed call. A simulated or replayed observation is only ever
context: an earlier turn the agent saw, marked with its provenance, or the
rejected side of a preference pair.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from calls import HISTORY_IN_MEMORY, Call, Observation, Provenance, Turn
from records.export.options import ExportFilter
from records.record import Record

log = logging.getLogger("simroute.export")

# Records whose call never completed: the agent saw no observation (not history, never a target).
_UNSEEN = frozenset({"started", "interrupted"})
MARKER = "**Environment Observation:**\n"
# The tags a model without a prefill writes its observation in (world-model-protocol, Output).
OPEN_TAG, CLOSE_TAG = "<predicted_observation>", "</predicted_observation>"


@dataclass(frozen=True, slots=True)
class Generation:
    """Where the serving model runner's generation starts, so that a target is what the model
    writes there: after `prefill` (the llama.cpp runner pre-writes the observation marker,
    and the model writes the observation itself), or, with no prefill, at the turn's
    start (the model writes the observation inside the tags the prompt asks for)."""

    prefill: str = ""

    def target(self, rendered: str) -> str:
        """A history turn's text (`MARKER` + the observation) as the model generates it."""
        native = rendered.removeprefix(MARKER)
        if self.prefill:
            return rendered.removeprefix(self.prefill) if rendered.startswith(self.prefill) else native
        return f"{OPEN_TAG}\n{native}\n{CLOSE_TAG}"


class PromptBuilder(Protocol):
    async def ready(self, call: Call) -> None:
        """Fetches from the store what the prompt of `call` needs (its demonstrations),
        before `prompt` is asked for it (prompts are built synchronously)."""

    def domain(self, channel: str) -> str | None:
        """The world-model domain of a channel (MCP, Terminal, Web…); None: none simulates it."""

    def prompt(self, call: Call, history: Sequence[Turn]) -> list[dict[str, Any]]:
        """The chat messages the live simulator builds for `call` after `history`, each
        assistant turn carrying the `provenance` of the observation it shows."""

    def rendered(self, call: Call, history: Sequence[Turn], observation: Observation) -> str:
        """`observation`, answering `call` after `history`, as the live prompt shows it in
        an assistant turn (the next prompt's history)."""

    @property
    def generation(self) -> Generation:
        """Where the serving model runner's generation starts (the targets follow it)."""


@dataclass(slots=True)
class Example:
    record: Record
    domain: str
    prompt: list[dict[str, Any]]  # system, context turns (assistant turns marked), the final action
    target: str  # the real observation, as an assistant turn of the history shows it
    rejected: str | None = None  # the simulated one, when the two diverged beyond noise
    generation: Generation = Generation()  # what a trained model writes of a turn

    @property
    def answer(self) -> str:
        """The target in the environment's native format (without the turn's marker)."""
        return self.target.removeprefix(MARKER)


@dataclass(slots=True)
class Skips:
    """Why records did not become examples, counted for the dataset card."""

    filtered: int = 0
    unseen: int = 0  # started or interrupted: no observation
    no_real_observation: int = 0  # served by sim, replay or simroute itself, and no real side
    truncated: int = 0  # a body cut at the record limit: not the real answer
    no_domain: int = 0
    unreadable: int = 0
    unbuildable: int = 0  # the domain could not build its prompt

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def real_side(record: Record) -> Observation | None:
    if record.perturbation is not None:
        # What the agent saw was shaped by a perturbation: never a target. The route's
        # own answer, kept beside it, is one when it came from the real side.
        unperturbed = record.unperturbed
        return unperturbed if unperturbed is not None and unperturbed.provenance is Provenance.REAL else None
    if record.served.provenance is Provenance.REAL:
        return record.served
    if record.shadow is not None and record.shadow.provenance is Provenance.REAL:
        return record.shadow
    return None


def simulated_side(record: Record) -> Observation | None:
    """The world model's prediction for the call, when it made one (not a failure of simroute's)."""
    for observation in (record.served, record.shadow):
        if observation is not None and observation.provenance is Provenance.SIM:
            if observation.is_error and observation.text.startswith("simroute:"):
                return None  # the model failed (timeout, malformed twice): no prediction to reject
            return observation
    return None


def diverged(record: Record, threshold: float | None) -> bool:
    """Whether a shadow pair's sides differ beyond noise: the stored divergence is
    computed with the noisy paths masked (shadow/compare/divergence.py), and the
    evidence names what still differs."""
    if record.divergence is None or record.divergence <= (threshold or 0.0):
        return False
    evidence = record.divergence_evidence
    return not isinstance(evidence, dict) or "divergent" not in evidence or bool(evidence["divergent"])


class SessionExamples:
    """Feeds on one session's records in step order; gives the examples of each."""

    def __init__(self, builder: PromptBuilder, where: ExportFilter, skips: Skips, *, pairs: bool) -> None:
        self.builder = builder
        self.where = where
        self.skips = skips
        self.pairs = pairs
        self.history: deque[Turn] = deque(maxlen=HISTORY_IN_MEMORY)

    def feed(self, record: Record) -> Example | None:
        if record.status in _UNSEEN:
            self.skips.unseen += 1
            return None
        history = list(self.history)
        # The agent saw it, whatever its provenance or perturbation.
        self.history.append(Turn(record.call, record.served, perturbed=record.perturbation is not None))
        if not self.where.selects(record):
            self.skips.filtered += 1
            return None
        real = real_side(record)
        if real is None:
            self.skips.no_real_observation += 1
            return None
        if real.truncated:
            self.skips.truncated += 1
            return None
        domain = self.builder.domain(record.call.channel)
        if domain is None:
            self.skips.no_domain += 1
            return None
        simulated = simulated_side(record) if self.pairs and diverged(record, self.where.min_divergence) else None
        try:
            return Example(
                record=record,
                domain=domain,
                prompt=self.builder.prompt(record.call, history),
                target=self.builder.rendered(record.call, history, real),
                rejected=self.builder.rendered(record.call, history, simulated) if simulated is not None else None,
                generation=self.builder.generation,
            )
        except (KeyError, TypeError, ValueError) as exc:
            # A record the domain cannot put to the model (arguments or an observation of
            # an unexpected shape): one example lost, counted and logged, not the export.
            log.warning(
                "record %s (%s.%s) gives no prompt: %s: %s",
                record.id,
                record.call.server,
                record.call.tool,
                type(exc).__name__,
                exc,
            )
            self.skips.unbuildable += 1
            return None
