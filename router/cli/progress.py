"""A progress bar on the terminal only: a pipe or a log gets none (rich's bars would
write control sequences into it)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


class TerminalProgress:
    """`with TerminalProgress("exporting", total) as advance: advance(n)`."""

    def __init__(self, label: str, total: int, *, eta: bool = False) -> None:
        self.label = label
        self.total = total
        self.eta = eta
        self._bar: Any = None

    def __enter__(self) -> Callable[[int], None]:
        if not sys.stderr.isatty():
            return lambda n: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        columns = [BarColumn(), MofNCompleteColumn(), *([TimeRemainingColumn()] if self.eta else [])]
        self._bar = Progress(self.label, *columns, transient=True)
        self._bar.start()
        task = self._bar.add_task(self.label, total=self.total)
        return lambda n: self._bar.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
