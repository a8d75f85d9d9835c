"""The episodes' REST front door of `simroute serve`, as a training loop uses it: reset, one
`http_request` step at a time, close. Standard library only (urllib)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass
from typing import Any


class InfraError(RuntimeError):
    """simroute or a backend failed (not the agent): the step says `infra_error`, or the
    REST call itself failed. Training code drops such an episode rather than score it."""


@dataclass(frozen=True)
class Answer:
    """What the agent got for one HTTP request, and where it came from."""

    status: int
    headers: dict[str, str]  # names lowercased
    body: Any  # the JSON body, or its text when it is not JSON
    provenance: str | None  # real, replay, sim, none (simroute's own: a perturbation, a refusal)
    perturbation: str | None  # the kind of perturbation that made or changed it, if any

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class Episodes:
    def __init__(self, base_url: str, timeout_s: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        # What answered each step: its provenance, and `perturbed KIND` for a perturbation.
        self.answers: Counter[str] = Counter()

    def _send(self, method: str, path: str, body: dict | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers={"content-type": "application/json"} if data else {}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            raise InfraError(f"{method} {path}: HTTP {error.code}: {error.read().decode(errors='replace')}") from None
        except OSError as error:
            raise InfraError(f"{method} {path}: {error}") from None
        return json.loads(text) if text else None

    def reset(self, seed: int, options: dict[str, Any]) -> str:
        return self._send("POST", "/episodes", {"seed": seed, "options": options})["episode_id"]

    def get(self, episode_id: str, url: str, headers: dict[str, str]) -> Answer:
        """One `http_request` step: GET `url` through simroute's HTTP channel."""
        action = {
            "type": "call_tool",
            "tool_name": "http_request",
            "arguments": {"method": "GET", "url": url, "headers": headers},
        }
        step = self._send("POST", f"/episodes/{episode_id}/step", action)
        info, result = step["info"], step["observation"]["result"]
        if info.get("infra_error"):
            raise InfraError(f"step {info.get('step')} of episode {episode_id}: {result['content'][0]['text']}")
        answer = result["structuredContent"]
        meta = result.get("_meta", {}).get("simroute", {})
        try:
            body = json.loads(answer["body"])
        except ValueError:
            body = answer["body"]
        kind = (meta.get("perturbation") or {}).get("kind")
        if info.get("provenance") == "none" and kind is None:
            # simroute's own answer that no perturbation made: a refusal or a failure (a
            # world model's failure on http_request is not yet flagged `infra_error`).
            # Nothing in this example is refused, so it is never the policy's doing.
            raise InfraError(
                f"step {info.get('step')} of episode {episode_id}: simroute answered {result['content'][0]['text']}"
            )
        self.answers[str(info.get("provenance"))] += 1
        if kind:
            self.answers[f"perturbed {kind}"] += 1
        return Answer(
            status=answer["status"],
            headers={name.lower(): value for name, value in answer["headers"].items()},
            body=body,
            provenance=info.get("provenance"),
            perturbation=kind,
        )

    def close(self, episode_id: str) -> None:
        self._send("DELETE", f"/episodes/{episode_id}")
