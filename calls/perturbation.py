"""What a perturbation plan decided for one call, and a meaning-level perturbation's
hold on one simulated answer (policies/perturbation decides; the engine applies)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from calls.call import Observation

# Perturbations that answer instead of the call (the call goes to no side).
FAULT_KINDS = frozenset({"error", "timeout", "rate_limit"})
# Perturbations that change the route's answer after it ran (the record keeps the route's own).
ANSWER_KINDS = frozenset({"empty", "truncate", "paginate", "mislead"})


@dataclass(frozen=True, slots=True)
class Perturbation:
    """What a perturbation plan decided for one call (policies/perturbation): a fault
    answered instead of the call (`error`, `timeout`, `rate_limit`), a delay
    (`latency`), or a change of the answer (`empty`, `truncate`). A pure function of
    (seed, session key, rule, n): the same seed gives the same perturbations anywhere."""

    kind: str
    rule: str  # "<plan>:<rule>"
    seed: int
    n: int  # the call's number among the calls the rule matched in its scope (1-based)
    delay_s: float = 0.0  # latency: the delay; timeout: how long the call hangs before it fails
    status: int | None = None  # error: the HTTP status
    exit_code: int = 1  # error: a shell command's exit code
    message: str = ""  # error: the text the agent sees ("" : the channel's usual one)
    retry_after_s: float | None = None  # error (429, 503), rate_limit: the Retry-After the agent is told
    keep: float = 1.0  # truncate: the share of a list or text kept
    limit: int | None = None  # rate_limit: the calls a bucket allows
    page_size: int = 0  # paginate: the items of a page
    cursor_argument: str = "cursor"  # paginate: the argument a follow-up call passes the cursor in
    page: int = 0  # paginate: the page the agent got (1: the first)
    by_world_model: bool = False  # mislead: the world model rewrites the answer (else a seeded mutation of it)

    @property
    def is_fault(self) -> bool:
        """A fault answers instead of the call: the call is not sent to any side."""
        return self.kind in FAULT_KINDS

    def meta(self) -> dict[str, Any]:
        """What the observation's `_meta.simroute.perturbation` and the record carry."""
        out: dict[str, Any] = {"kind": self.kind, "rule": self.rule, "seed": self.seed, "n": self.n}
        if self.kind in ("latency", "timeout"):
            out["delay_s"] = round(self.delay_s, 6)
        if self.kind == "paginate" and self.page:
            out["page"] = self.page
        return out


@dataclass(frozen=True, slots=True)
class Steer:
    """A meaning-level perturbation's hold on one simulated answer: an instruction
    added to the world model's prompt for this call only, and a check of the answer
    against the perturbation's kind (None: it holds; else why not)."""

    kind: str
    instruction: str
    check: Callable[[Observation], str | None] = field(default=lambda observation: None)
