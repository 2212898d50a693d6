"""Local workers: a CPU run's seeds split over one single-device JAX process per core.

XLA's CPU runtime runs every device of a process on one shared thread pool, and the kernels of one
device's round loop are handed to pool threads that are busy with another device's loop, so N host
devices in one process keep well under N cores busy (PrefUCB, 256 seeds, 2 cores: 150-170% CPU).
A process with one device, pinned to its own core, keeps that core busy. A run over N cores
therefore has N workers (:class:`Workers`): this process, worker 0, and N - 1 spawned worker
processes, each pinned to its own core where the OS has affinity masks and given one host device.
:meth:`Workers.run_chunks` splits every chunk's seed range into equal parts (:func:`split`) and
deals them, in chunk order, to whichever worker asks first, as soon as it is ready (this process
computes parts while the worker processes still start up), and yields a chunk's arrays as soon as
all of its parts are back. A seed's key is ``fold_in(PRNGKey(seed), index)`` and seeds never interact,
so every seed computes exactly what it computes in one process.

What a worker computes is the caller's task (the experiment's is
:func:`mobandit_jax.runner.execution.run_parts`). A worker process that fails reports its error in one
line. Worker processes ignore SIGINT (this process stops them and keeps the finished chunks) and, on
Linux, die with it (``PR_SET_PDEATHSIG``).

Each worker process talks to this one over its own pipe (:class:`Link`), not over queues that all
share: a queue's lock held by a worker process that is killed is never released, and a queue's named
semaphores are tracked by multiprocessing's resource tracker, which has printed its leak warnings
after a killed worker's one-line error. A thread of this process hands each worker process its next
part when it asks (:meth:`Workers.run_chunks`), so the worker processes keep taking parts while this
one computes its own.
"""
from __future__ import annotations

import collections
import contextlib
import importlib
import math
import multiprocessing
import multiprocessing.connection
import queue
import signal
import threading
from typing import NamedTuple

import numpy as np

from . import background, devices

JOIN_S = 10.0  # how long a worker process whose pipe has closed is given to be reaped, for its exit code
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


def start_run_workers(spec, x64: bool, workers: int, chunk: int, live: bool = False) -> Workers:
    """The ``workers - 1`` worker processes of a run of ``spec`` in chunks of ``chunk`` seeds, started now
    (they build and compile while this process, worker 0, builds its plan; their task is
    :func:`mobandit_jax.runner.execution.work_on_parts`); pass them to ``execution.execute``, then close them.

    Args:
      spec: the run's :class:`~mobandit_jax.experiment_spec.ExperimentSpec` (each worker process builds its plan).
      x64: compute in float64.
      workers: the run's workers, this process among them.
      chunk: seeds per chunk.
      live: they report each checkpoint of their program calls (:func:`tell`), for a progress bar.

    Returns:
      The :class:`Workers`.
    """
    return Workers(NamedTask("mobandit_jax.runner.execution", "work_on_parts", (spec, x64, workers, live)), workers,
                   part_width(chunk, workers, spec.experiment.seeds))


def worth_it(spec) -> bool:
    """Whether a spec is big enough to run in worker processes.

    Args:
      spec: the :class:`~mobandit_jax.experiment_spec.ExperimentSpec`.

    Returns:
      True where its size (:meth:`~mobandit_jax.experiment_spec.ExperimentSpec.seed_rounds`) is at least
      :data:`MIN_SEED_ROUNDS`.
    """
    return spec.seed_rounds() >= MIN_SEED_ROUNDS


def split(chunk: int, seeds: int, chunks, workers: int) -> tuple:
    """``(width, parts)``: each chunk's seeds (in the order of ``chunks``) in parts of at most ``width``
    seeds (:func:`part_width`), as ``(c, start, n)`` (seeds ``[start, start + n)`` of chunk ``c``).

    Args:
      chunk: seeds per chunk.
      seeds: the run's seeds.
      chunks: the chunks to compute.
      workers: the run's workers.

    Returns:
      ``(width, parts)``.
    """
    width = part_width(chunk, workers, seeds)
    parts = []
    for c in chunks:
        lo, hi = c * chunk, min((c + 1) * chunk, seeds)
        parts += [(c, start, min(width, hi - start)) for start in range(lo, hi, width)]
    return width, parts


def die_with_parent():
    """Ask Linux to kill this process when its parent dies (no-op elsewhere).

    Returns:
      None.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start_worker(cores) -> None:
    """A worker process's start: die with the parent, leave SIGINT to it, pin to ``cores`` (if any),
    one host device (before JAX starts its backend).

    Args:
      cores: the cores to pin it to (None: any).

    Returns:
      None.
    """
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devices.pin(cores)
    devices.single_host_device()


def one_line(err: BaseException) -> str:
    """An error as one line, ``Type: message``.

    Args:
      err: the error.

    Returns:
      The line.
    """
    return " ".join(f"{type(err).__name__}: {err}".split())


class Link(NamedTuple):
    """A worker process and this process's end of the pipe to it."""

    process: multiprocessing.Process
    conn: multiprocessing.connection.Connection


def stopped(number: int, exitcode) -> RuntimeError:
    """The one-line error of worker process ``number``, which stopped with ``exitcode`` (``None``: not
    reaped within :data:`JOIN_S`) before it finished.

    Args:
      number: the worker process's number.
      exitcode: its exit code, or None.

    Returns:
      The :class:`RuntimeError`.
    """
    if exitcode is None:
        return RuntimeError(f"worker process {number} closed its pipe and had not exited {JOIN_S:.0f} s later")
    why = (f"killed by signal {-exitcode}: out of memory? try --max-memory or fewer --devices"
           if exitcode < 0 else "see its error output above")
    return RuntimeError(f"worker process {number} stopped with exit code {exitcode} ({why})")


def receive(links: dict, timeout=None):
    """``(key, message)`` from the first of the worker processes ``links`` (``{key: Link}``) to say
    something; ``(key, None)`` when one has ended with exit code 0 and nothing left to say; ``None``
    after ``timeout`` seconds. A worker process that stopped otherwise raises :func:`stopped` (numbered
    by its key).

    Args:
      links: ``{key: Link}`` of the live worker processes.
      timeout: seconds to wait (None: until one speaks).

    Returns:
      ``(key, message)``, ``(key, None)`` or None.
    """
    by_conn = {link.conn: key for key, link in links.items()}
    by_sentinel = {link.process.sentinel: key for key, link in links.items()}
    ready = multiprocessing.connection.wait([*by_conn, *by_sentinel], timeout)
    if not ready:
        return None
    for conn in [r for r in ready if r in by_conn]:
        try:
            return by_conn[conn], conn.recv()
        except EOFError:  # it closed its end: it has stopped
            ready.append(links[by_conn[conn]].process.sentinel)
    key = next(by_sentinel[r] for r in ready if r in by_sentinel)
    process = links[key].process
    process.join(JOIN_S)
    if process.exitcode == 0:
        return key, None
    raise stopped(key, process.exitcode)


def _parts_asked(conn, send):
    """The parts ``(c, start, n)`` this worker process asks for over ``conn`` (``send("next")``), one at a time,
    up to the first ``None``."""
    while True:
        send("next")
        part = conn.recv()
        if part is None:
            return
        yield part


def _work(index: int, task, width: int, conn, cores):
    """Worker ``index``: send every ``(c, start, arrays)`` of ``task(index, width, parts, tell)`` over ``conn``,
    ``parts()`` being the parts it asks for there and ``tell(message)`` sending a message to this run's process
    from any thread (its :meth:`Workers.run_chunks` hands a ``("progress", ...)`` message to its ``progress``);
    ``("error", index, message)`` on failure."""
    start_worker(cores)
    lock = threading.Lock()  # the task's results and tell's messages (from other threads) share the pipe

    def send(message):
        with lock:
            conn.send(message)

    try:
        for item in task(index, width, lambda: _parts_asked(conn, send), send):
            send(item)
    except Exception as err:  # noqa: BLE001 -- reported to the parent in one line
        send(("error", index, one_line(err)))


@contextlib.contextmanager
def sigint_ignored():
    """Ignore SIGINT in this block (where this is the main thread); a process started meanwhile keeps
    ignoring it from its first instruction.

    Returns:
      A context manager.
    """
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
    equal parts of a chunk.

    Args:
      chunk: seeds per chunk.
      workers: the run's workers.
      seeds: the run's seeds.

    Returns:
      Seeds per part.
    """
    if math.ceil(seeds / chunk) >= WHOLE_CHUNKS_PER_WORKER * workers:
        return chunk
    return math.ceil(chunk / max(1, min(workers, chunk)))


def start_processes(target, args: list, first_slot: int = 0) -> list:
    """One spawned daemon process per entry of ``args``, running ``target(*args[w], conn, cores)``, each
    with its end ``conn`` of a pipe to this process and on its own core (slot ``first_slot + w`` of
    :func:`mobandit_jax.runner.devices.core_slots`) where there are enough (``cores=None`` otherwise),
    started with SIGINT ignored; their :class:`Link` s.

    Args:
      target: the function each process runs.
      args: one argument tuple per process.
      first_slot: the core slot of the first process.

    Returns:
      One :class:`Link` per process.
    """
    context = multiprocessing.get_context("spawn")
    slots = devices.core_slots(devices.cpu_cores())[first_slot:first_slot + len(args)]
    if len(slots) < len(args):
        slots = [None] * len(args)
    pipes = [context.Pipe() for _ in args]
    procs = [context.Process(target=target, args=(*a, theirs, cores), daemon=True)
             for a, (_, theirs), cores in zip(args, pipes, slots, strict=False)]
    own = devices.affinity()
    try:
        with sigint_ignored():  # inherited: a Ctrl-C while a worker starts up prints no traceback there
            for p, cores in zip(procs, slots, strict=False):
                devices.pin(cores)  # inherited too: the new interpreter starts on its own core, not on this one's
                p.start()
    finally:
        devices.pin(own)
        for _, theirs in pipes:
            theirs.close()  # the worker's end lives in the worker: a dead worker is an end of file here
    return [Link(p, ours) for p, (ours, _) in zip(procs, pipes, strict=False)]


class Workers:
    """A run's ``count`` workers: this process is worker 0 and ``count - 1`` pinned worker processes,
    started at once (they import JAX, build and compile while this process prepares the run), are
    workers ``1 .. count - 1``. Process worker ``w`` runs ``task(w, width, parts, tell)`` (picklable: it runs
    in the worker), which yields ``(c, start, arrays)`` for each ``(c, start, n)`` of ``parts()``, the
    parts it asks for one at a time, and may ``tell(message)`` this process meanwhile (:func:`_work`); this
    process computes the parts it takes with the ``own`` of :meth:`run_chunks`. :meth:`close` (or leaving the
    ``with`` block) stops the processes."""

    def __init__(self, task, count: int, width: int):
        self.count, self.width = count, width
        self.links = start_processes(_work, [(w + 1, task, width) for w in range(count - 1)], first_slot=1)
        self.procs = [link.process for link in self.links]
        self._parts: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._inbox: queue.Queue = queue.Queue()  # the worker processes' messages, from the dealer thread
        self._dealer = None
        self._progress = None  # run_chunks's progress
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

    def _take(self):
        """The next part not yet taken, or ``None``."""
        with self._lock:
            return self._parts.popleft() if self._parts else None

    def _deal(self):
        """The dealer thread: answer each worker process's ask with the next part (``None`` when there is
        none left) and put everything else it sends, and its death, in the inbox."""
        live = {w + 1: link for w, link in enumerate(self.links)}
        try:
            while live:
                key, message = receive(live)
                if message is None:  # done: it had its None
                    del live[key]
                elif isinstance(message, tuple) and message[0] == "progress":
                    if self._progress is not None:
                        self._progress(*message[1:])
                elif message == "next":
                    with contextlib.suppress(OSError):  # it has just stopped: receive says how
                        live[key].conn.send(self._take())
                else:
                    self._inbox.put(message)
        except BaseException as err:  # noqa: BLE001 -- the run stops on it in the main thread
            self._inbox.put(("stopped", err if isinstance(err, RuntimeError) else RuntimeError(one_line(err))))

    def run_chunks(self, chunk: int, seeds: int, chunks: list, own, progress=None):
        """``(c, arrays)`` for each chunk in ``chunks`` (of ``chunk`` seeds), as soon as all its parts are
        back. The parts are dealt in chunk order to whichever worker asks first, as soon as it is ready;
        this process computes the parts it takes with ``own(width, parts)``, a generator like the task's,
        and takes the processes' parts as they arrive in between. ``progress(*rest)`` is called (on the
        dealer thread) for each ``("progress", *rest)`` a worker process tells (:func:`tell`).

        Args:
          chunk: seeds per chunk.
          seeds: the run's seeds.
          chunks: the chunks to compute, in order.
          own: ``own(width, parts)``: this process's generator of ``(c, start, arrays)``.
          progress: called with each progress message's values (None: they are dropped).

        Returns:
          A generator of ``(c, arrays)``, a chunk as soon as all its parts are back.
        """
        self._progress = progress
        width, parts = split(chunk, seeds, chunks, self.count)
        if width != self.width:
            raise ValueError(f"workers started for parts of {self.width} seeds, asked for parts of {width}")
        if self._dealer is not None:
            raise RuntimeError("these workers have run their chunks already")
        expected = collections.Counter(c for c, *_ in parts)
        self._parts.extend(parts)
        self._dealer = threading.Thread(target=self._deal, name="mobandit-dealer", daemon=True)
        self._dealer.start()
        mine = own(width, lambda: iter(self._take, None))
        done: dict = {}
        while expected:
            message = next(mine, None) if mine is not None else None
            if message is None:
                mine = None
                message = self._next_message()
            for item in [message, *self._arrived()]:
                if item[0] == "stopped":
                    raise item[1]
                if item[0] == "error":
                    raise RuntimeError(f"worker process {item[1]}: {item[2]}")
                c, start, arrays = item
                done.setdefault(c, []).append((start, arrays))
                if len(done[c]) == expected[c]:
                    ordered = [a for _, a in sorted(done.pop(c), key=lambda x: x[0])]
                    del expected[c]
                    yield c, {k: np.concatenate([a[k] for a in ordered]) for k in ordered[0]}

    def _next_message(self):
        """The processes' next message, waited for in steps (a signal's handler runs between them)."""
        while True:
            with contextlib.suppress(queue.Empty):
                return self._inbox.get(timeout=background.STEP_S)

    def _arrived(self) -> list:
        """The processes' messages already waiting."""
        arrived = []
        with contextlib.suppress(queue.Empty):
            while True:
                arrived.append(self._inbox.get_nowait())
        return arrived

    def close(self):
        """Stop the workers that are still running and wait for them; this thread gets back its cores.

        Returns:
          None.
        """
        devices.pin(self.cores)
        with self._lock:
            self._parts.clear()  # a worker that asks from now on is told to stop
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        if self._dealer is not None:
            self._dealer.join()
        for p in self.procs:
            p.join()
        for link in self.links:
            link.conn.close()
