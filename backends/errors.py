"""The exceptions backends raise across the boundary to the front doors.

Every backend raises a `BackendError`; a third-party library's own exception
(docker-py, requests, Playwright, httpx2, llama-cpp-python, the MCP client) is
caught where the backend calls it and raised again as one of these, `from` the
original, so the cause stays in the traceback and callers catch one tree:

    BackendError                      any backend failure (RuntimeError, as before)
    ├── BackendUnavailable            the real side cannot run here or now
    │   ├── shell.owned.SandboxesClosed           the router is stopping
    │   ├── BackendLost                            the session's sandbox or browser is on another replica
    │   ├── mcp.upstream.UpstreamError            an upstream MCP server did not start
    │   └── world_model.model_runner.ModelUnavailable   no model file, no model server
    ├── DeadlineExceeded              the work did not finish within its deadline
    │   └── world_model.model_runner.WorldModelTimeout
    ├── BackendBroken                 the part broke while in use
    │   ├── shell.docker_shell.SandboxBroken      the container runs nothing any more
    │   └── shell.bash_stream.ShellGone           the sandbox's shell went away
    ├── BadBackendInput               what the backend was given cannot be served
    │   ├── shell.docker_shell.WorkspaceCopyError the initial workspace cannot be copied in
    │   └── world_model.model_runner.ContextOverflow    the prompt does not fit the model
    └── world_model.model_runner.WorldModelError        the world model gave no prediction
        ├── world_model.parse.EmptyPrediction     its answer held no observation
        ├── world_model.parse.InvalidPrediction   its answer is malformed
        └── (ModelUnavailable, WorldModelTimeout, ContextOverflow: above)

The world model's classes sit in both families: the simulator catches any
`WorldModelError` (and turns it into an error observation), a caller that only
cares about the kind of failure catches the kind.
"""

from __future__ import annotations


class BackendError(RuntimeError):
    """Raised by any backend when it cannot produce an observation. The message
    says what failed and why; the front door (the MCP middleware, the HTTP addon,
    the shell and browser tools) turns an uncaught one into an error observation
    the agent sees, and the call's record keeps it."""


class BackendUnavailable(BackendError):
    """A real backend cannot run on this machine or right now (no Docker engine,
    no Chromium, an upstream server that does not start, the router stopping).
    Raised by the shell's `Sandboxes`, the `BrowserPool`, `UpstreamPool` and the
    engine checks; the message names what is missing and how to get it. The MCP
    middleware answers the call with "simroute: <message>" (no real call was
    made); the simulated route keeps working."""


class BackendLost(BackendUnavailable):
    """A session's real stateful backend (its shell sandbox, its browser) lives on
    another router replica, dead or alive: this replica does not start a fresh one in
    its place (the agent would act on a world that lost what its earlier calls did).
    The message names the backend and the replica."""


class DeadlineExceeded(BackendError):
    """The work did not finish within the deadline the caller gave it (a world
    model still generating, a busy model). The work is stopped, not left running;
    the engine reports the call as timed out."""


class BackendBroken(BackendError):
    """The part broke while in use: a sandbox that cannot start a process, a shell
    whose stream closed. Raised inside the shell backend, which recovers (a new
    shell, a new container) and says so in the next result; one that escapes
    becomes an error observation."""


class BadBackendInput(BackendError):
    """What the backend was given cannot be served, and trying again will not
    help: a workspace folder that cannot be read, a prompt larger than the
    model's context. The message names the input and the limit."""


class ForkUnavailable(Exception):
    """A session's channel cannot fork (its state over `fork.max_bytes`, a token past
    its cap, a copy or start that failed); the message says why."""
