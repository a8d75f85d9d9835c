"""The simulated side of any call: session history in, predicted observation out.

One simulator serves every channel; the call's channel picks the domain (MCP,
Terminal, Web, HTTP) that builds the prompt, constrains the answer's shape and
reads it back.

Well-formed by construction: the domain's grammar shapes the generation (the
in-process model runner applies it; endpoint model runners get it where the server accepts
one), its checker judges the observation, then the gates every answer passes
(gates/: not degenerate, naming the entities the call named, field values of the
kind the tool's real answers hold; the session's world state holds answers to it
through a steer's check, backends/world_state/simulation.py). A refused answer is
asked for once more with the problem stated (another seed, the configured
temperature), then the answer the tool's real recordings determine, if they do
(gates/template.py), else a clear error: degenerate output is never passed on.

Never raises for a model failure: a timeout, an overflow, an empty or invalid
answer, a missing model or a down server each become an error observation
tagged `sim` that names the cause. Only an answer the model wrote carries a
source (`sub: model`, and the model that wrote it): an error simroute made in its
place carries none.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from backends.world_model.domain import Domain
from backends.world_model.facts import StatedFacts, render_facts
from backends.world_model.gates import SHAPED, real_examples, repeatable, screen_answer, templated_answer
from backends.world_model.grounding import Grounding, Row, generation_budget
from backends.world_model.model_runner import Completion, ModelRunner, ModelUnavailable, WorldModelError
from backends.world_model.parse import EmptyPrediction, InvalidPrediction, parse_prediction
from backends.world_model.prompt import agreeing_with
from backends.world_model.steering import restated
from calls import Call, Observation, Provenance, Session, Source, Steer, WorldDocuments

log = logging.getLogger("simroute.sim")

FACTS_SHARE = 4  # the facts block takes at most 1/FACTS_SHARE of the prompt budget


class WorldModelSimulator:
    def __init__(
        self,
        model_runner: ModelRunner,
        *,
        domains: Mapping[str, Domain],
        max_tokens: int | Mapping[str, int] = 256,
        context_tokens: int = 4096,
        constrained_output: bool = True,
        size_budgets: bool = True,
        world_document: str | None = None,
        prefill: str = "",
    ) -> None:
        self.model_runner = model_runner
        # What the model runner pre-writes at the start of the answer (the llama model runner's
        # observation marker): the closing instruction asks for what follows it.
        self.prefill = prefill
        self.domains = dict(domains)
        # Per channel where observations differ in size (a page snapshot is longer than a tool result).
        self._max_tokens = max_tokens
        self.context_tokens = context_tokens
        # In-process model runners enforce the shape by grammar; endpoint models are
        # validated by the same checker and asked once more either way.
        self.constrained_output = constrained_output
        # A tool's budget follows the sizes of its real answers (off for thinking
        # models, whose budget is mostly thinking).
        self.size_budgets = size_budgets
        # The configured world document (rendered), told to every session whose own
        # world (an episode's, merged with it at reset) does not replace it.
        self.world_document = world_document or None
        # Told of every completion (the call's channel names the domain): /metrics counts
        # the world model's tokens and generation time with them.
        self.observers: list[Callable[[str, Completion], None]] = []

    def max_tokens_for(self, channel: str) -> int:
        if isinstance(self._max_tokens, Mapping):
            return self._max_tokens.get(channel) or self._max_tokens.get("default", 256)
        return self._max_tokens

    def messages_for(self, call: Call, session: Session, *, grounding: Grounding | None = None) -> list[dict[str, Any]]:
        """The prompt for `call` in `session`; grounded in `grounding` when given (else
        in the recorded examples the domain looks up)."""
        if grounding is None:
            return self.grounded_messages(call, session)[1]
        return self._messages(self.domains[call.channel], call, session, grounding)

    def grounded_messages(self, call: Call, session: Session) -> tuple[Grounding, list[dict[str, Any]]]:
        """The prompt for `call` in `session`, and the grounding whose rows it shows as demonstrations."""
        return self._grounded_messages(self.domains[call.channel], call, session)

    async def read_ahead(self, call: Call, *, deadline_s: float = 120.0) -> int:
        """Have the model runner read, ahead of any agent's call, the system prompt that
        `call` would start a session with (an MCP server's tool list, the task)."""
        messages = await asyncio.to_thread(self.messages_for, call, Session(id="\0read-ahead"))
        return await self.model_runner.read_ahead(messages, deadline_s=deadline_s)

    def _grounded_messages(self, domain: Domain, call: Call, session: Session) -> tuple[Any, list[dict[str, Any]]]:
        """The grounding (recorded examples, answer sizes) and the prompt. Blocking:
        the example lookup waits for the store, so this runs in a worker thread."""
        grounding = domain.ground(call, session, count_tokens=self.model_runner.count_tokens)
        return grounding, self._messages(domain, call, session, grounding)

    def _messages(self, domain: Domain, call: Call, session: Session, grounding: Any) -> list[dict[str, Any]]:
        budget = self.context_tokens - self.max_tokens_for(call.channel)
        count_tokens = self.model_runner.count_tokens
        session = self.in_world(session)
        stated = session.find(StatedFacts)
        facts = stated.facts if stated is not None else {}
        if not facts:
            return self._agreeing(
                domain.messages(call, session, budget_tokens=budget, count_tokens=count_tokens, grounding=grounding)
            )
        # The facts the session's answers stated, in the last message (the system message
        # and history stay a cached prefix), within a quarter of the budget; those the
        # history the domain fitted still shows are left out.
        whole = render_facts(facts)
        reserve = min(budget // FACTS_SHARE, count_tokens(whole) + 8)
        messages = domain.messages(
            call, session, budget_tokens=budget - reserve, count_tokens=count_tokens, grounding=grounding
        )
        chars = len(whole) * max(0, reserve - 8) // max(1, count_tokens(whole))
        block = render_facts(facts, shown="\n".join(m["content"] for m in messages), budget_chars=chars)
        if block:
            messages[-1] = {**messages[-1], "content": block + "\n\n" + messages[-1]["content"]}
        return self._agreeing(messages)

    def _agreeing(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.prefill and messages:
            messages[-1] = {**messages[-1], "content": agreeing_with(self.prefill, messages[-1]["content"])}
        return messages

    def in_world(self, session: Session) -> Session:
        """The session as its prompts see it: with the configured world unless its own
        (an episode's world document, `WorldDocuments.by_channel["*"]`) stands in for it."""
        own = session.find(WorldDocuments)
        if self.world_document is None or (own is not None and "*" in own.by_channel):
            return session
        world = WorldDocuments({"*": self.world_document, **(own.by_channel if own is not None else {})})
        return dataclasses.replace(session, slices={**session.slices, WorldDocuments: world})

    async def simulate(
        self, call: Call, session: Session, *, deadline_s: float, background: bool = False, steer: Steer | None = None
    ) -> Observation:
        """`steer`: a meaning-level perturbation's instruction, added to this call's last
        message only (the history's prefix stays the same for the model runner's cache), and
        its check, held like the domain's."""
        started = time.monotonic()
        domain = self.domains.get(call.channel)
        if domain is None:
            return Observation.error(
                f"simroute: no world-model domain simulates the {call.channel!r} channel", Provenance.SIM
            )
        refusal = domain.refusal(call, session)
        if refusal is not None:
            return Observation.error(refusal, Provenance.SIM, time.monotonic() - started)
        try:
            await self.model_runner.start()
            started = time.monotonic()  # loading the model is not charged to the call's deadline
            # Grounding reads recorded examples from the store and tokenises: off the event loop.
            grounding, messages = await asyncio.to_thread(self._grounded_messages, domain, call, session)
            last = messages[-1]
            if steer is not None:
                messages[-1] = {**last, "content": steer.instruction + "\n\n" + last["content"]}
            # What the gates judge by: the tool's real answers, and what an answer may repeat.
            examples, context = real_examples(call, session, grounding.answers), repeatable(call, session)
            ceiling = self.max_tokens_for(call.channel)
            # A steered answer is not held to the recorded answers' size: a listing asked for whole
            # is longer than the one recorded, and the model spaces JSON more than servers do.
            sized = self.size_budgets and steer is None
            max_tokens = generation_budget(grounding.answer_tokens, ceiling) if sized else ceiling
            constraint = domain.constraint(call, session, grounding, max_tokens=max_tokens)
            problem = ""
            for attempt in range(2):
                if attempt:  # the retry is told what was wrong with the refused answer
                    retry = {**last, "content": restated(problem, steer).instruction + "\n\n" + last["content"]}
                    messages = [*messages[:-1], retry]  # a new list: the first prompt stays as it was sent
                remaining = deadline_s - (time.monotonic() - started)
                completion = await self.model_runner.complete(
                    messages,
                    session_id=session.id,
                    deadline_s=remaining,
                    max_tokens=constraint.max_tokens,
                    json_schema=constraint.json_schema,
                    grammar=constraint.grammar,
                    stop=constraint.stop,
                    temperature=constraint.temperature if attempt == 0 else None,
                    seed_offset=attempt + (session.seeded(session.steps) or 0),  # an episode's seed fixes its samples
                    background=background,
                )
                for observe in self.observers:
                    observe(call.channel, completion)
                try:
                    observation = domain.observation(call, parse_prediction(completion.text))
                    problem = self._problem(call, session, observation, constraint.check, steer, examples, context)
                except (InvalidPrediction, EmptyPrediction) as exc:
                    problem = str(exc)
                if not problem:
                    observation.provenance = Provenance.SIM
                    observation.source = Source(sub="model", model=completion.model or None)
                    observation.latency_s = time.monotonic() - started
                    return observation
                log.info("refused prediction for %s %s.%s (%s)", call.channel, call.server, call.tool, problem)
            if call.channel in SHAPED and (recorded := templated_answer(call, examples)) is not None:
                recorded.latency_s = time.monotonic() - started
                return recorded
            raise InvalidPrediction(f"the world model's answer is malformed, twice: {problem}")
        except WorldModelError as exc:
            if background and isinstance(exc, ModelUnavailable):
                raise  # a SimulatorUnavailable: shadow work waits for the model (see calls.Simulator)
            return Observation.error(f"simroute: world model failed: {exc}", Provenance.SIM, time.monotonic() - started)

    def _problem(
        self,
        call: Call,
        session: Session,
        observation: Observation,
        check: Callable[[Observation], str | None],
        steer: Steer | None,
        examples: Sequence[Row],
        context: str,
    ) -> str:
        """Why `observation` is refused ("" when it passes): the domain's checker, the
        steer's (the world state's, when it steers), then the stateless gates."""
        return (
            check(observation)
            or (steer.check(observation) if steer is not None else None)
            or screen_answer(call, observation, examples, context=context)
            or ""
        )
