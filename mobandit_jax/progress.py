"""Progress that suits where it goes: the one reporter of runs (``mobandit run``) and studies (``study.optimize``).

- On a terminal: a live bar (tqdm), redrawn in place.
- Anywhere else (a log file, a pipe, a batch job's output): a plain line at most every :data:`EVERY` seconds, the
  first once :data:`EVERY` seconds of work have passed, and one closing line; never a carriage return.
- Disabled (``--quiet``, ``progress=False``): nothing at all.

Use it as a context manager (or call :meth:`Progress.close`)::

    with Progress(total=len(items), desc="study", unit="eval", enabled=progress) as bar:
        for item in items:
            ...
            bar.update()

Notes (one-off lines such as "compiling 2 programs") go through :func:`note`, which leaves a live bar intact.
"""
from __future__ import annotations

import os
import sys
import time

EVERY = 5.0  # seconds between two progress lines where the stream is not a terminal


def note(text: str, file=None):
    """Write ``text`` as one line on ``file`` (default stderr), leaving a live bar intact.

    Args:
      text: the line, without its newline.
      file: the stream (default ``sys.stderr`` at the time of the call).
    """
    from tqdm import tqdm

    tqdm.write(text, file=sys.stderr if file is None else file)


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


class Progress:
    """A progress reporter (module docstring).

    Args:
      total: the count at which the work is done, or None where it is not known.
      desc: what is counted, shown first (``"study"``).
      unit: the name of one count (``"eval"``).
      enabled: False shows nothing (``--quiet``, ``progress=False``).
      initial: counts already done before this reporter starts (a resumed run); not part of the rate.
      live: a live bar (True) or plain lines (False); default: whether ``file`` is a terminal.
      every: the least number of seconds between two plain lines.
      file: the stream (default ``sys.stderr`` at construction).
    """

    def __init__(self, total: int | None = None, desc: str = "", unit: str = "it", enabled: bool = True, *,
                 initial: int = 0, live: bool | None = None, every: float = EVERY, file=None):
        self.total, self.desc, self.unit, self.enabled = total, desc, unit, enabled
        self.n = self._initial = self._shown = int(initial)
        self.file = sys.stderr if file is None else file
        self.live = enabled and (_isatty(self.file) if live is None else live)
        self.every, self._t0 = float(every), time.monotonic()
        self._last, self._bar = self._t0, None
        if self.live:
            from tqdm import tqdm

            left = "{desc}: " if desc else ""
            fmt = (left + "{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}]"
                   if total else left + "{n_fmt} {unit} [{elapsed}, {rate_fmt}]")
            sized = min(_size(self.file)) > 0  # a terminal that reports no size gets 80 x 24, not an empty bar
            self._bar = tqdm(total=total, initial=self.n, desc=desc, unit=unit, file=self.file, bar_format=fmt,
                             dynamic_ncols=sized, ncols=None if sized else 80, nrows=None if sized else 24)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n: int = 1):
        """Count ``n`` more (a plain line if :attr:`every` seconds passed since the last one)."""
        self.n += int(n)
        if self._bar is not None:
            self._bar.update(n)
        elif self.enabled and n and time.monotonic() - self._last >= self.every:
            self._line()

    def set_description(self, desc: str):
        """Show ``desc`` first from now on."""
        self.desc = desc
        if self._bar is not None:
            self._bar.set_description_str(f"{desc}: " if desc else "")

    def note(self, text: str):
        """A line of its own (nothing when disabled), leaving a live bar intact."""
        if self.enabled:
            note(text, self.file)

    def close(self):
        """End the bar, or write the closing plain line if the count moved since the last line."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.enabled and self.n != self._shown:
            self._line()
        self.enabled = False

    def line(self) -> str:
        """The plain line of the count now: ``study: 40/100 eval (40%), 12 s so far, about 18 s left``."""
        wall = time.monotonic() - self._t0
        head = f"{self.desc}: " if self.desc else ""
        done = self.n - self._initial
        if not self.total:
            rate = f", {done / wall:.3g} {self.unit}/s" if wall > 0 and done else ""
            return f"{head}{self.n} {self.unit}, {_seconds(wall)} so far{rate}"
        text = f"{head}{self.n}/{self.total} {self.unit} ({100 * self.n / self.total:.0f}%), {_seconds(wall)} so far"
        if done > 0 and self.n < self.total:
            text += f", about {_seconds(wall * (self.total - self.n) / done)} left"
        return text

    def _line(self):
        note(self.line(), self.file)
        self._last, self._shown = time.monotonic(), self.n


def _isatty(file) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):
        return False


def _size(file) -> tuple:
    """``(columns, lines)`` of the terminal ``file`` writes to (zeros if it reports none)."""
    try:
        return tuple(os.get_terminal_size(file.fileno()))
    except (OSError, ValueError, AttributeError):
        return 0, 0
