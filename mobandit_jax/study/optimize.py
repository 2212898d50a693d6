"""``Study.optimize``: the ask / evaluate / tell loop on any :class:`concurrent.futures.Executor`.

The loop keeps up to ``workers`` evaluations in flight on the executor (a thread pool of its own by default; a
``ProcessPoolExecutor``, a Dask ``Client.get_executor()``, or any other executor otherwise): it asks for as many
tickets as there is room, submits ``evaluate(ticket)``, and tells each result as it returns. It stops when the study
hands out nothing and nothing is running (finished, budget spent), after ``max_evals`` tells, at ``timeout``, or on
Ctrl-C:

- an evaluation that raises fails its ticket (retry: its arm may be asked again) and is reported on stderr in one line;
- at ``timeout`` the loop returns at once: the evaluations still running are failed (retry) and their late results
  ignored, so no ticket is left pending;
- Ctrl-C stops asking; what is running returns and is told (a second Ctrl-C interrupts at once).

The evaluations run on the executor; the study is only read and written by the calling thread, so a process or Dask
worker needs only ``evaluate`` and the :class:`~.study.Ticket` it is given (both picklable for a process pool). Give
a process pool the ``"spawn"`` or ``"forkserver"`` context (``ProcessPoolExecutor(n,
mp_context=multiprocessing.get_context("spawn"))``): JAX's threads do not survive a ``fork`` of the process that runs
the study.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from ..progress import Progress
from .errors import StudyError
from .signals import first_ctrl_c_stops

POLL_S = 0.1  # the longest the loop waits for a result before it looks at Ctrl-C and the clock again


def optimize(study, evaluate, *, workers: int | None = None, executor=None, timeout: float | None = None,
             max_evals: int | None = None, progress: bool = True) -> list:
    """Run ``study``'s ask / evaluate / tell loop (module docstring).

    Args:
      study: the :class:`~.study.Study`.
      evaluate: ``evaluate(ticket) -> values`` or ``-> (values, cost)``.
      workers: evaluations in flight at once (default: 1 on the loop's own thread pool; with an ``executor``, its
        ``_max_workers`` where it has one, as the standard library's pools do, else the number of CPUs).
      executor: a :class:`concurrent.futures.Executor` to run ``evaluate`` on (left running when the loop returns).
      timeout: seconds after which the loop returns; evaluations still running are failed (retry).
      max_evals: the most evaluations to tell in this call.
      progress: report progress (:class:`~mobandit_jax.progress.Progress`: a live bar on a terminal, a plain line
        at most every few seconds elsewhere).

    Returns:
      The list of ``(ticket, exception)`` of the evaluations that raised or outlived ``timeout``.
    """
    width = _width(workers, executor)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not math.isfinite(timeout) or timeout <= 0):
        raise StudyError(f"timeout = {timeout!r} must be a number of seconds > 0")
    if max_evals is not None and (isinstance(max_evals, bool) or not isinstance(max_evals, int) or max_evals < 0):
        raise StudyError(f"max_evals = {max_evals!r} must be a whole number >= 0")
    deadline = None if timeout is None else time.monotonic() + timeout
    pool = ThreadPoolExecutor(width) if executor is None else executor
    bar = Progress(total=max_evals, desc="study", unit="eval", enabled=progress)
    stop = threading.Event()
    errors, running = [], {}
    try:
        with first_ctrl_c_stops(stop):
            _loop(study, evaluate, pool, width, deadline, max_evals, stop, running, errors, bar)
        for fut, ticket in running.items():  # outlived the timeout
            fut.cancel()
            _report(study, ticket, TimeoutError(f"still running at timeout = {timeout:g} s"), errors)
    finally:
        if executor is None:
            pool.shutdown(wait=False, cancel_futures=True)
        bar.close()
    if stop.is_set():
        print("study: stopped (Ctrl-C); what returned was told", file=sys.stderr)
    elif running:
        print(f"study: stopped at timeout = {timeout:g} s; {len(running)} running evaluation(s) failed, to be asked "
              "again", file=sys.stderr)
    return errors


def _loop(study, evaluate, pool, width, deadline, max_evals, stop, running, errors, bar):
    """Ask, submit and tell until the study has nothing to hand out, ``max_evals``, the deadline or Ctrl-C."""
    worker = f"optimize-{os.getpid()}"
    told = 0
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return
        room = width - len(running)
        if max_evals is not None:
            room = min(room, max_evals - told - len(running))
        if room > 0 and not stop.is_set():
            asked = {t.id for t in running.values()}
            for t in study.ask(room, worker=worker):
                if t.id not in asked:
                    running[pool.submit(evaluate, t)] = t
        if not running:
            return
        done, _ = wait(list(running), timeout=POLL_S if left is None else min(POLL_S, left),
                       return_when=FIRST_COMPLETED)
        for fut in done:
            told += _settle(study, running.pop(fut), fut, errors)
            bar.update(1)


def _width(workers, executor) -> int:
    if workers is None:
        return 1 if executor is None else int(getattr(executor, "_max_workers", None) or os.cpu_count() or 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise StudyError(f"workers = {workers!r} must be a whole number >= 1")
    return workers


def _settle(study, ticket, fut, errors) -> int:
    """Tell a returned evaluation (1), or fail its ticket and report why (0)."""
    err = fut.exception()
    if err is None:
        out = fut.result()
        values, cost = (out if isinstance(out, tuple) and len(out) == 2 else (out, None))
        try:
            study.tell(ticket, values, cost)
            return 1
        except StudyError as bad:
            err = bad
    _report(study, ticket, err, errors)
    return 0


def _report(study, ticket, err, errors):
    """Fail ``ticket`` (retry), keep ``(ticket, err)`` and say so on stderr in one line."""
    errors.append((ticket, err))
    print(f"study: ticket {ticket.id} (arm {ticket.arm}) failed: {type(err).__name__}: "
          f"{str(err).splitlines()[0] if str(err) else ''}", file=sys.stderr)
    study.fail(ticket, retry=True)
