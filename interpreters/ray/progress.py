"""The progress display of :func:`interpreters.ray.run_many` and :func:`interpreters.ray.replay_many`."""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["Progress"]


class Progress:
    """A progress display on stderr: a rich bar on a terminal (when rich is installed), else a
    plain ``label: n/total done`` line at most once a second and at the end."""

    def __init__(self, label: str, total: int | None, enabled: bool) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.failed = 0
        self.suspended = 0
        self.enabled = enabled
        self.last = 0.0
        self.rich: Any = None
        self.task: Any = None
        if enabled and sys.stderr.isatty():
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
                from rich.progress import Progress as RichProgress
            except ImportError:
                pass
            else:
                self.rich = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[failed]} failed{task.fields[suspended]}"),
                                     TimeElapsedColumn(),
                                     console=Console(stderr=True), transient=False)
                self.rich.start()
                self.task = self.rich.add_task(label, total=total, failed=0, suspended="")

    def advance(self, ok: bool, suspended: bool = False) -> None:
        """One more done: ``ok``, suspended (counted apart, not as failed), or failed."""
        self.done += 1
        if suspended:
            self.suspended += 1
        elif not ok:
            self.failed += 1
        if not self.enabled:
            return
        if self.rich is not None:
            self.rich.update(self.task, advance=1, failed=self.failed, suspended=self._suspended_text())
            return
        now = time.monotonic()
        if now - self.last >= 1.0:
            self.last = now
            self._line()

    def _suspended_text(self) -> str:
        return f", {self.suspended} suspended" if self.suspended else ""

    def _line(self) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        print(f"{self.label}: {self.done}{of} done, {self.failed} failed{self._suspended_text()}", file=sys.stderr,
              flush=True)

    def close(self) -> None:
        if not self.enabled:
            return
        if self.rich is not None:
            self.rich.stop()
            self.rich = None
        elif self.done != 0 or self.total == 0:
            self._line()
        self.enabled = False
