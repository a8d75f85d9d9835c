"""A persistent bash inside a container, driven over one `docker exec` socket.

One shell per sandbox keeps the working directory, the environment and
background jobs between commands. Each command travels base64-encoded and runs
through `eval` in that shell, so that a syntax error (an unclosed quote) fails
at once instead of swallowing what follows, and it reads /dev/null, so that a
command waiting for input cannot eat the next one. After it, the shell prints
an end line with a per-command nonce, the exit status and `$PWD`.

Blocking code: the sandbox runs it in a worker thread with a deadline and a
cancel flag it checks between reads.
"""

from __future__ import annotations

import base64
import re
import select
import socket
import struct
import threading
import time
import uuid
from dataclasses import dataclass

from backends.errors import BackendBroken
from backends.shell.screen import BoundedCapture

COMMAND_START_FILE = "/tmp/.simroute-command-start"
# The container's own cgroup as Docker mounts it inside: cgroup v2 (namespaced), v1.
PIDS_FOLDERS = ("/sys/fs/cgroup", "/sys/fs/cgroup/pids")
# The stream header docker uses on a non-TTY exec: stream id, 3 zero bytes, big-endian length.
_FRAME = struct.Struct(">BxxxL")
_BOOTSTRAP = (
    "exec 2>&1\n"
    # The command's start (container uptime) goes to a file with builtins only (no
    # fork): an interrupt then kills exactly the processes the command started.
    "__simroute_run() { read -r __simroute_up _ </proc/uptime; printf '%s' \"$__simroute_up\" 2>/dev/null >"
    + COMMAND_START_FILE
    + "; "
    'eval "$(printf \'%s\' "$1" | base64 -d)" </dev/null; printf \'\\n%s %s %s\\n\' "$2" "$?" "$PWD"; }\n'
)
_POLL_S = 0.05


@dataclass(frozen=True)
class ProcessUse:
    """A sandbox's pids cgroup: processes now, and forks refused by its limit so far."""

    current: int
    limit_hits: int | None  # None where pids.events is not readable

    @classmethod
    def parse(cls, text: str) -> ProcessUse | None:
        """From "current:hits" (either may read "none")."""
        current, _, hits = text.strip().partition(":")
        if not current.isdigit():
            return None
        return cls(int(current), int(hits) if hits.isdigit() else None)


class ShellGone(BackendBroken):
    """The shell process ended (exit, kill, the container stopped). Raised by
    `BashStream`; `DockerShell` opens a new shell, or replaces the container."""


@dataclass(slots=True)
class RawOutcome:
    capture: BoundedCapture
    exit_code: int | None
    cwd: str | None
    timed_out: bool = False
    cancelled: bool = False
    shell_ended: bool = False


class BashStream:
    def __init__(self, sock: socket.socket, closer: object, *, head_bytes: int, tail_bytes: int) -> None:
        self.sock = sock
        self._closer = closer  # the SocketIO docker-py returned; closing it releases the HTTP response
        self.head_bytes, self.tail_bytes = head_bytes, tail_bytes
        self._pending = b""  # demultiplexed bytes read past the last end line
        self._frame_buffer = b""
        self.pid: int | None = None
        self.alive = True
        self.last_nonce = ""
        self.last_started = 0.0  # monotonic start of the latest command

    def bootstrap(self, deadline_s: float) -> None:
        """Install the runner function and learn the shell's pid (to interrupt its children)."""
        self._send(_BOOTSTRAP.encode())
        outcome = self.run("echo $$", deadline_s=deadline_s)
        if outcome.shell_ended or outcome.timed_out or outcome.exit_code != 0:
            raise ShellGone("the sandbox shell did not start")
        self.pid = int(outcome.capture.text()[0].strip())

    def run(self, command: str, *, deadline_s: float, cancel: threading.Event | None = None) -> RawOutcome:
        nonce = self.last_nonce = f"__simroute_end_{uuid.uuid4().hex}__"
        self.last_started = time.monotonic()
        encoded = base64.b64encode(command.encode()).decode()
        capture = BoundedCapture(head=self.head_bytes, tail=self.tail_bytes)
        try:
            self._send(f"__simroute_run {encoded} {nonce}\n".encode())
        except OSError:
            self.alive = False
            return RawOutcome(capture, None, None, shell_ended=True)
        return self.read_until_end(nonce, capture, deadline=time.monotonic() + deadline_s, cancel=cancel)

    def read_until_end(
        self, nonce: str, capture: BoundedCapture, *, deadline: float, cancel: threading.Event | None = None
    ) -> RawOutcome:
        end = re.compile(rb"\n" + nonce.encode() + rb" (-?\d+) ([^\n]*)\n")
        window = b""  # the unflushed tail, long enough to hold an end line split across reads
        keep = len(nonce) + 4200  # nonce + status + a long PWD
        data = self._pending
        self._pending = b""
        while True:
            if data:
                window += data
                match = end.search(window)
                if match:
                    capture.feed(window[: match.start()])
                    self._pending = window[match.end() :]
                    cwd = match.group(2).decode("utf-8", "replace")
                    return RawOutcome(capture, int(match.group(1)), cwd)
                if len(window) > keep:
                    capture.feed(window[:-keep])
                    window = window[-keep:]
            if cancel is not None and cancel.is_set():
                capture.feed(window)
                return RawOutcome(capture, None, None, cancelled=True)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                capture.feed(window)
                return RawOutcome(capture, None, None, timed_out=True)
            try:
                data = self._recv(min(remaining, _POLL_S))
            except ShellGone:
                self.alive = False
                capture.feed(window)
                return RawOutcome(capture, None, None, shell_ended=True)

    def count_processes(self, deadline_s: float) -> ProcessUse | None:
        """The sandbox's process count and how often a fork hit its limit, from its
        own cgroup as the container sees it (cgroup v2 or v1, any engine set-up),
        read with shell builtins only: no fork, so it answers even while a fork bomb
        holds every pid. None when the container cannot see its cgroup. Only
        between commands (the shell idle)."""
        nonce = f"__simroute_pids_{uuid.uuid4().hex}__"
        reads = " || ".join(
            f"{{ read -r __simroute_n <{folder}/pids.current && read -r _ __simroute_h <{folder}/pids.events; }}"
            for folder in PIDS_FOLDERS
        )
        probe = (
            f"{{ {reads}; }} 2>/dev/null; "
            f'printf \'\\n%s 0 %s:%s\\n\' {nonce} "${{__simroute_n:-none}}" "${{__simroute_h:-none}}"; '
            "unset __simroute_n __simroute_h\n"
        )
        try:
            self._send(probe.encode())
        except OSError:
            self.alive = False
            return None
        capture = BoundedCapture(head=self.head_bytes, tail=self.tail_bytes)
        raw = self.read_until_end(nonce, capture, deadline=time.monotonic() + deadline_s)
        # Output a background job wrote meanwhile belongs on the next command's screen.
        self._pending = capture.kept() + self._pending
        if raw.exit_code is None:
            # No answer from builtins alone: this shell is unusable (its stream is out of step).
            self.alive = False
            return None
        return ProcessUse.parse(raw.cwd or "")  # the end line's last field carries the counts here

    def _send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _recv(self, timeout_s: float) -> bytes:
        """Demultiplexed output bytes available within `timeout_s` (maybe none)."""
        readable, _, _ = select.select([self.sock], [], [], timeout_s)
        if readable:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ShellGone("the shell's output stream closed")
            self._frame_buffer += chunk
        out = bytearray()
        while len(self._frame_buffer) >= _FRAME.size:
            _, length = _FRAME.unpack_from(self._frame_buffer)
            if len(self._frame_buffer) < _FRAME.size + length:
                break
            out += self._frame_buffer[_FRAME.size : _FRAME.size + length]
            self._frame_buffer = self._frame_buffer[_FRAME.size + length :]
        return bytes(out)

    def close(self) -> None:
        self.alive = False
        close_exec_socket(self._closer)


def close_exec_socket(wrapper: object) -> None:
    """Close what docker-py's `exec_start(socket=True)` returned, response first
    (closing the socket first makes the response's own close fail at collection)."""
    response = getattr(wrapper, "_response", None)
    for closing in (getattr(response, "close", None), getattr(wrapper, "close", None)):
        if closing is not None:
            try:
                closing()
            except (OSError, ValueError):  # already closed
                pass
