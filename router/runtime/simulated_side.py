"""Builds the simulated side from the config: a model runner, and the
simulator that turns a call and its session into a prompt and back into an
observation (tools and demonstrations come from the record store)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from backends.replay import ReplayBackend
from backends.world_model.model_runner import Completion
from calls import HISTORY_IN_MEMORY, Call, Observation, Session, Simulator, Steer, Turn
from records.store.protocol import RecordStore
from router.config import Config
from router.runtime.example_lookup import ExampleLookup


class RuntimeSimulator(Simulator, Protocol):
    """The simulator a runtime builds (the model's, wrapped: the wrappers pass on what
    they do not handle) and what the runtime uses of it besides `simulate`."""

    observers: list[Callable[[str, Completion], None]]  # each completion, for the metrics

    async def read_ahead(self, call: Call, *, deadline_s: float = ...) -> int: ...


class HistoryReadBack:
    """A simulator whose sessions see their whole history (capped): turns dropped from
    memory are read back from the store, and a session shared by several replicas
    (`shared`) reads its history from the store, where every replica's turns are."""

    def __init__(
        self, inner: Any, store: RecordStore, *, shared: bool = False, examples: ExampleLookup | None = None
    ) -> None:
        self.inner = inner
        self.store = store
        self.shared = shared
        self.examples = examples

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def simulate(
        self, call: Call, session: Session, *, deadline_s: float, background: bool = False, steer: Steer | None = None
    ) -> Observation:
        if self.shared and not background:
            earlier = await self.store.session_records(
                session.id, before_step=session.steps - 1, limit=HISTORY_IN_MEMORY
            )
            session = self._with_history(
                session, [Turn(r.call, r.served, perturbed=r.perturbation is not None) for r in earlier]
            )
        elif session.forgotten > 0:
            older = await self.store.session_records(session.id, before_step=session.forgotten, limit=HISTORY_IN_MEMORY)
            session = self._with_history(
                session,
                [Turn(r.call, r.served, perturbed=r.perturbation is not None) for r in older] + list(session.history),
            )
        if self.examples is not None and call.channel in getattr(self.inner, "domains", {}):
            await self.examples.prefetch(call)
        return await self.inner.simulate(call, session, deadline_s=deadline_s, background=background, steer=steer)

    @staticmethod
    def _with_history(session: Session, history: list[Turn]) -> Session:
        # Everything else as the session has it: an episode's seed and world shape its prompts too.
        return dataclasses.replace(session, history=history, slices=dict(session.slices))


def build_model_runner(config: Config, *, adopted: tuple[Path, Path | None] | None = None) -> Any:
    """The configured model runner; `adopted`: the model file and adapter an adoption put
    in place of the config's (router/runtime/world_model_adoption.py)."""
    wm = config.world_model
    if wm.engine == "openai":
        from backends.world_model.openai_runner import OpenAICompatibleRunner

        api_key = os.environ.get(wm.api_key_env) if wm.api_key_env else None
        assert wm.url is not None  # the config's validator: engine 'openai' needs url
        return OpenAICompatibleRunner(
            wm.url, model=wm.model, api_key=api_key, temperature=wm.temperature, top_p=wm.top_p, seed=wm.seed
        )
    from backends.world_model.llama_runner import LlamaCppRunner

    model_file, lora_file = adopted or (config.model_path, wm.lora_file(config.base_dir))
    return LlamaCppRunner(
        str(model_file),
        n_ctx=wm.context_tokens,
        n_threads=wm.threads,
        seed=wm.seed,
        temperature=wm.temperature,
        top_p=wm.top_p,
        top_k=wm.top_k,
        cached_sessions=wm.cached_sessions,
        prefill=observation_prefill(config),
        chat_format=wm.chat_format,
        lora_path=lora_file,
    )


def build_simulator(
    config: Config,
    store: RecordStore,
    model_runner: Any,
    examples: ExampleLookup,
    *,
    replay: ReplayBackend | None = None,
    sessions_shared: bool = False,
) -> RuntimeSimulator:
    """One simulator for every channel, its sessions' whole history read back from the
    store; with the world state on (`world_state`), answering first from the session's
    state and, given the replay backend, from aligned recorded sessions
    (backends/world_state/simulation.py). `sessions_shared`: other replicas take turns in
    the same sessions (`SharedState.replicas_share_sessions`)."""
    simulator: RuntimeSimulator = HistoryReadBack(
        build_world_model_simulator(config, store, model_runner, examples),
        store,
        shared=sessions_shared,
        examples=examples,
    )
    if not config.world_state.enabled:
        return simulator
    return with_world_state(config, store, simulator, replay)


def with_world_state(config: Config, store: RecordStore, simulator: Any, replay: ReplayBackend | None) -> Any:
    """`simulator` behind the session's world state and, given the replay backend (its
    keys, and which recordings a session may see), aligned recorded sessions
    (backends/world_state/simulation.py). `compare-models --end-to-end` builds it too."""
    from backends.alignment import AlignedReplay
    from backends.world_state.http_state import RecordedApis
    from backends.world_state.simulation import StatefulSimulator

    return StatefulSimulator(
        simulator,
        aligned=AlignedReplay(store, replay) if replay is not None else None,
        recorded_apis=RecordedApis(replay) if replay is not None else None,
        on_for=config.world_state.on_for,
        screen_lines=config.shell.screen_lines,
        screen_chars=config.shell.screen_chars,
    )


def build_world_model_simulator(config: Config, store: RecordStore, model_runner: Any, examples: ExampleLookup) -> Any:
    """The world-model simulator: each channel's domain builds its prompts and ranks its
    recorded examples (backends/world_model/grounding.py) from the rows the store's
    capped example lookup returns. `simroute export` builds its prompts with it too."""
    from backends.world_model.simulator import WorldModelSimulator

    return WorldModelSimulator(
        model_runner,
        domains={
            "mcp": _mcp_domain(config, store, examples),
            "shell": _terminal_domain(config, examples),
            "browser": _web_domain(config, examples),
            "http": _http_domain(config, examples),
        },
        max_tokens=config.world_model.max_tokens,
        context_tokens=config.world_model.context_tokens,
        constrained_output=config.world_model.engine == "llama",
        # Thinking models on an endpoint spend most of their budget thinking.
        size_budgets=config.world_model.engine == "llama",
        world_document=config.world_model.world.render() if config.world_model.world is not None else None,
        prefill=observation_prefill(config),
    )


def observation_prefill(config: Config) -> str:
    """What the model runner pre-writes at the start of each answer: the llama model runner's
    observation marker (small models then write the observation at once), else nothing
    (an endpoint's model writes the tags the prompt asks for). The prompt's closing
    instruction and `simroute export`'s targets follow it."""
    from backends.world_model.prompt import OBSERVATION_PREFILL

    wm = config.world_model
    return OBSERVATION_PREFILL if wm.engine == "llama" and wm.prefill_observation else ""


def tools_of(config: Config, store: RecordStore, server: str) -> list[dict[str, Any]]:
    """A server's tool definitions: a virtual server's as declared, a real one's as last listed."""
    virtual = config.virtual_servers.get(server)
    return virtual.definitions() if virtual is not None else store.tool_snapshot(server) or []


def _mcp_domain(config: Config, store: RecordStore, examples: ExampleLookup) -> Any:
    from backends.world_model.mcp_domain import McpDomain

    wm = config.world_model
    virtual = config.virtual_servers

    def tools_for(server: str) -> list[dict]:
        return tools_of(config, store, server)

    def output_schema_for(server: str, tool: str) -> dict | None:
        for definition in tools_for(server):
            if definition.get("name") == tool:
                return definition.get("outputSchema")
        return None

    return McpDomain(
        tools_for=tools_for,
        **_grounding(wm, examples),
        output_schema_for=output_schema_for,
        tool_list=wm.tool_list if wm.tool_list != "auto" else ("signatures" if wm.engine == "llama" else "json"),
        # A virtual server's own documents, unless world_model names the server too.
        initial_state={**_declared(virtual, "initial_state"), **wm.initial_state},
        simulation_instruction={**_declared(virtual, "simulation_instruction"), **wm.simulation_instruction},
    )


def _grounding(wm: Any, examples: ExampleLookup) -> dict[str, Any]:
    """What every domain grounds its prompts in: recorded real examples of the call."""
    return {"records_for": examples, "call_key_of": examples.exact_key_of, "demonstrations": wm.demonstrations}


def _channel_documents(wm: Any, channel: str) -> dict[str, Any]:
    """A one-world channel's configured initial state and instruction (keyed by channel)."""
    return {
        "initial_state": wm.initial_state.get(channel),
        "simulation_instruction": wm.simulation_instruction.get(channel),
    }


def _declared(virtual: dict[str, Any], key: str) -> dict[str, str]:
    return {name: getattr(spec, key) for name, spec in virtual.items() if getattr(spec, key)}


def _terminal_domain(config: Config, examples: ExampleLookup) -> Any:
    from backends.world_model.terminal_domain import TerminalDomain

    wm, shell = config.world_model, config.shell
    return TerminalDomain(
        hostname=shell.hostname,
        describe_workspace=lambda: describe_folder(config.shell_workspace),
        **_grounding(wm, examples),
        **_channel_documents(wm, "shell"),
        screen_lines=shell.screen_lines,
        screen_chars=shell.screen_chars,
    )


def _web_domain(config: Config, examples: ExampleLookup) -> Any:
    from backends.world_model.web_domain import WebDomain

    wm, browser = config.world_model, config.browser
    return WebDomain(
        **_grounding(wm, examples),
        **_channel_documents(wm, "browser"),
        snapshot_max_chars=browser.snapshot_max_chars,
        allowed_domains=browser.allowed_domains,
    )


def _http_domain(config: Config, examples: ExampleLookup) -> Any:
    from backends.world_model.http_domain import HttpDomain

    wm = config.world_model
    # initial_state / simulation_instruction are keyed by host[:port], like the calls' server.
    return HttpDomain(
        **_grounding(wm, examples),
        initial_state=wm.initial_state,
        simulation_instruction=wm.simulation_instruction,
    )


def describe_folder(folder: Path | None, *, limit: int = 60) -> str:
    """A listing of the session's initial workspace for the simulated terminal:
    relative paths with sizes, the first `limit` entries."""
    if folder is None or not folder.is_dir():
        return ""
    entries: list[str] = []
    for path in sorted(folder.rglob("*")):
        if len(entries) == limit:
            entries.append("…")
            break
        relative = path.relative_to(folder).as_posix()
        entries.append(f"{relative}/" if path.is_dir() else f"{relative} ({path.stat().st_size} bytes)")
    return "\n".join(entries)
