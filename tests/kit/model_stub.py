"""An OpenAI-compatible model for tests: it answers one fixed observation, what a
function of the request makes of it, or what a `reply` function makes of each request
(a judge's verdict, tests/kit/judge.py), and keeps every request body it was sent, so a
test can read the prompts simroute built."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    # Episodes tests send dozens of simulated calls at once: the default listen backlog
    # (5) would reset connections a served model would have queued.
    request_queue_size = 256
    daemon_threads = True


class ModelStub:
    """An OpenAI-compatible /v1/chat/completions that answers one fixed observation
    (`answer`, or `answer(body)` for each request body; a test may change it between
    calls), or the message content `reply(body)` makes of each request, and keeps every
    request body it was sent."""

    def __init__(
        self, answer: str | Callable[[dict], str] = "report simulated", *, reply: Callable[[dict], str] | None = None
    ) -> None:
        self.bodies: list[dict] = []
        self.answer = answer
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.bodies.append(body)
                if reply is not None:
                    content = reply(body)
                else:
                    observation = stub.answer(body) if callable(stub.answer) else stub.answer
                    content = f"<predicted_observation>{observation}</predicted_observation>"
                message = {"role": "assistant", "content": content}
                encoded = json.dumps(
                    {
                        "choices": [{"message": message, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)

            def log_message(self, *args) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ModelStub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
