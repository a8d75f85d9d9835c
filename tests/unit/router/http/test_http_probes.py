"""A noise probe of the HTTP channel is mitmproxy's replay of the agent's request
(probes.py), with real mitmproxy objects: its own connection, the request as sent
(pinned), the upstream proxy of the listener it came in by."""

from mitmproxy import connection, http, options
from mitmproxy.proxy.layers.http import HTTPMode
from mitmproxy.proxy.mode_specs import ProxyMode

from router.http.pinning import Pins
from router.http.probes import _handler, is_probe, restore_request, sender

LISTENERS = ["regular@127.0.0.1:8080", "upstream:http://10.1.1.1:3128@127.0.0.1:8081"]


def agent_flow(mode: str) -> http.HTTPFlow:
    client = connection.Client(
        peername=("127.0.0.1", 5000), sockname=("127.0.0.1", 8080), proxy_mode=ProxyMode.parse(mode), id="client-1"
    )
    flow = http.HTTPFlow(client, connection.Server(address=None))
    flow.request = http.Request.make("GET", "https://rebind.test/x?q=1", headers={"Host": "rebind.test"})
    return flow


def test_the_replay_goes_through_the_upstream_proxy_of_its_own_listener():
    opts = options.Options(mode=LISTENERS)
    through = _handler(agent_flow(LISTENERS[1]), opts)
    assert through.layer.mode is HTTPMode.upstream and through.layer.context.server.via == ("http", ("10.1.1.1", 3128))
    # mitmproxy's own replay would take the first listener's mode (direct) for both.
    direct = _handler(agent_flow(LISTENERS[0]), options.Options(mode=list(reversed(LISTENERS))))
    assert direct.layer.mode is HTTPMode.transparent and direct.layer.context.server.via is None


async def test_the_probe_sends_the_pinned_request_on_a_connection_of_its_own(monkeypatch):
    pins = Pins()
    flow = agent_flow(LISTENERS[0])
    pins.pin(flow.request, "client-1", ["10.0.0.5"])
    sent: list[tuple[http.HTTPFlow, list[str | None]]] = []

    class Replayed:
        transports: dict = {}

        def __init__(self, probe):
            self.probe = probe

        async def replay(self):
            names = pins.names(self.probe.client_conn.id)
            sent.append((self.probe, [names.get(("10.0.0.5", 443))]))
            self.probe.response = http.Response.make(200, b"{}")

    monkeypatch.setattr("router.http.probes._handler", lambda probe, opts: Replayed(probe))
    send = sender(flow, pins, options.Options())
    pins.forget("client-1")  # the agent hung up before the probe ran
    probe = await send()
    ((replayed, names),) = sent
    assert replayed is probe and is_probe(probe) and probe.is_replay == "request"
    assert probe.client_conn.id != "client-1" and names == ["rebind.test"]  # its own connection, the checked name
    assert (probe.request.host, probe.request.host_header, probe.request.path) == ("10.0.0.5", "rebind.test", "/x?q=1")
    assert pins.names(probe.client_conn.id) == {}  # given back
    probe.request.host_header = "10.0.0.5:443"  # what mitmproxy's replay writes in reverse mode
    restore_request(probe)
    assert probe.request.host_header == "rebind.test"
