"""Each mitmproxy patch (router/http/mitmproxy_patches.py) against the pinned mitmproxy.

The source of every method a patch replaces or relies on is pinned by a hash: a
mitmproxy that changes it fails here, before the patch silently stops doing its
job. Each patch is also run on a tiny in-process case."""

import ast
import hashlib
import importlib
import inspect
import json
from types import SimpleNamespace

import pytest
from mitmproxy import options
from mitmproxy.proxy import context, events
from mitmproxy.test import tflow

from router.http import mitmproxy_patches

PINNED = {  # (module, qualified name) -> sha256 of its source, first 16 hex digits, in mitmproxy 12.2.3
    ("mitmproxy.proxy.layers.http._http1", "make_error_response"): "1ebe7083b78d5937",
    ("mitmproxy.proxy.layers.http", "HttpStream.check_body_size"): "97eed8962223617a",
    ("mitmproxy.proxy.layers.http", "HttpStream.handle_connect_finish"): "af91ca9350a351da",
    ("mitmproxy.proxy.layer", "NextLayer"): "d906978b0d59fd83",
}


def source_hash(module: str, qualname: str) -> str:
    """The hash of a definition as written in mitmproxy's file (not the patched object)."""
    text = inspect.getsource(importlib.import_module(module))
    body, node = ast.parse(text).body, None
    for name in qualname.split("."):
        node = next(n for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name)
        body = node.body
    return hashlib.sha256(ast.get_source_segment(text, node).encode()).hexdigest()[:16]


@pytest.mark.parametrize(("module", "qualname"), list(PINNED))
def test_the_patched_mitmproxy_code_is_the_pinned_one(module, qualname):
    assert source_hash(module, qualname) == PINNED[module, qualname], (
        f"mitmproxy changed {module}.{qualname}: review mitmproxy_patches.py"
    )


def test_error_pages_are_simroutes_json():
    from mitmproxy.proxy.layers.http import _http1

    # The HTTP/1 layer calls the function by its module-global name: replacing it reaches every call site.
    assert "make_error_response(" in inspect.getsource(_http1.Http1Server)
    mitmproxy_patches.install_error_pages()
    mitmproxy_patches.install_error_pages()  # idempotent
    head, _, body = _http1.make_error_response(502, "Connect call failed").decode().partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 502") and "X-Simroute-Provenance: none" in head
    assert json.loads(body)["error"] == "simroute proxy: Connect call failed"


def _run(generator):
    try:
        next(generator)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("expected no command from check_body_size")


def test_the_body_size_limit_bounds_requests_only():
    from mitmproxy.proxy.layers import http as layers_http

    # The flow error simroute answers 413 for is mitmproxy's own message for a request
    # (getsource unwraps: another test in this process may have installed the patch).
    assert "body exceeds mitmproxy's body_size_limit." in inspect.getsource(layers_http.HttpStream.check_body_size)
    assert mitmproxy_patches.REQUEST_TOO_LARGE == "Request body exceeds mitmproxy's body_size_limit."
    mitmproxy_patches.install_request_body_limit()
    mitmproxy_patches.install_request_body_limit()  # idempotent
    check = layers_http.HttpStream.check_body_size
    assert check.simroute
    limited = SimpleNamespace(
        context=SimpleNamespace(options=SimpleNamespace(stream_large_bodies=None, body_size_limit="1"))
    )
    assert _run(check(limited, False)) is False  # a response: never checked
    unlimited = SimpleNamespace(
        context=SimpleNamespace(options=SimpleNamespace(stream_large_bodies=None, body_size_limit=None))
    )
    assert _run(check(unlimited, True)) is False  # a request: mitmproxy's own check


def test_a_silent_tunnel_client_gets_the_raw_tcp_layer():
    from mitmproxy.proxy.layers import TCPLayer
    from mitmproxy.proxy.layers import http as layers_http

    # The wrapper replaces the undecided layer that a regular CONNECT sets before finishing.
    assert "self.child_layer = layer.NextLayer(self.context)" in inspect.getsource(
        layers_http.HttpStream.handle_connect_regular
    )
    mitmproxy_patches.install_silent_tunnels(0.1)
    assert layers_http.HttpStream.handle_connect_finish.simroute
    ctx = context.Context(tflow.tclient_conn(), options.Options())
    ctx.server = tflow.tserver_conn()
    undecided = mitmproxy_patches.first_bytes_layer()(ctx)
    [wakeup] = list(undecided.handle_event(events.Start()))
    assert wakeup.delay == 0.1
    list(undecided.handle_event(events.Wakeup(wakeup)))
    assert isinstance(undecided.layer, TCPLayer)
    assert undecided.layer.flow.metadata[mitmproxy_patches.SILENT_CLIENT] == 0.1
