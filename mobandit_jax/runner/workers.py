"""Local workers: a CPU run's seeds split over one single-device JAX process per core.

XLA's CPU runtime runs every device of a process on one shared thread pool, and the kernels of one
device's round loop are handed to pool threads that are busy with another device's loop, so N host
devices in one process keep well under N cores busy (PrefUCB, 256 seeds, 2 cores: 150-170% CPU).
A process with one device, pinned to its own core, keeps that core busy. A run over N cores
therefore has N workers (:class:`Workers`): this process, worker 0, and N - 1 spawned worker
processes, each pinned to its own core where the OS has affinity masks and given one host device.
:meth:`Workers.run_chunks` splits every chunk's seed range into equal parts (:func:`split`) and
puts them on one queue that every worker takes from as soon as it is ready (this process computes
parts while the worker processes still start up), and yields a chunk's arrays as soon as all of its
parts are back. A seed's key is ``fold_in(PRNGKey(seed), index)`` and seeds never interact,
so every seed computes exactly what it computes in one process.

What a worker computes is the caller's task (the experiment's is
:func:`mobandit_jax.runner.execution.run_parts`). A worker process that fails reports its error in one
line. Worker processes ignore SIGINT (this process stops them and keeps the finished chunks) and, on
Linux, die with it (``PR_SET_PDEATHSIG``).
"""
from __future__ import annotations

import collections
import contextlib
import importlib
import math
import multiprocessing
import queue
import signal
from typing import NamedTuple

import numpy as np

from . import devices

POLL_S = 1.0  # how often the parent checks that its workers are alive while it waits
# The worker processes start beside this one (JAX, the plan, the kept programs: ready about when this
# process is), yet runs smaller than this many seed-rounds (rounds x seeds x runs, about 1.3 s on one core
# for PrefUCB at K = 42) stay in one process, over its devices: at 256 seeds x 4,000 rounds both ways take
# 3.3-4.1 s, at 512 seeds worker processes take 4.9-5.4 s against 7.0-7.8 s (scripts/startup_bench.py).
MIN_SEED_ROUNDS = 2 ** 20
# A run of at least this many chunks per worker gives each worker whole chunks: a program twice as wide
# computes a seed about 4% faster (PrefUCB, 256 seeds against 128), and there are parts enough to end
# evenly (4,096 seeds x 4,000 rounds on 2 cores: 1.79x --devices 1, against 1.66x with halved chunks).
WHOLE_CHUNKS_PER_WORKER = 4


class NamedTask(NamedTuple):
    """``module.function(*args, *more)``, the function imported where the task is called: the parent
    passes it to its workers without importing ``module`` (``mobandit run`` starts its workers before it
    imports JAX)."""

    module: str
    function: str
    args: tuple

    def __call__(self, *more):
        return getattr(importlib.import_module(self.module), self.function)(*self.args, *more)


def start_run_workers(spec: dict, x64: bool, workers: int, chunk: int) -> "Workers":
    """The ``workers - 1`` worker processes of a run of ``spec`` in chunks of ``chunk`` seeds, started now
    (they build and compile while this process, worker 0, builds its plan; their task is
    :func:`mobandit_jax.runner.execution.work_on_parts`); pass them to ``execution.execute``, then close them."""
    return Workers(NamedTask("mobandit_jax.runner.execution", "work_on_parts", (spec, x64, workers)), workers,
                   part_width(chunk, workers, spec["experiment"]["seeds"]))


def worth_it(spec: dict) -> bool:
    """Whether a spec is big enough to run in worker processes (:data:`MIN_SEED_ROUNDS`)."""
    from .spec import seed_rounds

    return seed_rounds(spec) >= MIN_SEED_ROUNDS


def split(chunk: int, seeds: int, chunks, workers: int) -> tuple:
    """``(width, parts)``: each chunk's seeds (in the order of ``chunks``) in parts of at most ``width``
    seeds (:func:`part_width`), as ``(c, start, n)`` (seeds ``[start, start + n)`` of chunk ``c``)."""
    width = part_width(chunk, workers, seeds)
    parts = []
    for c in chunks:
        lo, hi = c * chunk, min((c + 1) * chunk, seeds)
        parts += [(c, start, min(width, hi - start)) for start in range(lo, hi, width)]
    return width, parts


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


def queued(todo):
    """The parts ``(c, start, n)`` taken from the shared queue ``todo`` up to its first ``None``."""
    return iter(todo.get, None)


def _work(index: int, task, width: int, todo, out, cores):
    """Worker ``index``: put every ``(c, start, arrays)`` of ``task(index, width, parts)`` on ``out``,
    ``parts()`` being the parts it takes from ``todo`` (``("error", index, message)`` on failure)."""
    start_worker(cores)
    try:
        for item in task(index, width, lambda: queued(todo)):
            out.put(item)
    except Exception as err:  # noqa: BLE001 -- reported to the parent in one line
        out.put(("error", index, one_line(err)))


def next_message(results: multiprocessing.Queue, procs: list, first: int = 0, wait: bool = True):
    """The next message from the workers (``procs[i]`` is worker ``first + i``); an error if a worker died
    without sending one. ``wait=False``: ``None`` when no message is waiting."""
    while True:
        try:
            message = results.get(timeout=POLL_S) if wait else results.get_nowait()
        except queue.Empty:
            for i, p in enumerate(procs):
                if p.exitcode not in (None, 0):
                    why = ("killed by signal {}: out of memory? try --max-memory or fewer --devices".format(-p.exitcode)
                           if p.exitcode < 0 else "see its error output above")
                    raise RuntimeError(
                        f"worker process {first + i} stopped with exit code {p.exitcode} ({why})") from None
            if not wait:
                return None
            continue
        return message


@contextlib.contextmanager
def _sigint_ignored():
    """Ignore SIGINT in this block (where this is the main thread); a process started meanwhile keeps
    ignoring it from its first instruction."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signal dispositions are left alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def part_width(chunk: int, workers: int, seeds: int) -> int:
    """Seeds per part of a run of ``seeds`` seeds in chunks of ``chunk`` over ``workers`` processes: a whole
    chunk when the run has :data:`WHOLE_CHUNKS_PER_WORKER` chunks per worker, else ``min(workers, chunk)``
    equal parts of a chunk."""
    if math.ceil(seeds / chunk) >= WHOLE_CHUNKS_PER_WORKER * workers:
        return chunk
    return math.ceil(chunk / max(1, min(workers, chunk)))


def start_processes(target, args: list, first_slot: int = 0) -> list:
    """One spawned daemon process per entry of ``args``, running ``target(*args[w], cores)``, each on its
    own core (slot ``first_slot + w`` of :func:`mobandit_jax.runner.devices.core_slots`) where there are enough
    (``cores=None`` otherwise), started with SIGINT ignored."""
    context = multiprocessing.get_context("spawn")
    slots = devices.core_slots(devices.cpu_cores())[first_slot:first_slot + len(args)]
    if len(slots) < len(args):
        slots = [None] * len(args)
    procs = [context.Process(target=target, args=(*a, cores), daemon=True) for a, cores in zip(args, slots)]
    own = devices.affinity()
    try:
        with _sigint_ignored():  # inherited: a Ctrl-C while a worker starts up prints no traceback there
            for p, cores in zip(procs, slots):
                devices.pin(cores)  # inherited too: the new interpreter starts on its own core, not on this one's
                p.start()
    finally:
        devices.pin(own)
    return procs


class Workers:
    """A run's ``count`` workers: this process is worker 0 and ``count - 1`` pinned worker processes,
    started at once (they import JAX, build and compile while this process prepares the run), are
    workers ``1 .. count - 1``. Process worker ``w`` runs ``task(w, width, parts)`` (picklable: it runs
    in the worker), which yields ``(c, start, arrays)`` for each ``(c, start, n)`` of ``parts()``, the
    parts it takes from the queue that :meth:`run_chunks` fills; this process computes the parts it
    takes with the ``own`` of :meth:`run_chunks`. :meth:`close` (or leaving the ``with`` block) stops
    the processes."""

    def __init__(self, task, count: int, width: int):
        context = multiprocessing.get_context("spawn")
        self.count, self.width, self.results = count, width, context.Queue()
        self.todo = context.Queue()  # parts (c, start, n), then one None per worker
        args = [(w + 1, task, width, self.todo, self.results) for w in range(count - 1)]
        self.procs = start_processes(_work, args, first_slot=1)
        # worker 0 takes core slot 0, so that the XLA threads this process starts from now on do not
        # contend with the worker processes' (4,096-seed PrefUCB run: 14.4 s against 17.2 s unpinned)
        self.cores = devices.affinity()  # every core of the run (this process's before it took its own)
        slots = devices.core_slots(devices.cpu_cores())
        if len(slots) >= count:
            devices.pin(slots[0])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run_chunks(self, chunk: int, seeds: int, chunks: list, own):
        """``(c, arrays)`` for each chunk in ``chunks`` (of ``chunk`` seeds), as soon as all its parts are
        back. Every worker takes parts from one queue, in chunk order, as soon as it is ready; this
        process computes the parts it takes with ``own(width, parts)``, a generator like the task's,
        and takes the processes' parts as they arrive in between."""
        width, parts = split(chunk, seeds, chunks, self.count)
        if width != self.width:
            raise ValueError(f"workers started for parts of {self.width} seeds, asked for parts of {width}")
        expected = collections.Counter(c for c, *_ in parts)
        for part in parts + [None] * self.count:
            self.todo.put(part)
        mine = own(width, lambda: queued(self.todo))
        done: dict = {}
        while expected:
            message = next(mine, None) if mine is not None else None
            if message is None:
                mine = None
                message = next_message(self.results, self.procs, first=1)
            for item in [message, *self._arrived()]:
                if item[0] == "error":
                    raise RuntimeError(f"worker process {item[1]}: {item[2]}")
                c, start, arrays = item
                done.setdefault(c, []).append((start, arrays))
                if len(done[c]) == expected[c]:
                    ordered = [a for _, a in sorted(done.pop(c), key=lambda x: x[0])]
                    del expected[c]
                    yield c, {k: np.concatenate([a[k] for a in ordered]) for k in ordered[0]}

    def _arrived(self) -> list:
        """The processes' messages already waiting."""
        arrived = []
        while (message := next_message(self.results, self.procs, first=1, wait=False)) is not None:
            arrived.append(message)
        return arrived

    def close(self):
        """Stop the workers that are still running and wait for them; this thread gets back its cores."""
        devices.pin(self.cores)
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        for p in self.procs:
            p.join()
        for q in (self.results, self.todo):
            q.close()
            q.cancel_join_thread()
