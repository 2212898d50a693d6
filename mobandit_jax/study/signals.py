"""Ctrl-C while a study's loop runs (:mod:`.optimize`): the first stops asking, a second interrupts at once.

The handler is installed only in the main thread (Python delivers signals there) and only while the loop runs; the
handler found before is put back when the loop ends, or at the first Ctrl-C, so that a second one reaches it.
"""
from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def first_ctrl_c_stops(stop: threading.Event):
    """Within the block, a first Ctrl-C sets ``stop`` and restores the previous handler (a second interrupts).

    Args:
      stop: the event the loop watches.

    Returns:
      A context manager; outside the main thread it changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def first_ctrl_c(signum, frame):
        stop.set()
        signal.signal(signal.SIGINT, previous)

    previous = signal.signal(signal.SIGINT, first_ctrl_c)
    previous = signal.SIG_DFL if previous is None else previous
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is first_ctrl_c:
            signal.signal(signal.SIGINT, previous)
