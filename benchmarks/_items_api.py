"""The local JSON API of the fidelity workload (sim_fidelity.py, model_bakeoff.py):
a small stateful items store, created, read and deleted over HTTP, reset between
phases so every phase starts from the same empty state."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


class ItemsApi(BaseHTTPRequestHandler):
    """A local JSON API: a list of items, created, read and deleted."""

    items: dict[int, dict] = {}
    next_id = [1]

    def _send(self, status: int, value) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _item(self) -> int | None:
        tail = self.path.rstrip("/").rsplit("/", 1)[-1]
        return int(tail) if tail.isdigit() else None

    def do_GET(self):
        item = self._item()
        if item is None:
            return self._send(200, [ItemsApi.items[k] for k in sorted(ItemsApi.items)])
        if item in ItemsApi.items:
            return self._send(200, ItemsApi.items[item])
        return self._send(404, {"error": f"item {item} not found"})

    def do_POST(self):
        data = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        item = {"id": ItemsApi.next_id[0], "name": data.get("name", "")}
        ItemsApi.items[item["id"]] = item
        ItemsApi.next_id[0] += 1
        self._send(201, item)

    def do_DELETE(self):
        item = self._item()
        if ItemsApi.items.pop(item, None) is None:
            return self._send(404, {"error": f"item {item} not found"})
        self._send(200, {"deleted": item})

    def log_message(self, *args):
        pass

    @classmethod
    def reset(cls) -> None:
        cls.items.clear()
        cls.next_id[0] = 1
