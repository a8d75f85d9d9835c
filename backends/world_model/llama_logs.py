"""llama.cpp's own log lines, through Python logging instead of straight to stderr.

llama-cpp-python prints what llama.cpp logs at its error level to stderr even with
`verbose=False`, and llama.cpp logs routine events there ("decode: removing memory
module entries for seq_id = 0, …" whenever a cached context is reused). In front of an
agent those lines land in the user's terminal. Routed to the `simroute.llama_cpp`
logger at DEBUG, they show with `--verbose` and stay out otherwise.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any

log = logging.getLogger("simroute.llama_cpp")
_installed: Any = None  # the ctypes callback: kept referenced, llama.cpp calls it later


def route_llama_logs() -> None:
    """Install the callback once per process (llama.cpp's logger is global)."""
    global _installed
    if _installed is not None:
        return
    import llama_cpp

    @llama_cpp.llama_log_callback
    def to_logging(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s", text.decode("utf-8", errors="replace").rstrip("\n"))

    llama_cpp.llama_log_set(to_logging, ctypes.c_void_p(0))
    _installed = to_logging
