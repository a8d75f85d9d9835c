"""The demo's HTTP part: an agent's web API calls through `simroute http-proxy`,
launched as a user launches it, in front of a small weather API served by the
demo itself. Two agent sessions: the first records real answers, the second
replays them; a city nobody recorded is simulated by the world model (from the
recorded answers for other cities), and orders are denied. The second session also
rehearses a notes API nobody recorded on the sim route, a `POST` then a `GET` of what
it created; every simulated answer is shown with its sub-provenance (`X-Simroute-Source`)."""

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
  - name: simulate-notes          # a rehearsal of an API nobody recorded: POST then GET, simulated
    match: {channel: http, arguments: {path: "/notes*"}}
    route: sim
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

# The second (rehearsal) session's notes: created, then read back by the id the answer gave.
NOTE = {"text": "buy an umbrella"}

_TEMPERATURES = {"paris": 11.5, "tokyo": 16.0, "lima": 19.5}


class _WeatherApi(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        city = self.path.removeprefix("/weather/")
        if city not in _TEMPERATURES:
            return self._send(404, {"error": f"unknown city {city!r}"})
        observed = datetime.now(UTC).replace(microsecond=0).isoformat()
        self._send(200, {"city": city, "temperature_c": _TEMPERATURES[city], "conditions": "cloudy", "observed_at": observed})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(201, {"order": "placed"})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def weather_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _WeatherApi)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="demo-weather-api", daemon=True).start()
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
    with weather_api() as api, http_proxy(command, config_path) as proxy:
        for session in ("web-agent-1", "web-agent-2"):
            rows = []
            # trust_env=False: the demo's own proxy settings, whatever the shell has.
            with httpx.Client(proxy=proxy, trust_env=False, timeout=180, headers={"X-Simroute-Session": session}) as client:
                for method, path, payload in REQUESTS:
                    rows.append(_row(method, path, client.request(method, api + path, json=payload)))
                if session == "web-agent-2":
                    created = client.post(api + "/notes", json=NOTE)
                    rows.append(_row("POST", "/notes", created))
                    path = f"/notes/{_created_id(created.text)}"
                    rows.append(_row("GET", path, client.get(api + path)))
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
            f"{row['request']:22} {row['status']:6} {row['route']:7} {row['provenance']:10} {latency:8.2f}ms  {record.get('policy', '?'):22} {answer}"
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
    simulated = all(s["GET /weather/lima"]["provenance"] == "sim" and s["GET /weather/lima"]["status"] < 500 for s in by_request)
    denied = all(s["POST /orders"]["status"] == 403 and s["POST /orders"]["route"] == "deny" for s in by_request)
    # The rehearsed notes: both requests on the sim route (whatever made their answers).
    notes = [row for row in second if row["request"].startswith(("POST /notes", "GET /notes/"))]
    rehearsed = len(notes) == 2 and all(row["provenance"] == "sim" for row in notes)
    return recorded_real and replayed and simulated and denied and rehearsed
