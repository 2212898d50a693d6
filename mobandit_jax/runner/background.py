"""Long calls into XLA (a compile, a program call) on daemon threads, waited for in short steps.

A Python signal handler runs in the main thread, between two Python steps: while the main thread is
inside one C++ call, such as XLA compiling a program (seconds to minutes) or computing a chunk, a
SIGINT or SIGTERM waits for the call to return. The run therefore makes these calls on daemon threads
(:func:`start`, :class:`Daemons`) and the main thread waits for them in steps of :data:`STEP_S`
(:func:`wait`), so that a signal's handler (``mobandit``'s, or Python's ``KeyboardInterrupt``) runs
within a step.

A call left behind by an interrupt goes on in its thread (in a notebook, the kernel carries on and
the result is dropped). The process must not finalize while one is in flight: the call, returning
into a finalizing interpreter, would abort it. So every call registers an exit hook, once a process
(:func:`_at_exit`): where the process ends on an uncaught exception, calls still in flight end it at
once, with the status Python gives that exception (killed by SIGINT after a ``KeyboardInterrupt``, 1
otherwise); where it ends normally, the hook waits for them.

The module keeps no state of its own: the calls in flight are the live threads that run them, and a
Ctrl-C seen in a :func:`keyboard_interrupts` block is marked on the SIGINT handler that block installs,
which lives as long as the block.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from concurrent.futures import Future

STEP_S = 0.1  # the longest the main thread waits before it runs a signal's handler


class _Call(threading.Thread):
    """``fn(*args)`` on a daemon thread, once one of ``slots`` is free; its result or exception goes to
    ``future``. While the thread lives the call is in flight (:func:`_in_flight`)."""

    def __init__(self, future: Future, fn, args, slots):
        super().__init__(name="mobandit-call", daemon=True)
        self._work = (future, fn, args, slots)

    def run(self):
        future, fn, args, slots = self._work
        try:
            with slots:
                future.set_result(fn(*args))
        except BaseException as err:  # noqa: BLE001 -- handed to the waiting thread
            future.set_exception(err)


def _in_flight() -> list:
    """The calls of this process still running or waiting for a slot."""
    return [thread for thread in threading.enumerate() if isinstance(thread, _Call)]


def _started(fn, args, slots) -> Future:
    future = Future()
    atexit.unregister(_at_exit)  # registered once, however many calls
    atexit.register(_at_exit)
    _Call(future, fn, args, slots).start()
    return future


def _at_exit():
    """The exit hook: no finalization while a call is in flight (see the module's docstring)."""
    calls = _in_flight()
    if not calls:
        return
    last = getattr(sys, "last_value", None)  # the uncaught exception the interpreter is ending on
    if last is None:
        while calls:
            for call in calls:
                call.join()
            calls = _in_flight()
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if isinstance(last, KeyboardInterrupt):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(1)


def start(fn, *args) -> Future:
    """Start ``fn(*args)`` on a new daemon thread.

    Args:
      fn: the function to call.
      *args: its positional arguments.

    Returns:
      The call's future.
    """
    return _started(fn, args, contextlib.nullcontext())


class Daemons:
    """A pool of daemon threads: at most ``n`` of its calls run at a time (``submit``, as an executor's).

    Args:
      n: the most calls running at a time (at least 1).
    """

    def __init__(self, n: int):
        self._slots = threading.BoundedSemaphore(max(1, n))

    def submit(self, fn, *args) -> Future:
        """Start ``fn(*args)`` on a daemon thread of its own once fewer than ``n`` of the pool's calls run.

        Args:
          fn: the function to call.
          *args: its positional arguments.

        Returns:
          The call's future.
        """
        return _started(fn, args, self._slots)


def wait(future: Future):
    """``future``'s result, waited for in steps of :data:`STEP_S`: a signal delivered meanwhile has its
    handler run, and the exception it raises leaves the wait.

    Args:
      future: the future of a call (:func:`start`, :meth:`Daemons.submit`).

    Returns:
      The call's result; its exception is raised, and so is ``KeyboardInterrupt`` after a Ctrl-C in a
      :func:`keyboard_interrupts` block.
    """
    while True:
        if _ctrl_c_marked():  # a KeyboardInterrupt that Python dropped (see keyboard_interrupts)
            raise KeyboardInterrupt
        try:
            return future.result(timeout=STEP_S)
        except TimeoutError:
            continue


class _MarkingHandler:
    """SIGINT's handler in a :func:`keyboard_interrupts` block: Python's own (raise ``KeyboardInterrupt``),
    which also marks that it ran."""

    def __init__(self):
        self.marked = False

    def __call__(self, signum, frame):
        self.marked = True
        raise KeyboardInterrupt


def _ctrl_c_marked() -> bool:
    """Whether a Ctrl-C was seen in the :func:`keyboard_interrupts` block in force (its handler is SIGINT's)."""
    handler = signal.getsignal(signal.SIGINT)
    return isinstance(handler, _MarkingHandler) and handler.marked


@contextlib.contextmanager
def keyboard_interrupts():
    """A block where a Ctrl-C is also marked, so that the next :func:`wait` raises ``KeyboardInterrupt`` even
    where Python dropped the first one (raised inside a garbage-collector callback, it is printed as
    "Exception ignored" and lost). Only where SIGINT has Python's own handler, in the main thread; elsewhere
    the block changes nothing.

    Returns:
      The context manager; SIGINT's handler is restored when the block ends.
    """
    try:
        previous = signal.getsignal(signal.SIGINT)
        ours = previous is signal.default_int_handler and threading.current_thread() is threading.main_thread()
        if ours:
            signal.signal(signal.SIGINT, _MarkingHandler())
    except ValueError:
        ours = False
    try:
        yield
    finally:
        if ours:
            signal.signal(signal.SIGINT, previous)


def call(fn, *args):
    """``fn(*args)`` on a daemon thread, waited for (:func:`wait`).

    Args:
      fn: the function to call.
      *args: its positional arguments.

    Returns:
      What ``fn`` returns (its exception is raised).
    """
    return wait(start(fn, *args))
