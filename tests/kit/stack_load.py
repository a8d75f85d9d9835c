"""Load on a running compose stack (kit/compose.py): agents stepping REST episodes from
threads, through the balancer, until stopped; and the audit of the store afterwards.

Each step is retried with its `Idempotency-Key` through transport errors and the
balancer's 502/503 (a replica or Redis away), as an RL framework's client retries:
a retry is answered once, and a step whose first request died with its replica is
told so (`infra_error`, no record id), never run twice."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx2

from kit.compose import ComposeStack
from kit.stack_clients import SLOT

RETRIED = {502, 503, 504}


@dataclass
class Answer:
    """One answered step."""

    agent: str
    record_id: str | None
    infra_error: bool
    text: str
    replica: str
    answered_at: float


def client(stack: ComposeStack) -> httpx2.Client:
    return httpx2.Client(
        base_url=stack.url,
        headers={"Authorization": f"Bearer {stack.token}"},
        timeout=httpx2.Timeout(10, read=240),
        trust_env=False,
    )


def reset(http: httpx2.Client, options: dict[str, Any], *, deadline_s: float = 120) -> tuple[str, str]:
    """A new episode (retried through 502/503 and transport errors): its id and replica."""
    response = retried(lambda: http.post("/episodes", json={"seed": 1, "options": options}), deadline_s)
    assert response.status_code == 201, response.text
    return response.json()["episode_id"], response.headers[SLOT]


def step(
    http: httpx2.Client, episode: str, action: dict[str, Any], *, deadline_s: float = 240
) -> tuple[dict[str, Any], str]:
    """One step, retried under one Idempotency-Key: its JSON and the replica that answered."""
    key = uuid.uuid4().hex
    response = retried(
        lambda: http.post(f"/episodes/{episode}/step", json=action, headers={"Idempotency-Key": key}), deadline_s
    )
    assert response.status_code == 200, response.text
    return response.json(), response.headers.get(SLOT, "none")


def retried(send: Any, deadline_s: float) -> httpx2.Response:
    deadline = time.monotonic() + deadline_s
    last = "no answer"
    while True:
        try:
            response = send()
            if response.status_code not in RETRIED:
                return response
            last = f"{response.status_code} {response.text[:300]}"
        except httpx2.TransportError as exc:
            last = f"{type(exc).__name__}: {exc}"
        assert time.monotonic() < deadline, f"not answered within {deadline_s}s: {last}"
        time.sleep(0.5)


def tool_named(http: httpx2.Client, episode: str, suffix: str) -> str:
    listing, _ = step(http, episode, {"type": "list_tools"})
    return next(tool["name"] for tool in listing["observation"]["tools"] if tool["name"].endswith(suffix))


def text_of(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result.get("content") or [])


@dataclass
class Agent:
    """Steps one episode's `echo` (a new text each step) until stopped."""

    stack: ComposeStack
    name: str
    route: str
    pause_s: float = 0.2
    answers: list[Answer] = field(default_factory=list)
    failure: BaseException | None = None
    replica: str = ""
    episode: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Agent:
        self._thread = threading.Thread(target=self._run, name=f"agent-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(300)
        assert not self._thread.is_alive(), f"agent {self.name} did not stop"
        assert self.failure is None, f"agent {self.name} failed: {self.failure!r}"

    def answered_since(self, moment: float) -> list[Answer]:
        return [a for a in self.answers if a.answered_at > moment]

    def _run(self) -> None:
        try:
            with client(self.stack) as http:
                self.episode, self.replica = reset(
                    http, {"route": self.route, "servers": ["toolbox"], "channels": ["mcp"]}
                )
                tool = tool_named(http, self.episode, "echo")
                n = 0
                while not self._stop.is_set():
                    n += 1
                    body, replica = step(
                        http,
                        self.episode,
                        {"type": "call_tool", "tool_name": tool, "arguments": {"text": f"{self.name}-{n}"}},
                    )
                    info, result = body["info"], body["observation"]["result"]
                    text = text_of(result)
                    self.answers.append(
                        Answer(
                            self.name, info.get("record_id"), bool(info["infra_error"]), text, replica, time.monotonic()
                        )
                    )
                    time.sleep(self.pause_s)
        except BaseException as exc:  # noqa: BLE001  (kept and raised by stop(), in the test's thread)
            self.failure = exc


def wait_for(predicate: Any, timeout_s: float, what: str, *, every_s: float = 0.5, detail: Any = None) -> Any:
    """`predicate()` once it is true; `detail()` (what to show) is in the failure."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out ({timeout_s:.0f}s) waiting for {what}" + (f"\n{detail()}" if detail else "")
            )
        time.sleep(every_s)


def wait_for_answers(
    stack: ComposeStack, load: list[Agent], count: int, what: str, *, since: float = 0.0, timeout_s: float = 240
) -> None:
    """Until every agent has `count` answers after `since` (a failure shows the situation)."""
    wait_for(
        lambda: all(len(a.answered_since(since)) >= count for a in load),
        timeout_s,
        what,
        detail=lambda: situation(stack, load),
    )


class InBackground:
    """One step sent from a thread (a call that will be in flight at a fault); `result()`
    joins it: (the step's JSON, the replica that answered)."""

    def __init__(self, http: httpx2.Client, episode: str, action: dict[str, Any]) -> None:
        self.sent_at = time.monotonic()
        self._answers: list[tuple[dict[str, Any], str]] = []
        self._thread = threading.Thread(target=lambda: self._answers.append(step(http, episode, action)), daemon=True)
        self._thread.start()

    def result(self, timeout_s: float) -> tuple[dict[str, Any], str]:
        self._thread.join(timeout_s)
        assert self._answers, f"the step sent in the background was not answered within {timeout_s:.0f}s"
        return self._answers[0]


def situation(stack: ComposeStack, load: list[Agent], *, log_lines: int = 60) -> str:
    """What a failed wait shows: each agent's answers so far and its last, and the
    newest lines of the routers' and the worker's logs."""
    agents = "\n".join(
        f"  {a.name} on {a.replica}: {len(a.answers)} answered, "
        f"last {a.answers[-1] if a.answers else None}, failure {a.failure!r}"
        for a in load
    )
    logs = "\n".join(
        line
        for service in ("router", "worker")
        for line in stack.logs(service).splitlines()[-log_lines:]
        if "GET /health" not in line
    )
    return f"agents:\n{agents}\nlogs:\n{logs}"


def store_rows(stack: ComposeStack) -> list[dict[str, Any]]:
    """Every record in the stack's store, as an operator reads them: `simroute records
    --json` inside a running router container."""
    running = [c for c in stack.container_ids("router") if _running(c)]
    assert running, "no router container is running"
    command = ["docker", "exec", running[0], "simroute", "records", "--json", "--config", "/config/simroute.yaml"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def _running(container: str) -> bool:
    out = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Running}}", container], capture_output=True, text=True, timeout=30
    )
    return out.stdout.strip() == "true"


def audit(stack: ComposeStack, answers: list[Answer]) -> list[dict[str, Any]]:
    """The store after the work stopped: every answered call has exactly one complete
    record, none of a session's steps is recorded twice, and no record is left
    `started` (a call in flight at a kill is marked interrupted by a live replica)."""
    rows = store_rows(stack)
    ids = Counter(row["id"] for row in rows)
    assert [i for i, n in ids.items() if n > 1] == [], "a record stored twice"
    steps = Counter((row["session"], row["step"]) for row in rows)
    twice = [
        (row["session"], row["step"], row["tool"], row["status"], row["ts"])
        for row in rows
        if steps[row["session"], row["step"]] > 1
    ]
    assert twice == [], f"a session's step recorded twice: {sorted(twice)[:6]}"
    by_id = {row["id"]: row for row in rows}
    answered = [a for a in answers if a.record_id is not None]
    missing = [a for a in answered if a.record_id not in by_id]
    assert missing == [], f"{len(missing)} answered call(s) without a record: {missing[:3]}"
    unfinished = [(a, by_id[a.record_id]["status"]) for a in answered if by_id[a.record_id]["status"] != "complete"]
    assert unfinished == [], f"answered calls whose record is not complete: {unfinished[:3]}"
    started = [row for row in rows if row["status"] == "started"]
    assert started == [], f"records left started: {started[:3]}"
    return rows
