"""A request goes to the address its check saw (pinning.py), with real mitmproxy objects."""

import socket

from mitmproxy import connection, http

from router.http.addresses import Reach, reach_of
from router.http.pinning import Pins


def request(url: str, host: str) -> http.Request:
    return http.Request.make("GET", url, headers={"Host": host})


def test_the_request_connects_to_the_first_checked_address_and_keeps_its_name():
    pins = Pins()
    req = request("http://rebind.test:8080/x", "rebind.test:8080")
    assert pins.pin(req, "client-1", ["10.0.0.5", "10.0.0.6"]) == "10.0.0.5"
    # mitmproxy opens (or reuses) the upstream connection to (request.host, request.port).
    assert (req.host, req.port) == ("10.0.0.5", 8080)
    assert req.headers["Host"] == "rebind.test:8080" and req.url == "http://10.0.0.5:8080/x"
    literal = request("http://10.0.0.9/x", "10.0.0.9")
    assert pins.pin(literal, "client-1", ["10.0.0.9"]) is None and literal.host == "10.0.0.9"
    unresolved = request("http://localhost/x", "localhost")  # a name not looked up: nothing to pin to
    assert pins.pin(unresolved, "client-1", []) is None and unresolved.host == "localhost"


def server(address: str, port: int, *, tls: bool) -> connection.Server:
    return connection.Server(address=(address, port), tls=tls, sni=address if tls else None)


def client(sni: str | None = None) -> connection.Client:
    return connection.Client(peername=("127.0.0.1", 5000), sockname=("127.0.0.1", 8080), sni=sni, id="client-1")


def test_a_pinned_tls_connection_asks_for_the_name():
    pins = Pins()
    pins.pin(request("https://rebind.test/x", "rebind.test"), "client-1", ["10.0.0.5"])
    upstream = server("10.0.0.5", 443, tls=True)
    pins.server_connect(client(), upstream)
    assert upstream.sni == "rebind.test" and upstream.address == ("10.0.0.5", 443)
    tunnelled = server("10.0.0.5", 443, tls=True)
    pins.server_connect(client(sni="www.rebind.test"), tunnelled)  # the client's own SNI, as mitmproxy does
    assert tunnelled.sni == "www.rebind.test"
    other = server("10.0.0.5", 8443, tls=True)  # not pinned (another port): left to mitmproxy
    pins.server_connect(client(), other)
    assert other.sni == "10.0.0.5"
    pins.forget("client-1")
    again = server("10.0.0.5", 443, tls=True)
    pins.server_connect(client(), again)
    assert again.sni == "10.0.0.5"


async def test_addresses_come_in_the_resolvers_order_and_the_most_sensitive_decides(monkeypatch):
    answers = ["93.184.216.34", "169.254.169.254", "93.184.216.34"]

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    reach, addresses = await reach_of("mixed.test", 80)
    assert (reach, addresses) == (Reach.METADATA, ["93.184.216.34", "169.254.169.254"])


def test_a_probes_connection_borrows_the_names_and_gives_them_back():
    """A noise probe runs on a connection of its own, maybe after the agent's closed."""
    pins = Pins()
    pins.pin(request("https://rebind.test/x", "rebind.test"), "client-1", ["10.0.0.5"])
    names = pins.names("client-1")
    pins.forget("client-1")  # the agent hung up before the probe
    probe = connection.Client(peername=("127.0.0.1", 5000), sockname=("127.0.0.1", 8080), id="probe-1")
    pins.lend("probe-1", names)
    upstream = server("10.0.0.5", 443, tls=True)
    pins.server_connect(probe, upstream)
    assert upstream.sni == "rebind.test"
    pins.forget("probe-1")
    after = server("10.0.0.5", 443, tls=True)
    pins.server_connect(probe, after)
    assert after.sni == "10.0.0.5"
