"""What an upstream server starts with, and whether it can start (`simroute check-config`)."""

import sys

from backends.mcp.check import command_problem, start_problem
from backends.mcp.servers import RemoteServer, StdioServer
from backends.mcp.upstream import stdio_env

TLS = {
    "SSL_CERT_FILE": "/etc/corp/ca.pem",
    "REQUESTS_CA_BUNDLE": "/etc/corp/ca.pem",
    "HTTPS_PROXY": "http://proxy:3128",
    "no_proxy": "localhost",
}


def test_a_stdio_server_inherits_what_tls_and_proxies_need():
    environ = {**TLS, "AWS_SECRET_ACCESS_KEY": "never passed", "PATH": "/usr/bin"}
    assert stdio_env(StdioServer(command="srv"), environ) == TLS


def test_the_servers_own_env_wins():
    spec = StdioServer(command="srv", env={"SSL_CERT_FILE": "/srv/ca.pem", "TOKEN": "t"})
    assert stdio_env(spec, TLS) == {**TLS, "SSL_CERT_FILE": "/srv/ca.pem", "TOKEN": "t"}
    assert stdio_env(StdioServer(command="srv"), {}) is None  # the SDK's safe defaults alone


def test_a_command_not_on_the_path_it_runs_with_is_named():
    missing = command_problem(StdioServer(command="uvx-not-installed"), {"PATH": "/usr/bin:/bin"})
    assert missing is not None and "'uvx-not-installed' not found on PATH (/usr/bin:/bin)" in missing
    assert command_problem(StdioServer(command="sh"), {"PATH": "/usr/bin:/bin"}) is None
    # Its own PATH.
    assert command_problem(StdioServer(command="sh", env={"PATH": "/nowhere"}), {"PATH": "/usr/bin:/bin"}) is not None
    assert (
        command_problem(StdioServer(command=sys.executable, cwd="/no/such/folder"))
        == "cwd '/no/such/folder' is not a folder"
    )
    assert command_problem(RemoteServer(url="http://127.0.0.1:9/mcp")) is None  # known only once started


async def test_a_server_that_exits_at_start_is_named_with_its_cause():
    problem, tools = await start_problem("broken", StdioServer(command="/bin/false"), timeout_s=10)
    assert problem is not None and problem.startswith("upstream 'broken' failed to start") and tools == 0
