"""A dependency-free progress bar on stderr (redrawn in place on a terminal, lines otherwise)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO


class Progress:
    """`with Progress(total, "label") as bar: bar.advance()`; prints rate and ETA."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, width: int = 28):
        self.total = max(int(total), 1)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.done = 0
        self._start = time.perf_counter()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_draw = 0.0

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done = min(self.done + n, self.total)
        now = time.perf_counter()
        if self._tty and (now - self._last_draw > 0.1 or self.done == self.total):
            self._draw(note)
            self._last_draw = now

    def _draw(self, note: str = "") -> None:
        frac = self.done / self.total
        filled = int(frac * self.width)
        elapsed = time.perf_counter() - self._start
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"{self.label:<14} [{bar}] {self.done}/{self.total} {elapsed:5.1f}s eta {eta:4.1f}s"
        end = "\r" if self._tty and self.done < self.total else "\n"
        self.stream.write(line + (f" {note}" if note else "") + end)
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and (not self._tty or self.done < self.total):
            self.done = self.total
            self._draw()
