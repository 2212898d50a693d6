"""SIGINT and SIGTERM during ``mobandit run`` and ``mobandit reproduce``: one line, exit 128 + the signal.

In an :class:`Interrupts` block both signals raise :class:`Stopped` in the main thread, at once: the
long XLA calls (compiles, program calls) run on daemon threads that the main thread waits for in short
steps (:mod:`mobandit_jax.runner.background`). The run leaves its blocks (the chunks already computed
are written, worker processes stopped), the command says its one line (:meth:`Interrupts.say`) and
exits with 130 (SIGINT) or 143 (SIGTERM). Should the main thread not have said it :data:`GRACE_S`
seconds after the signal (stuck in a C call), a timer thread says it and ends the process: every chunk
on disk is whole (each is written atomically), a chunk in the middle of its write is lost.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_S = 1.5  # after a signal, the time the main thread has to stop and say the line itself


class Stopped(BaseException):
    """SIGINT or SIGTERM received in an :class:`Interrupts` block."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Interrupts:
    """SIGINT and SIGTERM raise :class:`Stopped` in this block (entered in the main thread).

    Args:
      line: ``line() -> str``, the one line an interrupt ends with (:meth:`say`).
      after_bar: print it on a line of its own, below a progress bar.
    """

    def __init__(self, line, after_bar: bool = False):
        self.line, self._timer, self._said = line, None, threading.Lock()
        self._prefix = "\n" if after_bar else ""  # the line starts below a progress bar

    def __enter__(self):
        self._previous = {s: signal.signal(s, self._stop) for s in SIGNALS}
        return self

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        if self._timer is not None:
            self._timer.cancel()
        return False

    def _stop(self, signum, frame):
        if self._timer is not None:  # a second signal: the run is stopping already
            return
        self._timer = threading.Timer(GRACE_S, self._end, (signum,))  # the main thread has GRACE_S to stop
        self._timer.daemon = True
        self._timer.start()
        raise Stopped(signum)

    def call(self, fn):
        """``fn()`` in this block; where a signal stops it, the line is said.

        Args:
          fn: the command's work, ``fn() -> exit code``.

        Returns:
          What ``fn`` returns, or ``128 + signum`` where a signal stopped it.
        """
        with self:
            try:
                return fn()
            except Stopped as stopped:
                self.say()
                return 128 + stopped.signum

    def say(self) -> bool:
        """Print the line on stderr, unless it has been said already (by the main thread or the timer).

        Returns:
          Whether this call said it.
        """
        if not self._said.acquire(blocking=False):
            return False
        print(self._prefix + self.line(), file=sys.stderr, flush=True)
        return True

    def _end(self, signum: int):
        """The timer: the main thread is still busy; say the line and end the process now."""
        if self.say():
            os._exit(128 + signum)
