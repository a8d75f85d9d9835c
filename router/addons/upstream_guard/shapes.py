"""The upstream guard's refusals in each channel's shape, always provenance `none`:
an MCP `isError` result with the reason; an HTTP `503` (breaker, concurrency) or
`429` (budget) with `Retry-After` and a JSON body; a shell command's non-zero exit
with the reason on its output; a browser action's error."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from backends.browser.page_state import PageState
from backends.http.messages import encode_body, observation_of, response_record
from backends.shell.screen import ShellResult, last_cwd
from calls import Call, Observation, Provenance, Turn
from records.shared_state.guard_slots import Refusal
from router.addons.upstream_guard.state import Refused

REFUSED_EXIT_CODE = 75  # EX_TEMPFAIL (sysexits.h): a temporary failure, try again later


def http_status(refused: Refused) -> int:
    return 429 if refused.refusal is Refusal.BUDGET else 503


def retry_after(refused: Refused) -> str:
    return str(max(1, math.ceil(refused.retry_after_s)))  # Retry-After is whole seconds


def refusal_observation(call: Call, refused: Refused, history: Sequence[Turn] = ()) -> Observation:
    if call.channel == "http":
        status = http_status(refused)
        body = json.dumps(
            {
                "error": refused.message,
                "status": status,
                "provenance": "none",
                "refused_by": "upstream_guard",
                "reason": str(refused.refusal),
                "upstream": refused.upstream,
                "retry_after_s": round(refused.retry_after_s, 3),
            },
            ensure_ascii=False,
        ).encode()
        headers = [("Content-Type", "application/json"), ("Retry-After", retry_after(refused))]
        return observation_of(
            response_record(status, "", headers, encode_body(body, limit=len(body)), decoded=False), Provenance.NONE
        )
    if call.channel == "shell":
        result = ShellResult(
            output=refused.message + "\n", exit_code=REFUSED_EXIT_CODE, cwd=last_cwd(history), error="not run"
        )
        return Observation([{"type": "text", "text": result.text()}], Provenance.NONE, True, result.structured())
    if call.channel == "browser":
        state = PageState(url=None, title=None, snapshot=None, error=refused.message, refused=True)
        return Observation([{"type": "text", "text": state.text()}], Provenance.NONE, True, None)
    return Observation.error(refused.message, Provenance.NONE)
