"""The router's errors: what each is, where it is raised, and where it is caught.

The router raises its own errors where they start and catches them at the front door
that answers for them; nothing here is a class of its own (each error lives
beside the code that raises it). This module is the map.

Configuration and start (the CLI turns each into an exit code and a message)
- `ValueError`
  - `router.config.ConfigError`: a config file that does not parse or validate.
    Raised by `router.config` loading; caught by `router.cli.common.load_or_exit` (exit 2).
  - `router.config.yaml_document.DocumentTooLarge`: a config nested too deep or
    expanding too far through aliases (a YAML bomb). Raised by `check_depth` /
    `check_expanded_size`; caught by `router.config.root.parse_config` (becomes `ConfigError`).
  - `router.auth.AuthConfigError`: a bad `SIMROUTE_TOKEN` / `service.tokens`, or a
    network bind without a token. Raised by `router.auth` (from `Runtime.__init__` and
    `router.mcp.http_guard.http_run_options`); caught by `router.cli.serving` (exit 2).
  - `router.http.ca.CAError`: the CA cannot be created or read. Raised by
    `router.http.ca`; caught by `HttpProxy.start` (becomes `ProxyStartError`) and
    `router.cli.setup.ca` (exit 1).
  - `router.reports.explain.CallFormatError`: a call given to `simroute explain` is
    malformed. Raised by `call_from_json` / `read_calls`; caught by `router.cli.explain` (exit 2).
  - `router.tune.data.TrainingDataError`: a tuning run's training data cannot be made
    (an export folder made for another prefill, no records). Raised by `router.tune.data`;
    caught by `router.cli.tune` (exit 1).
  - `router.reports.compare_held_out.NoHeldOutCalls`: the held-out sessions of a model
    comparison hold no call with a real answer. Raised by
    `router.reports.compare_held_out.compare_on_held_out`; caught by
    `router.cli.compare_models` (exit 1).
- `RuntimeError`
  - `router.http.proxy.ProxyStartError`: the proxy cannot listen. Raised by
    `HttpProxy.start`; caught by `router.cli.serving` (`serve`, `http-proxy`: exit 1).
  - `router.tune.prepare.PrepareError`: llama.cpp's conversion tools cannot be fetched or
    extracted. Raised by `router.tune.prepare.prepare`; caught by `router.cli.tune` (exit 1).
  - `router.tune.train.TrainingError`: a tuning run's training cannot run (no example
    fits `--max-tokens`). Raised by `router.tune.train`; caught by
    `router.cli.tune` (exit 1).
  - `router.tune.convert.ConversionError`: a conversion script failed, or llama-cpp-python
    refused what it wrote. Raised by `router.tune.convert`; caught by `router.cli.tune` (exit 1).
- `Exception`
  - `router.tune.adoption.AdoptionRefused`: a run or a config that cannot take an
    adoption or a revert (not evaluated, another base model, a served world model).
    Raised by `router.tune.adoption.adopt_run` / `revert`; caught by `router.cli.tune` (exit 2).

Per call and per request (each answered, and recorded where a call began)
- `ValueError`
  - `router.http.normalize.NormalizationError`: a request whose host, path or Host
    header cannot be put in one form. Raised by `router.http.normalize`; caught by
    `HttpRouting._route` (a recorded 400).
  - `router.episodes.options.EpisodeOptionsError`: a reset's options that do not
    validate. Raised by `router.episodes.options` / `router.episodes.routes`; caught by
    the REST front door's handler (`router.episodes.front_doors`: 422) and the OpenEnv front door
    (`VALIDATION_ERROR`).
  - `router.dashboard.routes.BadQuery`: a dashboard query with a bad `since`,
    `until`, `limit` or `id`. Raised and caught in `router.dashboard.routes` (400).
- `RuntimeError`
  - `router.episodes.host.EpisodeError` (carries the HTTP status): no such episode,
    an ended one, a verify that cannot run; `EpisodeCapacityError` past the episode or
    session caps. Raised by `EpisodeHost` and `router.episodes.mcp_front_door`; caught by the
    REST front door's handler (its status), the OpenEnv front door (`EXECUTION_ERROR`; capacity:
    its own message) and the per-episode MCP front door.
  - `router.episodes.verifiers.VerifierError`: a verifier that cannot load, times out,
    raises or answers no number. Raised by `router.episodes.verifiers`; caught by
    `EpisodeHost.verify` (remarked on the episode, becomes a 422 `EpisodeError`).
  - `router.engine.sessions.SessionRefusedError`: a call's session cannot be had:
    `SessionLimitError` (past `sessions.max_open`) or `SessionEndedError` (an episode's
    session after it closed or was reaped). Raised by `SessionRegistry.get`; caught by
    every front door, which records the refusal in a transient session (`router.http.front_door`,
    `router.http.addon`, `router.mcp.middleware`, `router.mcp.http_guard`).
- `Exception`
  - `router.http.access.Refused`: a proxy request refused before routing (credentials,
    address policy, body limit); carries the status, the policy and the reason. Raised
    by `router.http.access` gates and made by the addon; answered (and recorded) by
    `router.http.front_door.HttpFrontDoor.refuse`.
  - `router.http.probes.ProbeFailed`: a noise probe (the request sent again off the
    agent's path) got no answer. Raised by the probe's sender; caught by
    `shadow.noise_learner.NoiseLearner._probe` (no pair learnt).
  - `calls.ForkRefused`: a call routed `fork` that cannot fork (a channel
    that cannot, a state over `fork.max_bytes`, no sandbox engine). Raised by
    `router.runtime.fork_route` and `router.engine.routes`; caught by the engine's
    `fork_route` (the call is simulated, the reason recorded).
  - `router.runtime.fork_route._McpFailed`: a fork's MCP server failed or hung up
    (fastmcp's `MCPError`, a closed connection). Raised by `ChannelForks`' MCP path;
    caught by `ChannelForks.run` (an error observation, provenance `none`).
  - `calls.SimulatorUnavailable`: the simulated side is down. Raised to
    background work only (the world model's `ModelUnavailable` is one); caught by
    the shadow runner and worker, which keep the work pending until the model is back.

From the other rooms, as the router meets them
- `records.store.protocol.StoreError` (the store is unreachable or broken): caught by
  the CLI (exit 1), the dashboard (an error answer), the engine's shared session
  state (counts alone until it returns) and the learned service (keeps its model).
- `records.store.protocol.RecordError` (a write-ahead record could not be written):
  fail closed. Caught by the engine and by `router.http.addon` / `router.http.tunnels`
  (the request or tunnel does not go out; its answer says why).
- `backends.errors.BackendUnavailable`, `backends.mcp.upstream.UpstreamError` (a real
  side that cannot run, an upstream that cannot start): `router.mcp.middleware`
  turns them into error observations with provenance `none`.
- `records.shared_state.answers.IdempotencyError` (a `ValueError`): a malformed
  idempotency key, or one used for another action. Raised by
  `router.mcp.idempotency_keys` and the shared state's answers; caught by
  `router.mcp.tool_calls` and `EpisodeHost.step` (a recorded refusal, provenance `none`).
- `records.shared_state.answers.IdempotencyLost` (a `RuntimeError`): a keyed call's
  answer was being made by a replica that went away. Raised by
  `records.shared_state.answers_redis`; caught as `IdempotencyError` is.
- `policies.errors.ModelLoadError`: caught by the CLI (exit 1) and the
  learned service (keeps the model it has).

Boundaries that catch everything (`except Exception`, each commented in place)
- The engine: a policy that raises denies the call; a backend (real side or
  simulator) that raises answers with an error observation, recorded as any.
- The front doors' last resorts: `HttpRouting.request` (a routing failure is a
  recorded 500, never an unrouted request), `TunnelRouting.tcp_start` (the tunnel
  never connects), `router.http.errors` (mitmproxy's own 400 still goes out when its
  record fails), `router.mcp.middleware` (the real side of an MCP call: whatever the
  upstream raised becomes an error observation), `router.mcp.provider` (a listing
  that fails falls back to the stored tools).
- Background tasks: `Runtime._preload_world_model` and the prompt read-ahead (each
  call reports the failure again), the learned service's subscription close.
`asyncio.CancelledError` is never caught by these (it is a `BaseException`).
"""
