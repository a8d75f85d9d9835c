"""Builds the simulated side from the config: a world-model engine, and the
simulator that turns a call and its session into a prompt and back into an
observation (tools and demonstrations come from the record store)."""

from __future__ import annotations

import os
from pathlib import Path
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
    """One simulator for every channel; each channel's domain builds its prompts."""
    from backends.world_model.simulator import WorldModelSimulator

    return WorldModelSimulator(
        engine,
        domains={
            "mcp": _mcp_domain(config, store),
            "shell": _terminal_domain(config, store),
            "browser": _web_domain(config, store),
            "http": _http_domain(config, store),
        },
        max_tokens=config.world_model.max_tokens,
        context_tokens=config.world_model.context_tokens,
        constrained_output=config.world_model.engine == "llama",
    )


def _recorded_real(store: SQLiteStore, call: Call) -> list:
    """Real records of the same tool from other sessions: every domain's demonstrations."""
    return store.real_records_of_tool(call.channel, call.server, call.tool, exclude_session=call.session_id)


def _mcp_domain(config: Config, store: SQLiteStore) -> Any:
    from backends.world_model.mcp_domain import McpDomain
    from backends.world_model.mcp_prompt import select_demonstrations

    wm = config.world_model

    def tools_for(server: str) -> list[dict]:
        return store.load_tool_snapshot(server) or []

    def output_schema_for(server: str, tool: str) -> dict | None:
        for definition in tools_for(server):
            if definition.get("name") == tool:
                return definition.get("outputSchema")
        return None

    def demonstrations_for(call: Call) -> list[tuple[dict, str]]:
        rows = _recorded_real(store, call)
        return select_demonstrations(rows, call.tool, call.arguments, wm.demonstrations)

    return McpDomain(
        tools_for=tools_for,
        demonstrations_for=demonstrations_for,
        output_schema_for=output_schema_for,
        initial_state=wm.initial_state,
        simulation_instruction=wm.simulation_instruction,
    )


def _terminal_domain(config: Config, store: SQLiteStore) -> Any:
    from backends.world_model.terminal_domain import TerminalDomain, select_shell_demonstrations

    wm, shell = config.world_model, config.shell

    def demonstrations_for(call: Call) -> list:
        rows = _recorded_real(store, call)
        return select_shell_demonstrations(rows, str(call.arguments.get("command", "")), wm.demonstrations)

    return TerminalDomain(
        hostname=shell.hostname,
        describe_workspace=lambda: describe_folder(config.shell_workspace),
        demonstrations_for=demonstrations_for,
        initial_state=wm.initial_state.get("shell"),
        simulation_instruction=wm.simulation_instruction.get("shell"),
        screen_lines=shell.screen_lines,
        screen_chars=shell.screen_chars,
    )


def _web_domain(config: Config, store: SQLiteStore) -> Any:
    from backends.world_model.web_domain import WebDomain, select_web_demonstrations

    wm, browser = config.world_model, config.browser

    def demonstrations_for(call: Call, current: Any) -> list:
        rows = _recorded_real(store, call)
        return select_web_demonstrations(rows, call, current, wm.demonstrations)

    return WebDomain(
        demonstrations_for=demonstrations_for,
        initial_state=wm.initial_state.get("browser"),
        simulation_instruction=wm.simulation_instruction.get("browser"),
        snapshot_max_chars=browser.snapshot_max_chars,
        allowed_domains=browser.allowed_domains,
    )


def _http_domain(config: Config, store: SQLiteStore) -> Any:
    from backends.world_model.http_domain import HttpDomain, select_http_demonstrations

    wm = config.world_model

    def demonstrations_for(call: Call) -> list:
        rows = _recorded_real(store, call)
        return select_http_demonstrations(rows, call, wm.demonstrations)

    # initial_state / simulation_instruction are keyed by host[:port], like the calls' server.
    return HttpDomain(
        demonstrations_for=demonstrations_for,
        initial_state=wm.initial_state,
        simulation_instruction=wm.simulation_instruction,
    )


def describe_folder(folder: Path | None, *, limit: int = 60) -> str:
    """A listing of the session's initial workspace for the simulated terminal:
    relative paths with sizes, the first `limit` entries."""
    if folder is None or not folder.is_dir():
        return ""
    entries = []
    for path in sorted(folder.rglob("*")):
        if len(entries) == limit:
            entries.append("…")
            break
        relative = path.relative_to(folder).as_posix()
        entries.append(f"{relative}/" if path.is_dir() else f"{relative} ({path.stat().st_size} bytes)")
    return "\n".join(entries)
