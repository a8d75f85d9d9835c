"""The demo's HTTP part: an agent's web API calls through `simroute http-proxy`,
launched as a user launches it, in front of a small weather-and-notes API served by
the demo itself. Two agent sessions: the first records real answers, the second
replays them; a city nobody recorded is simulated by the world model (from the
recorded answers for other cities), and orders are denied. The first session keeps a
note for real; the second rehearses its notes on the sim route (the `session` match
key): a `POST`, a `GET` of what it created and a `GET` of the listing, answered by the
session's HTTP resource state from what the real note taught (sub-provenance
`state`, no model call). Every simulated answer is shown with its sub-provenance
(`X-Simroute-Source`).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from router.cli.launch import free_port, stop, wait_for_port

HTTP_RULES = """\
  - name: simulate-lima           # a city nobody recorded: the world model answers
    match: {channel: http, arguments: {path: "/weather/lima"}}
    route: sim
  - name: rehearse-notes          # the rehearsal session's notes: simulated, from the real notes' state
    match: {channel: http, session: "web-agent-2", path: "/notes*"}
    route: sim
  - name: keep-notes              # the recording session's notes are real
    match: {channel: http, path: "/notes*"}
    route: real
  - name: replay-weather
    match: {channel: http, arguments: {path: "/weather/*"}}
    route: replay
  - name: no-orders               # rehearsal: nothing is bought for real
    match: {channel: http, tool: POST}
    route: deny
"""

REQUESTS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/weather/paris", None),
    ("GET", "/weather/tokyo", None),
    ("GET", "/weather/lima", None),
    ("POST", "/orders", {"item": "umbrella", "quantity": 2}),
]

# Each session's note: created (for real by the first session, in rehearsal by the
# second), read back by the id the answer gave, then listed.
NOTES = {"web-agent-1": {"text": "check the forecast"}, "web-agent-2": {"text": "buy an umbrella"}}

_TEMPERATURES = {"paris": 11.5, "tokyo": 16.0, "lima": 19.5}


class _DemoApi(BaseHTTPRequestHandler):
    notes: list[dict[str, Any]]  # the API's own state, per server (see demo_api)

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        if self.path == "/notes":
            return self._send(200, self.notes)
        if self.path.startswith("/notes/"):
            found = [note for note in self.notes if str(note["id"]) == self.path.removeprefix("/notes/")]
            return self._send(200, found[0]) if found else self._send(404, {"detail": "Not Found"})
        city = self.path.removeprefix("/weather/")
        if city not in _TEMPERATURES:
            return self._send(404, {"error": f"unknown city {city!r}"})
        self._send(
            200, {"city": city, "temperature_c": _TEMPERATURES[city], "conditions": "cloudy", "observed_at": _now()}
        )

    def do_POST(self) -> None:
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/notes":
            return self._send(201, {"order": "placed"})
        note = {"id": len(self.notes) + 1, **json.loads(sent or b"{}"), "created_at": _now()}
        self.notes.append(note)
        self._send(201, note)

    def _send(self, status: int, payload: dict[str, Any] | list[dict[str, Any]]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


@contextmanager
def demo_api() -> Iterator[str]:
    handler = type("DemoApi", (_DemoApi,), {"notes": []})  # a fresh notes list per server
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="demo-api", daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def http_proxy(command: list[str], config_path: Path) -> Iterator[str]:
    port = free_port()
    log = config_path.parent / "http-proxy.log"
    process = subprocess.Popen(
        [*command, "http-proxy", "--config", str(config_path), "--port", str(port)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for_port(port, process, timeout_s=60, describe=log.read_text)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process, timeout_s=30)


def run_http_sessions(command: list[str], config_path: Path) -> list[list[dict[str, Any]]]:
    """Both agent sessions' requests through the proxy: per request its answer and simroute's headers."""
    import httpx2 as httpx

    sessions = []
    with demo_api() as api, http_proxy(command, config_path) as proxy:
        for session in ("web-agent-1", "web-agent-2"):
            rows = []
            # trust_env=False: the demo's own proxy settings, whatever the shell has.
            with httpx.Client(
                proxy=proxy, trust_env=False, timeout=180, headers={"X-Simroute-Session": session}
            ) as client:
                for method, path, payload in REQUESTS:
                    rows.append(_row(method, path, client.request(method, api + path, json=payload)))
                created = client.post(api + "/notes", json=NOTES[session])
                rows.append(_row("POST", "/notes", created))
                path = f"/notes/{_created_id(created.text)}"
                rows.append(_row("GET", path, client.get(api + path)))
                rows.append(_row("GET", "/notes", client.get(api + "/notes")))
            sessions.append(rows)
    return sessions


def _row(method: str, path: str, response: Any) -> dict[str, Any]:
    return {
        "request": f"{method} {path}",
        "status": response.status_code,
        "route": response.headers.get("x-simroute-route", "?"),
        "provenance": response.headers.get("x-simroute-provenance", "?"),
        "record_id": response.headers.get("x-simroute-record", ""),
        "source": _json_or_none(response.headers.get("x-simroute-source")),
        "answer": response.text,
    }


def _created_id(text: str) -> str:
    """The id a simulated `POST /notes` answered with (1 when it named none)."""
    found = _json_or_none(text)
    value = found.get("id") if isinstance(found, dict) else None
    return str(value) if isinstance(value, int | str) and str(value).isalnum() else "1"


def _json_or_none(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def sub_line(source: Any) -> str:
    """The line under a simulated answer naming its sub-provenance (how it was made)."""
    sub = source.get("sub") if isinstance(source, dict) else None
    return f"{'':22} sub-provenance: {sub or 'none named'}"


def print_http_rows(label: str, rows: list[dict[str, Any]], records: dict[str, dict[str, Any]]) -> None:
    print(f"\n== {label} ==")
    print(f"{'request':22} {'status':>6} {'route':7} {'provenance':10} {'latency':>10}  {'policy':22} answer")
    for row in rows:
        record = records.get(row["record_id"], {})
        latency = record.get("latency_ms", float("nan"))
        answer = " ".join(row["answer"].split())[:60]
        print(
            f"{row['request']:22} {row['status']:6} {row['route']:7} {row['provenance']:10} {latency:8.2f}ms  "
            f"{record.get('policy', '?'):22} {answer}"
        )
        if row["provenance"] == "sim":
            print(sub_line(row.get("source")))


def http_sessions_ok(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> bool:
    """The routes the demo's rules promise."""
    by_request = [{row["request"]: row for row in rows} for rows in (first, second)]
    recorded_real = all(by_request[0][f"GET /weather/{c}"]["provenance"] == "real" for c in ("paris", "tokyo"))
    replayed = all(
        by_request[1][f"GET /weather/{c}"]["provenance"] == "replay"
        and by_request[1][f"GET /weather/{c}"]["answer"] == by_request[0][f"GET /weather/{c}"]["answer"]
        for c in ("paris", "tokyo")
    )
    # Simulated, and an answer of the API: never the world model failing (a 5xx).
    simulated = all(
        s["GET /weather/lima"]["provenance"] == "sim" and s["GET /weather/lima"]["status"] < 500 for s in by_request
    )
    denied = all(s["POST /orders"]["status"] == 403 and s["POST /orders"]["route"] == "deny" for s in by_request)
    kept = [by_request[0][r] for r in ("POST /notes", "GET /notes/1", "GET /notes")]
    kept_real = all(row["provenance"] == "real" and row["status"] < 300 for row in kept)
    return recorded_real and replayed and simulated and denied and kept_real and notes_rehearsed(second)


def notes_rehearsed(rows: list[dict[str, Any]]) -> bool:
    """The second session's notes came from its resource state: the create answered as
    the real one was (201, a new id), the note read back, the listing holding the real
    note and the rehearsed one."""
    notes = [row for row in rows if "/notes" in row["request"]]
    if len(notes) != 3 or not all(
        row["provenance"] == "sim" and (row["source"] or {}).get("sub") == "state" for row in notes
    ):
        return False
    created, read, listed = (_json_or_none(row["answer"]) for row in notes)
    texts = (
        [note.get("text") for note in listed]
        if isinstance(listed, list) and all(isinstance(n, dict) for n in listed)
        else []
    )
    return (
        notes[0]["status"] == 201
        and read == created
        and texts == [NOTES["web-agent-1"]["text"], NOTES["web-agent-2"]["text"]]
    )
