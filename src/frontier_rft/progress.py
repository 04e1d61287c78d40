"""One progress bar for every layer (CLI, trainers, inference, featurizers): tqdm, imported lazily.

On a terminal it is tqdm's redrawn bar. Anywhere else (a pipe, `nohup`, a SLURM log) tqdm
would write carriage-return redraws that a log shows as one garbled line at the end; here
each refresh becomes its own line instead, at most every `FRONTIER_PROGRESS_SECONDS`
(default 10 s), plus the first and the last, so a log file reads:

    runs:   0%|          | 0/60 [00:00<?, ?run/s]
    runs:  40%|####      | 24/60 [00:10<00:15, 2.38run/s, bots seed 3]
    runs: 100%|##########| 60/60 [00:24<00:00, 2.45run/s]

No module of the numpy core imports this; tqdm is a dependency of the package, and is
imported only when a bar is made.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, TextIO

__all__ = ["INTERVAL_ENV", "progress_bar"]

INTERVAL_ENV = "FRONTIER_PROGRESS_SECONDS"
"""Environment variable: seconds between progress lines when not on a terminal."""
_DEFAULT_LOG_INTERVAL = 10.0


_TIMING = re.compile(r"\[[^\]]*?<[^,\]]*(?:, [^,\]]*)?")
"""The elapsed<remaining, rate part of a tqdm status line (a postfix after it is kept)."""


class _LineWriter:
    """A file for tqdm that turns each in-place redraw (`\\r` + status) into one line, and
    drops a redraw that repeats the line before it but for its timing (close() redraws the
    last state; an explicit refresh after an update redraws the same one)."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self._last = ""

    def write(self, text: str) -> None:
        line = text.replace("\r", "").rstrip()  # tqdm pads a redraw with spaces
        key = _TIMING.sub("[", line)
        if line and key != self._last:
            self._last = key
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


def _log_interval() -> float:
    raw = os.environ.get(INTERVAL_ENV, "")
    try:
        value = float(raw) if raw else _DEFAULT_LOG_INTERVAL
    except ValueError:
        return _DEFAULT_LOG_INTERVAL
    return value if value >= 0 else _DEFAULT_LOG_INTERVAL


def progress_bar(
    total: int,
    desc: str,
    *,
    unit: str = "it",
    enabled: bool = True,
    stream: TextIO | None = None,
    initial: int = 0,
    leave: bool = True,
) -> Any:
    """A tqdm bar on `stream` (default stderr): `bar.update(n)`, `bar.set_postfix_str(s)`,
    `bar.close()` or `with progress_bar(...) as bar:`. `enabled=False` gives a silent bar
    with the same methods; `leave=False` clears a terminal's bar when it closes (a bar
    inside longer work); a log still gets its last line."""
    from tqdm.auto import tqdm

    out = sys.stderr if stream is None else stream
    tty = bool(getattr(out, "isatty", lambda: False)())
    return tqdm(
        total=max(int(total), 0),
        initial=initial,
        desc=desc,
        unit=unit,
        disable=not enabled,  # tqdm's own default (None) would hide it off a terminal
        file=out if tty else _LineWriter(out),
        mininterval=0.1 if tty else _log_interval(),
        dynamic_ncols=tty,
        ascii=not tty,
        leave=leave or not tty,  # a log keeps its last line: where the work ended
    )
