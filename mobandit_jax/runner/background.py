"""Long calls into XLA (a compile, a program call) on daemon threads, waited for in short steps.

A Python signal handler runs in the main thread, between two Python steps: while the main thread is
inside one C++ call, such as XLA compiling a program (seconds to minutes) or computing a chunk, a
SIGINT or SIGTERM waits for the call to return. The run therefore makes these calls on daemon threads
(:func:`start`, :class:`Daemons`) and the main thread waits for them in steps of :data:`STEP_S`
(:func:`wait`), so that a signal's handler (``mobandit``'s, or Python's ``KeyboardInterrupt``) runs
within a step.

A call left behind by an interrupt goes on in its thread (in a notebook, the kernel carries on and
the result is dropped). The process must not finalize while one is in flight: the call, returning
into a finalizing interpreter, would abort it. So the first call registers an exit hook
(:func:`_at_exit`): where the process ends on an uncaught exception, calls still in flight end it at
once, with the status Python gives that exception (killed by SIGINT after a ``KeyboardInterrupt``, 1
otherwise); where it ends normally, the hook waits for them.
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

_sigint = threading.Event()  # a Ctrl-C seen in a keyboard_interrupts block


class _InFlight:
    """The calls running on daemon threads in this process, counted for the exit hook, which the first call
    registers (:func:`_at_exit`); one per process (:data:`_IN_FLIGHT`), as the threads and the hook are."""

    def __init__(self):
        self.changed = threading.Condition()  # guards the two below
        self.count = 0  # calls running or waiting for a slot
        self.hooked = False  # whether the exit hook is registered

    def started(self):
        with self.changed:
            self.count += 1
            if not self.hooked:
                atexit.register(_at_exit, self)
                self.hooked = True

    def ended(self):
        with self.changed:
            self.count -= 1
            self.changed.notify_all()

    def idle(self) -> bool:
        with self.changed:
            return not self.count

    def wait_idle(self):
        with self.changed:
            self.changed.wait_for(lambda: not self.count)


_IN_FLIGHT = _InFlight()


def _run(future: Future, fn, args, slots):
    try:
        with slots:
            future.set_result(fn(*args))
    except BaseException as err:  # noqa: BLE001 -- handed to the waiting thread
        future.set_exception(err)
    finally:
        _IN_FLIGHT.ended()


def _started(fn, args, slots) -> Future:
    future = Future()
    _IN_FLIGHT.started()
    threading.Thread(target=_run, args=(future, fn, args, slots), name="mobandit-call", daemon=True).start()
    return future


def _at_exit(in_flight: _InFlight):
    """The exit hook: no finalization while a call is in flight (see the module's docstring)."""
    if in_flight.idle():
        return
    last = getattr(sys, "last_value", None)  # the uncaught exception the interpreter is ending on
    if last is None:
        in_flight.wait_idle()
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if isinstance(last, KeyboardInterrupt):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(1)


def start(fn, *args) -> Future:
    """``fn(*args)`` on a new daemon thread; its future."""
    return _started(fn, args, contextlib.nullcontext())


class Daemons:
    """A pool of daemon threads: at most ``n`` of its calls run at a time (``submit``, as an executor's)."""

    def __init__(self, n: int):
        self._slots = threading.BoundedSemaphore(max(1, n))

    def submit(self, fn, *args) -> Future:
        return _started(fn, args, self._slots)


def wait(future: Future):
    """``future``'s result (or its exception), waited for in steps of :data:`STEP_S`: a signal delivered
    meanwhile has its handler run, and the exception it raises leaves the wait."""
    while True:
        if _sigint.is_set():  # a KeyboardInterrupt that Python dropped (see keyboard_interrupts)
            raise KeyboardInterrupt
        try:
            return future.result(timeout=STEP_S)
        except TimeoutError:
            continue


def _mark_and_raise(signum, frame):
    _sigint.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def keyboard_interrupts():
    """Where SIGINT has Python's own handler (in the main thread), a Ctrl-C in this block is also marked, so
    that the next :func:`wait` raises ``KeyboardInterrupt`` even where Python dropped the first one (raised
    inside a garbage-collector callback, it is printed as "Exception ignored" and lost)."""
    _sigint.clear()
    try:
        previous = signal.getsignal(signal.SIGINT)
        ours = previous is signal.default_int_handler and threading.current_thread() is threading.main_thread()
        if ours:
            signal.signal(signal.SIGINT, _mark_and_raise)
    except ValueError:
        ours = False
    try:
        yield
    finally:
        if ours:
            signal.signal(signal.SIGINT, previous)
        _sigint.clear()


def call(fn, *args):
    """``fn(*args)`` on a daemon thread, waited for (:func:`wait`)."""
    return wait(start(fn, *args))
