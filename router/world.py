"""Builds the simulated side from the config: a world-model engine, and the
simulator that turns a call and its session into a prompt and back into an
observation (tools and demonstrations come from the record store)."""

from __future__ import annotations

import os
from typing import Any

from router.config import Config
from router.types import Call
from shadow.sqlite_store import SQLiteStore


def build_engine(config: Config) -> Any:
    wm = config.world_model
    if wm.engine == "openai":
        from backends.world_model.openai_engine import OpenAICompatibleEngine

        api_key = os.environ.get(wm.api_key_env) if wm.api_key_env else None
        return OpenAICompatibleEngine(
            wm.url, model=wm.model, api_key=api_key, temperature=wm.temperature, top_p=wm.top_p, seed=wm.seed
        )
    from backends.world_model.llama_engine import LlamaCppEngine

    return LlamaCppEngine(
        str(config.model_path),
        n_ctx=wm.context_tokens,
        n_threads=wm.threads,
        seed=wm.seed,
        temperature=wm.temperature,
        top_p=wm.top_p,
        top_k=wm.top_k,
        cached_sessions=wm.cached_sessions,
        prefill="**Environment Observation:**\n" if wm.prefill_observation else "",
    )


def build_simulator(config: Config, store: SQLiteStore, engine: Any) -> Any:
    from backends.world_model.mcp_prompt import select_demonstrations
    from backends.world_model.simulator import WorldModelSimulator

    wm = config.world_model

    def tools_for(server: str) -> list[dict]:
        return store.load_tool_snapshot(server) or []

    def output_schema_for(server: str, tool: str) -> dict | None:
        for definition in tools_for(server):
            if definition.get("name") == tool:
                return definition.get("outputSchema")
        return None

    def demonstrations_for(call: Call) -> list[tuple[dict, str]]:
        rows = store.real_records_of_tool(call.channel, call.server, call.tool, exclude_session=call.session_id)
        return select_demonstrations(rows, call.tool, call.arguments, wm.demonstrations)

    return WorldModelSimulator(
        engine,
        tools_for=tools_for,
        demonstrations_for=demonstrations_for,
        output_schema_for=output_schema_for,
        max_tokens=wm.max_tokens,
        context_tokens=wm.context_tokens,
        initial_state=wm.initial_state,
        simulation_instruction=wm.simulation_instruction,
        constrained_output=wm.engine == "llama",
    )
