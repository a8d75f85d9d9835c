"""Scripted DNS for a process the tests launch (`PYTHONPATH` names this folder).

`SIMROUTE_TEST_DNS` is JSON: a name -> the addresses it resolves to, one answer per
lookup (the last one repeats): `{"a.test": ["127.0.0.1", "169.254.1.1"]}` answers
127.0.0.1 first and 169.254.1.1 from then on, as a rebinding DNS server would.
Other names resolve as usual. There is no network in the tests: this stands in for
a DNS server whose answers the test decides.
"""

import json
import os
import socket
import threading

_answers = json.loads(os.environ.get("SIMROUTE_TEST_DNS", "{}"))
_asked: dict[str, int] = {}
_lock = threading.Lock()
_getaddrinfo = socket.getaddrinfo


def _scripted(host, port, family=0, type=0, proto=0, flags=0):
    name = host.decode() if isinstance(host, bytes) else host
    name = (name or "").lower().rstrip(".")
    if name not in _answers:
        return _getaddrinfo(host, port, family, type, proto, flags)
    with _lock:
        turn = _asked[name] = _asked.get(name, 0) + 1
    answers = _answers[name]
    address = answers[min(turn, len(answers)) - 1]
    v6 = ":" in address
    sockaddr = (address, int(port or 0), 0, 0) if v6 else (address, int(port or 0))
    return [
        (
            socket.AF_INET6 if v6 else socket.AF_INET,
            type or socket.SOCK_STREAM,
            proto or socket.IPPROTO_TCP,
            "",
            sockaddr,
        )
    ]


if _answers:
    socket.getaddrinfo = _scripted
