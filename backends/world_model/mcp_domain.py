"""The MCP domain: a server's tools as the action space, tool results as observations.

Shapes an answer can take, held by grammar and checked:
- a tool with an output schema: JSON matching it (structured content);
- a text tool: bounded text that does not start like prompt scaffolding; JSON
  when every recorded answer of the tool is JSON;
- either way, the error form `Error: <message>`: an error result (`isError`).
  Recorded error results are shown to the model in that form, so it predicts
  one where the real server gave one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from backends.world_model.checks import check_mcp
from backends.world_model.domain import Constraint, CountTokens
from backends.world_model.echoed_inputs import (
    answer_object,
    contradicted_argument,
    echoed_fields,
    pin_echoes,
    wrong_entity,
)
from backends.world_model.grammars import STOP_SEQUENCES, infer_json_schema, mcp_grammar, ordered_like
from backends.world_model.grounding import Grounding, Row, ground, observation_text, session_rows
from backends.world_model.mcp_prompt import Example, build_mcp_messages
from backends.world_model.parse import InvalidPrediction, parse_json_prediction
from calls import Call, Observation, Provenance, Session

ERROR_PREFIX = "Error: "
EXAMPLE_BUDGET = 1 / 3  # of the prompt budget, at most, for recorded examples


def shown(text: str, is_error: bool) -> str:
    """An observation as the model sees it: an error result in the error form."""
    return ERROR_PREFIX + text if is_error else text


def _starts_json(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, (dict, list))


class McpDomain:
    def __init__(
        self,
        *,
        tools_for: Callable[[str], list[dict[str, Any]]],
        records_for: Callable[[Call], Sequence[Row]] = lambda call: (),
        output_schema_for: Callable[[str, str], dict[str, Any] | None],
        call_key_of: Callable[[Call], str] | None = None,
        demonstrations: int = 2,
        initial_state: Mapping[str, str] | None = None,
        simulation_instruction: Mapping[str, str] | None = None,
        tool_list: str = "json",  # or "signatures" (see mcp_prompt.build_system)
    ) -> None:
        self.tools_for = tools_for
        self.records_for = records_for
        self.output_schema_for = output_schema_for
        self.call_key_of = call_key_of
        self.demonstrations = demonstrations
        self.initial_state = dict(initial_state or {})
        self.simulation_instruction = dict(simulation_instruction or {})
        self.tool_list = tool_list

    def refusal(self, call: Call, session: Session) -> str | None:
        return None  # the front door already checked the arguments against the tool's schema

    def ground(
        self, call: Call, session: Session, *, count_tokens: CountTokens, budget_tokens: int = 1200
    ) -> Grounding:
        return ground(
            self.records_for(call),
            call,
            call_key=self.call_key_of(call) if self.call_key_of else None,
            own=session_rows(call, session),
            k=self.demonstrations,
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
        )

    def messages(
        self,
        call: Call,
        session: Session,
        *,
        budget_tokens: int,
        count_tokens: CountTokens,
        grounding: Grounding | None = None,
    ) -> list[dict[str, str]]:
        history = [
            (
                {"name": turn.call.tool, "arguments": turn.call.arguments},
                shown(turn.observation.text, turn.observation.is_error),
            )
            for turn in session.history
            if turn.of_environment(call.channel, call.server)
        ]
        if grounding is None:
            grounding = self.ground(
                call, session, count_tokens=count_tokens, budget_tokens=int(budget_tokens * EXAMPLE_BUDGET)
            )
        return build_mcp_messages(
            server=call.server,
            tools=self.tools_for(call.server),
            history=history,
            action={"name": call.tool, "arguments": call.arguments},
            demonstrations=[example_of(row, call.tool) for row in grounding.rows],
            initial_state="\n\n".join(
                filter(None, (self.initial_state.get(call.server), session.world_document_for(call.channel)))
            )
            or None,
            simulation_instruction=self.simulation_instruction.get(call.server),
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
            tool_list=self.tool_list,
        )

    def output_schema(self, call: Call) -> dict[str, Any] | None:
        return self.output_schema_for(call.server, call.tool)

    def constraint(self, call: Call, session: Session, grounding: Grounding, *, max_tokens: int) -> Constraint:
        schema = self.output_schema(call)
        successes = [row for row in grounding.answers if not (row.get("observation") or {}).get("is_error")]
        answers = [text for text in (observation_text(row) for row in successes) if text]
        if schema is not None:  # fields in the order the real server writes them
            schema = ordered_like(schema, [structured_of(row) for row in successes])
        json_text = schema is None and bool(answers) and all(_starts_json(text) for text in answers)
        # Fields the tool's answers (recorded, or this session's own) fill with an argument's
        # value: the grammar writes this call's value there, and the check holds any answer
        # to naming it; without such answers a field named like an argument must agree.
        recorded_objects = [answer_object(Observation.from_json(row["observation"])) for row in successes]
        seen = [
            (row, answer_object(Observation.from_json(row["observation"])))
            for row in session_rows(call, session)
            if row["tool"] == call.tool
        ]
        echoes = echoed_fields(
            ((row.get("arguments") or {}), obj) for row, obj in [*zip(successes, recorded_objects, strict=True), *seen]
        )
        # The grammar writes the echoed fields' values; the check holds answers to the
        # tool's own schema and, where a field echoes an input, to naming it (wrong_entity).
        pinned = pin_echoes(schema, echoes, call.arguments)
        text_schema = None
        if json_text and echoes:
            text_schema = pin_echoes(
                infer_json_schema([obj for obj in recorded_objects if obj is not None]), echoes, call.arguments
            )
        grammar = mcp_grammar(
            schema=pinned,
            text_schema=text_schema,
            max_tokens=max_tokens,
            json_text=json_text,
            # A tool definition echoed back starts with `{`: text tools answer text
            # unless their recorded answers show JSON.
            forbid_json=schema is None and not any(text.lstrip().startswith(("{", "[")) for text in answers),
            allow_fence=any(text.lstrip().startswith("```") for text in answers),
            outcome_error=grounding.outcome_error,
            error_word=not answers or any(text.startswith("Error") for text in answers),
        )
        stop = list(STOP_SEQUENCES)
        if schema is None and not json_text and answers and not any("\n\n" in text for text in answers):
            stop.append("\n\n")  # no recorded answer has a blank line: one ends the answer (not commentary after it)

        def check(observation: Observation) -> str | None:
            answer = answer_object(observation)
            return (
                check_mcp(observation, schema=schema, recorded=answers)
                or wrong_entity(echoes, call.arguments, answer)
                or contradicted_argument(call.arguments, answer)
            )

        return Constraint(
            max_tokens=max_tokens,
            grammar=grammar,
            json_schema=pinned,
            stop=stop,
            temperature=0.0 if grounding.unanimous else None,
            check=check,
        )

    def observation(self, call: Call, prediction: str) -> Observation:
        if prediction.startswith(ERROR_PREFIX):
            message = prediction[len(ERROR_PREFIX) :].strip()
            if not message:
                raise InvalidPrediction("an error result with no message")
            return Observation([{"type": "text", "text": message}], Provenance.SIM, is_error=True)
        schema = self.output_schema(call)
        if schema is None:
            return Observation([{"type": "text", "text": prediction}], Provenance.SIM)
        value = parse_json_prediction(prediction, schema)
        # MCP servers send structured results as a JSON text block too.
        block = {"type": "text", "text": json.dumps(value, indent=2, ensure_ascii=False)}
        return Observation([block], Provenance.SIM, structured=value)


def structured_of(row: Row) -> Any:
    """A recorded answer's structured content (else its text read as JSON)."""
    observation = row.get("observation") or {}
    if observation.get("structured") is not None:
        return observation["structured"]
    try:
        return json.loads(observation_text(row))
    except ValueError:
        return None


def example_of(row: Row, tool: str) -> Example:
    observation = row.get("observation") or {}
    return {"name": tool, "arguments": row.get("arguments") or {}}, shown(
        observation_text(row), bool(observation.get("is_error"))
    )
