"""Local worker processes: a CPU run's seeds split over one single-device JAX process per core.

XLA's CPU runtime runs every device of a process on one shared thread pool, and the kernels of one
device's round loop are handed to pool threads that are busy with another device's loop, so N host
devices in one process keep well under N cores busy (PrefUCB, 256 seeds, 2 cores: 150-170% CPU).
A process with one device, pinned to its own core, keeps that core busy. :func:`run_chunks` therefore
spawns ``workers`` processes (each pinned to its own core where the OS has affinity masks, one host
device), splits every chunk's seed range into equal parts (:func:`deal`), and yields a chunk's arrays
as soon as all of its parts are back. A seed's key is ``fold_in(PRNGKey(seed), index)`` and seeds
never interact, so every seed computes exactly what it computes in one process.

What a worker computes is the caller's task (the experiment's is
:func:`mobandit_jax.experiment.work_on_parts`). A worker that fails reports its error in one line.
Workers ignore SIGINT (the parent stops them and keeps the finished chunks) and, on Linux, die with
the parent (``PR_SET_PDEATHSIG``).
"""
from __future__ import annotations

import math
import multiprocessing
import queue
import signal

import numpy as np

from . import devices

POLL_S = 1.0  # how often the parent checks that its workers are alive while it waits
# Starting the workers costs a few seconds (a process, JAX, the plan and its tracing, per worker), so
# runs smaller than this many seed-rounds (rounds x seeds x runs, about 20 s on one core for PrefUCB
# at K = 42) stay in one process, over its devices.
MIN_SEED_ROUNDS = 2 ** 23


def worth_it(spec: dict) -> bool:
    """Whether a spec is big enough to run in worker processes (:data:`MIN_SEED_ROUNDS`)."""
    from .config import seed_rounds

    return seed_rounds(spec) >= MIN_SEED_ROUNDS


def deal(chunk: int, seeds: int, chunks, workers: int) -> tuple:
    """``(width, units)``: each chunk's seeds split into ``min(workers, chunk)`` parts of ``width``
    seeds; ``units[w]`` lists worker ``w``'s parts as ``(c, start, n)`` (seeds ``[start, start + n)``
    of chunk ``c``). With at least ``workers`` seeds per chunk, worker ``p`` takes part ``p`` of every
    chunk; with fewer seeds per chunk than workers, the parts (a seed each) are dealt in turn."""
    parts = max(1, min(workers, chunk))
    width = math.ceil(chunk / parts)
    units = [[] for _ in range(workers)]
    k = 0
    for c in chunks:
        lo, hi = c * chunk, min((c + 1) * chunk, seeds)
        for p, start in enumerate(range(lo, hi, width)):
            units[p if parts == workers else k % workers].append((c, start, min(width, hi - start)))
            k += 1
    return width, units


def _die_with_parent():
    """Ask Linux to kill this process when its parent dies (no-op elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start_worker(cores) -> None:
    """A worker process's start: die with the parent, leave SIGINT to it, pin to ``cores`` (if any),
    one host device (before JAX starts its backend)."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devices.pin(cores)
    devices.single_host_device()


def one_line(err: BaseException) -> str:
    return " ".join(f"{type(err).__name__}: {err}".split())


def _work(index: int, task, cores, width: int, units: list, out: multiprocessing.Queue):
    """Worker ``index``: put every ``(c, start, arrays)`` of ``task(index, width, units)`` on ``out``
    (``("error", index, message)`` on failure)."""
    start_worker(cores)
    try:
        for item in task(index, width, units):
            out.put(item)
    except Exception as err:  # noqa: BLE001 -- reported to the parent in one line
        out.put(("error", index, one_line(err)))


def _next(results: multiprocessing.Queue, procs: list):
    """The next message from the workers; an error if a worker died without sending one."""
    while True:
        try:
            return results.get(timeout=POLL_S)
        except queue.Empty:
            for i, p in enumerate(procs):
                if p.exitcode not in (None, 0):
                    raise RuntimeError(f"worker process {i} stopped with exit code {p.exitcode} "
                                       "(out of memory? try --max-memory or fewer --devices)") from None


def run_chunks(task, chunk: int, seeds: int, chunks: list, workers: int):
    """``(c, arrays)`` for each chunk in ``chunks``, computed by ``workers`` pinned worker processes.

    ``task(index, width, units)`` (picklable: it runs in the workers) yields ``(c, start, arrays)`` for
    worker ``index``'s parts ``units`` (:func:`deal`), computed on ``width`` lanes. The workers are
    stopped when the generator is closed (an interrupt, an error, or the end).
    """
    width, units = deal(chunk, seeds, chunks, workers)
    slots = devices.core_slots(devices.cpu_cores())[:workers] or [None] * workers  # a core each, if enough
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    procs = [context.Process(target=_work, args=(w, task, slots[w], width, units[w], results), daemon=True)
             for w in range(workers) if units[w]]
    expected = {}
    for unit in units:
        for c, *_ in unit:
            expected[c] = expected.get(c, 0) + 1
    parts: dict = {}
    try:
        for p in procs:
            p.start()
        while expected:
            message = _next(results, procs)
            if message[0] == "error":
                raise RuntimeError(f"worker process {message[1]}: {message[2]}")
            c, start, arrays = message
            parts.setdefault(c, []).append((start, arrays))
            if len(parts[c]) == expected[c]:
                ordered = [a for _, a in sorted(parts.pop(c), key=lambda x: x[0])]
                del expected[c]
                yield c, {k: np.concatenate([a[k] for a in ordered]) for k in ordered[0]}
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join()
        results.close()
        results.cancel_join_thread()
