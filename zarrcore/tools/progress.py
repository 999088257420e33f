"""Progress lines for long jobs, and the bounded parallel loop they watch.

A progress line shows the share done, bytes done of the total with throughput and ETA, and
chunks done of the total, redrawn in place on stderr. It is drawn only on a terminal:
`progress=None` means "when stderr is a terminal", True forces it and False turns it off
(the command line's -q/--quiet).
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Iterable
from types import TracebackType

from ..nodes.info import format_bytes

__all__ = ["Progress", "counted", "object_word", "parse_bytes"]

# Seconds between redraws: often enough to look live, rarely enough to cost nothing.
_REDRAW_SECONDS = 0.2


def parse_bytes(text: str | float) -> int:
    """A size such as 1GiB, 512MiB, 2G, 1e9 or an int, in bytes."""
    if isinstance(text, (int, float)):
        return int(text)
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    s = str(text).strip().lower().removesuffix("b").removesuffix("i")
    scale = units.get(s[-1:], 1)
    if s[-1:] in units:
        s = s[:-1]
    try:
        value = float(s) * scale
    except ValueError:
        raise ValueError(f"not a size: {text!r} (say 1GiB, 512MiB or a number of bytes)") from None
    if value <= 0:
        raise ValueError(f"size must be positive, got {text!r}")
    return int(value)


def counted(n: int, noun: str) -> str:
    """`n` and the noun, plural unless `n` is 1: "1 object", "2 objects"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def object_word(sharded: Iterable[bool]) -> str:
    """What a progress line counts, given whether each array is sharded: "shards", "chunks",
    or "objects" when there are both (and when there are none)."""
    kinds = set(sharded)
    return "shards" if kinds == {True} else "chunks" if kinds == {False} else "objects"


def _clock(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


class Progress:
    """Bytes and chunks done of a job, drawn as one line on stderr; a no-op unless enabled."""

    def __init__(
        self,
        total_bytes: int,
        total_chunks: int,
        desc: str,
        enabled: bool | None = None,
        chunk_word: str = "chunks",
    ) -> None:
        self._out = sys.stderr
        self.enabled = self._out.isatty() if enabled is None else bool(enabled)
        self._total, self._chunks_total = total_bytes, total_chunks
        self._desc, self._word = desc, chunk_word
        self._bytes = self._chunks = 0
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._drawn = -math.inf  # when the line was last drawn
        self._width = 0  # of the line drawn last, to blank what a shorter one leaves
        if self.enabled:
            self._draw(self._start)

    def line(self, now: float) -> str:
        """The progress line at time `now` (time.monotonic())."""
        elapsed = max(now - self._start, 1e-9)
        rate = self._bytes / elapsed
        done = self._bytes / self._total if self._total else 1.0
        eta = (self._total - self._bytes) / rate if rate else math.inf
        return (
            f"{self._desc}: {100 * done:3.0f}% {format_bytes(self._bytes)}/"
            f"{format_bytes(self._total)} [{_clock(elapsed)}<{_clock(eta)}, "
            f"{format_bytes(int(rate))}/s] {self._chunks}/{self._chunks_total} {self._word}"
        )

    def _draw(self, now: float, end: str = "") -> None:
        text = self.line(now)
        self._out.write("\r" + text.ljust(self._width) + end)
        self._out.flush()
        self._width, self._drawn = len(text), now

    def update(self, nbytes: int, chunks: int = 1) -> None:
        with self._lock:
            self._bytes += nbytes
            self._chunks += chunks
            now = time.monotonic()
            if self.enabled and now - self._drawn >= _REDRAW_SECONDS:
                self._draw(now)

    def close(self) -> None:
        with self._lock:
            if self.enabled:
                self._draw(time.monotonic(), end="\n")
                self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
