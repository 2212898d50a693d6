"""Execution of a plan: compiled, chunked, resumable runs.

``execute(plan, out_dir)`` runs the seeds in chunks: each chunk runs every group, then its arrays are
written atomically to ``chunks/`` (:mod:`mobandit_jax.runner.run_folder`); an interrupted run loses at
most the chunk in flight and resumes from the chunks on disk. With ``out_dir=None`` the chunks stay in
memory and nothing is written. Either way the merged chunks become a
:class:`mobandit_jax.analysis.results.Results`.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import math
import os
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import jax
import numpy as np

from .. import engine
from .. import progress as reporter
from ..analysis.results import Results
from . import background, programs, runtime, sharding
from . import run_folder as files
from . import workers as local_workers
from .devices import cpu_cores
from .plans import Group, Plan, build


class Progress:
    """What a run shows on stderr while it computes (``execute(progress=True)``; nothing otherwise).

    - Notes, one line each: the programs to compile, a line per group as it compiles (``compiling 2/4:
      ParetoUCB``: its label), then the compile time.
    - Where stderr is a terminal (``live``): a bar over the work of this process's chunks, with the
      time left (:class:`mobandit_jax.progress.Progress`, the one reporter of runs and studies). Its
      unit is one checkpoint (``record_every`` rounds, or an identification run) of one lane (a seed at a
      grid point), so that one program call of a group of ``m`` grid points on ``n`` seeds is ``m n``
      units per checkpoint. The programs this process runs are compiled with
      :attr:`report` as the engine's host callback (:func:`mobandit_jax.engine.make_run`), so that the
      bar advances once per checkpoint of every call, in a run of one chunk as in a run of many. Worker
      processes (``--workers``) compile the callback too and tell this process each checkpoint of their
      parts (:class:`Relay`), which the bar adds as it arrives.
    - Where stderr is not a terminal (a log file, a pipe): no bar and no callback (the programs
      are those of ``--quiet``), only the notes and, as chunks are computed, a plain line at most every
      :data:`mobandit_jax.progress.EVERY` seconds and one at the end (no carriage return).

    The callback changes no number: the programs compute the same values with it and without it. It
    costs its programs JAX's persistent compilation cache (:mod:`mobandit_jax.runner.cache`), which
    never keeps a program with a host callback: a run with the bar compiles every time (quickstart, 4
    groups, 2 cores: 11-20 s, against 1.4-2 s from the cache), a ``--quiet`` or logged run does not.
    """

    def __init__(self, plan: Plan, chunks, todo, live: bool | None = None):
        self.plan, self.live = plan, sys.stderr.isatty() if live is None else live
        per_seed = sum(len(g.members) * getattr(g.run, "checkpoints", 1) for g in plan.groups)
        self._units = {c: per_seed * (min((c + 1) * plan.chunk, plan.seeds) - c * plan.chunk) for c in chunks}
        todo = set(todo)
        self._reported = {c: 0 if c in todo else self._units[c] for c in chunks}
        self._call = None  # (chunk, units per checkpoint, checkpoints, checkpoints counted) of the call in flight
        self._initial = sum(self._reported.values())  # resumed chunks
        self._lock, self._bar = threading.Lock(), None
        self._n = math.ceil(plan.seeds / plan.chunk)
        self.report = self._reached if self.live else None  # the host callback compiled into the programs

    def note(self, text: str):
        """Show a note on stderr (:func:`mobandit_jax.progress.note`).

        Args:
          text: the note.

        Returns:
          None.
        """
        reporter.note(text)

    def _add(self, c: int, units: int):
        """Count ``units`` more of chunk ``c`` (under the lock)."""
        if self._bar is None:  # the clock starts with the first computation, after the compilation
            self._bar = reporter.Progress(sum(self._units.values()), "run", "lane checkpoints", initial=self._initial,
                                          live=self.live)
        self._reported[c] += units
        if units:
            self._bar.update(units)

    def _reached(self, checkpoint):
        """The engine's callback: the call in flight has done ``checkpoint`` checkpoints (any thread)."""
        with self._lock:
            if self._call is not None:
                c, per, total, counted = self._call
                k = min(int(checkpoint), total)
                if k > counted:
                    self._call = (c, per, total, k)
                    self._add(c, (k - counted) * per)

    @contextlib.contextmanager
    def call(self, group: Group, start: int, n: int):
        """A program call of ``group`` on the seeds ``[start, start + n)``: its checkpoints count as they pass.

        Args:
          group: the :class:`Group` called.
          start: its first seed.
          n: its seeds.

        Returns:
          A context manager.
        """
        c = start // self.plan.chunk
        with self._lock:
            self._call = (c, len(group.members) * n, getattr(group.run, "checkpoints", 1), 0)
            self._add(c, 0)
            if self.live and self._bar is not None:  # a worker process (Relay) has no bar
                self._bar.set_description(f"chunk {c + 1}/{self._n} {group.label}")
        try:
            yield
            self._reached(self._call[2])  # the last checkpoint ends with the call
        finally:
            self._call = None

    def elsewhere(self, c: int, units: int):
        """``units`` more of chunk ``c``, computed by a worker process (:class:`Relay`; any thread).

        Args:
          c: the chunk.
          units: the units computed.

        Returns:
          None.
        """
        with self._lock:
            self._add(c, min(units, self._units[c] - self._reported[c]))

    def chunk_done(self, c: int):
        """Chunk ``c`` is computed: its parts computed elsewhere count now.

        Args:
          c: the chunk.

        Returns:
          None.
        """
        with self._lock:
            self._add(c, self._units[c] - self._reported[c])

    def close(self):
        """Close the bar (its last line stays).

        Returns:
          None.
        """
        if self._bar is not None:
            self._bar.close()


WRITERS = ("mobandit_jax.analysis.report", "matplotlib.backends.backend_agg")  # what writing a run folder imports


def _import_writers(spare=None):
    if spare and sys.platform.startswith("linux"):  # affinity and niceness are per thread on Linux
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, spare)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    try:
        for name in WRITERS:
            importlib.import_module(name)
    except Exception:  # noqa: BLE001 -- the writer's own import, later, reports it in the main thread
        pass


def prefetch_writers(spare=None):
    """Import the run folder's writers (matplotlib: about 0.6 s) on a thread, to be called once tracing is
    done: XLA's compilation and computation release the GIL, so the import costs no wall time there. With
    ``spare`` cores (a run over worker processes: every core of the run), the thread may run on any of them at
    the lowest priority, in the time a worker leaves idle, instead of on this process's own busy core. A call of
    :func:`mobandit_jax.runner.background.start`, so it ends as the compiles do: a process that stops early (a
    failed worker) waits for the import at a normal exit, where a thread halted inside a C++ extension's
    initialisation would abort the process, and a process ending on Ctrl-C (``mb.run``'s ``KeyboardInterrupt``)
    ends at once instead of waiting for it.

    Args:
      spare: the cores the thread may run on (None: this process's own).

    Returns:
      None.
    """
    background.start(_import_writers, spare)


def lower_group(group: Group, params, mesh, keys, report=None):
    """``group``'s batched run lowered with the seed axis of ``keys`` sharded over ``mesh`` (``.compile()`` it);
    ``report``: the engine's host callback, once per checkpoint (:class:`Progress`).

    Args:
      group: a :class:`Group` of the plan.
      params: its stacked :class:`~mobandit_jax.types.RunParams`.
      mesh: the device mesh.
      keys: the seed keys of one call.
      report: the progress callback, or None.

    Returns:
      The lowered program (``jax.stages.Lowered``).
    """
    return sharding.compile_sharded(engine.batch(group.run, report), mesh).lower(params, keys)


def _lower(plan: Plan, i: int, stacked: list, mesh, keys, show):
    """Group ``i`` lowered (:func:`lower_group`), with its note and :class:`Progress` ``show``'s callback."""
    if show is not None:
        show.note(f"compiling {i + 1}/{len(plan.groups)}: {plan.groups[i].label}")
    return lower_group(plan.groups[i], stacked[i], mesh, keys, None if show is None else show.report)


@contextlib.contextmanager
def _uncached():
    """No persistent-cache writes in this block: a program with a host callback (the live bar's) is keyed by
    the callback's address, so JAX would store a new copy of it at every run and never read one back."""
    key = "jax_persistent_cache_min_compile_time_secs"
    before = getattr(jax.config, key)
    jax.config.update(key, float("inf"))
    try:
        yield
    finally:
        jax.config.update(key, before)


def _programs(plan: Plan, mesh, keys, stacked: list, show=None, pool=None, order=None, traced=None) -> tuple:
    """``(programs, kept)``: every group's compiled program, in group order, and how many of them were kept from
    an earlier run (:mod:`mobandit_jax.runner.programs`; never those with the live bar's callback). Groups are
    taken in ``order`` (default: group order), each looked up just before it would be lowered (so that worker
    processes starting at different groups use what the others have kept meanwhile); the others are lowered
    here and compiled now, or on ``pool`` while the next is lowered (XLA's compile releases the GIL, tracing
    holds it); either way on a daemon thread that a signal does not wait for (:mod:`mobandit_jax.runner.background`).
    ``traced()`` is called once all are lowered."""
    live = show is not None and show.report is not None
    n = len(plan.groups)
    paths = [None if live else programs.path(plan, i, stacked[i], keys.shape[0], mesh) for i in range(n)]
    made, kept = [None] * n, 0
    # with a pool, the kept programs load side by side (loading links each program's code, in proportion to its size)
    found = [pool.submit(programs.load, p, mesh) for p in paths] if pool is not None else None
    fresh = any(p is not None for p in paths)
    with programs.fresh_compiles() if fresh else _uncached() if live else contextlib.nullcontext():
        for i in order or range(n):
            made[i] = background.wait(found[i]) if found is not None else programs.load(paths[i], mesh)
            if made[i] is not None:
                kept += 1
                continue
            lowered = _lower(plan, i, stacked, mesh, keys, show)
            made[i] = (background.call(programs.compile_and_keep, lowered, paths[i]) if pool is None
                       else pool.submit(programs.compile_and_keep, lowered, paths[i]))
        if traced is not None:
            traced()
        return [background.wait(m) if isinstance(m, Future) else m for m in made], kept


def _compile_groups(plan: Plan, mesh, width: int, stacked: list, show=None, writes: bool = False) -> list:
    """Every group's sharded program (:func:`_programs`), compiled ahead of the first chunk side by side on the
    cores, with a line per group on stderr (:class:`Progress` ``show``); ``writes``: :func:`prefetch_writers`
    once every group is traced."""
    keys = engine.seed_keys(plan.base_seed, np.arange(width))
    if show is not None:
        show.note(f"compiling {len(plan.groups)} program(s) for {mesh.devices.size} device(s)...")
    t0 = time.time()
    pool = background.Daemons(min(len(plan.groups), cpu_cores()))
    compiled, kept = _programs(plan, mesh, keys, stacked, show, pool, traced=prefetch_writers if writes else None)
    if show is not None:
        show.note(f"compiled in {time.time() - t0:.1f} s"
                  + (f" ({kept} of {len(compiled)} kept from an earlier run)" if kept else ""))
    return compiled


def run_seeds(plan: Plan, compiled: list, stacked: list, start: int, width: int, n: int, show=None) -> dict:
    """Every group's arrays for the seeds ``[start, start + n)``, computed on ``width >= n`` lanes (each call
    counted by :class:`Progress` ``show``).

    Args:
      plan: the plan.
      compiled: every group's compiled program, in group order.
      stacked: every group's stacked params.
      start: the first seed.
      width: the lanes of a call.
      n: the seeds computed.
      show: the run's :class:`Progress`, or None.

    Returns:
      ``{"label|grid|metric": (n, ...) array}``.
    """
    keys = engine.seed_keys(plan.base_seed, np.arange(start, start + width))
    arrays = {}
    for g, fn, params in zip(plan.groups, compiled, stacked, strict=False):
        with show.call(g, start, n) if show is not None else contextlib.nullcontext():
            res = background.call(lambda fn=fn, params=params: jax.device_get(fn(params, keys)))  # a signal stops it
        for m, value in res.items():
            for row, gi in enumerate(g.members):
                arrays[f"{g.label}|{gi}|{m}"] = np.asarray(value[row, :n])
    return arrays


def bytes_per_seed(plan: Plan, probe: int = 8) -> float:
    """Estimated device bytes per seed: compiled memory analysis of each group at ``probe`` seeds.

    Args:
      plan: the plan.
      probe: the seeds of the probe compilation.

    Returns:
      The largest group's bytes per seed.
    """
    worst = 0.0
    for g in plan.groups:
        params = engine.stack_grid(g.params)
        keys = engine.seed_keys(plan.base_seed, np.arange(probe))
        mem = background.call(jax.jit(engine.batch(g.run)).lower(params, keys).compile).memory_analysis()
        total = 0 if mem is None else mem.temp_size_in_bytes + mem.output_size_in_bytes
        worst = max(worst, total / probe)
    return worst


def fit_chunk(plan: Plan, max_bytes: int, workers: int = 1) -> Plan:
    """Set ``plan.chunk`` to the most seeds whose estimated memory fits in ``max_bytes`` (a chunk's seeds are
    split over the devices, or over ``workers`` processes, so all of them together hold one chunk).

    Args:
      plan: the plan (changed in place).
      max_bytes: the memory a chunk may take.
      workers: the worker processes a chunk is split over.

    Returns:
      The plan.
    """
    per_seed = bytes_per_seed(plan)
    chunk = int(max(1, min(plan.seeds, max_bytes // max(per_seed, 1.0))))
    # a chunk is padded to a multiple of the devices (or workers) it is split over
    n = workers if workers > 1 else sharding.local_mesh().devices.size
    plan.chunk = max(1, chunk // n * n) if chunk < plan.seeds else chunk
    return plan


def _in_process(plan: Plan, chunks: list, show=None, writes: bool = False):
    """``(c, arrays)`` of each chunk in ``chunks``, computed in this process on the local mesh (``show``: its
    :class:`Progress`; ``writes``: this process then writes the run folder)."""
    mesh = sharding.local_mesh()
    width = sharding.padded_size(plan.chunk, mesh)  # fixed: one compilation per group
    stacked = [engine.stack_grid(g.params) for g in plan.groups]
    compiled = _compile_groups(plan, mesh, width, stacked, show, writes) if chunks else []
    for c in chunks:
        lo, hi = files.chunk_identity(plan, c)["seeds"]
        yield c, run_seeds(plan, compiled, stacked, lo, width, hi - lo, show)


def run_parts(plan: Plan, index: int, workers: int, width: int, parts, writes: bool = False, show=None,
              spare=None):
    """Worker ``index`` of ``workers``'s share of a run (:class:`mobandit_jax.runner.workers.Workers`):
    compile every group at ``width`` seeds on one device, starting at group ``index G / workers`` (so
    that workers with an empty compilation cache compile different programs first), then yield
    ``(c, start, arrays)`` for each ``(c, start, n)`` of ``parts()`` (``writes``: this process then
    writes the run folder: :func:`prefetch_writers` of the ``spare`` cores once every group is compiled;
    ``show``: this process's :class:`Progress`, worker processes have none).

    Args:
      plan: the plan.
      index: this worker's index.
      workers: the run's workers.
      width: seeds per part.
      parts: ``parts()`` yields the ``(c, start, n)`` this worker takes.
      writes: this process writes the run folder.
      show: this process's :class:`Progress`, or None.
      spare: the run's cores (:func:`prefetch_writers`).

    Returns:
      A generator of ``(c, start, arrays)``.
    """
    mesh = sharding.local_mesh(1)
    stacked = [engine.stack_grid(g.params) for g in plan.groups]
    keys = engine.seed_keys(plan.base_seed, np.arange(width))
    n_groups, first = len(plan.groups), index * len(plan.groups) // workers
    compiled, _ = _programs(plan, mesh, keys, stacked, show, order=[(first + i) % n_groups for i in range(n_groups)])
    if writes:
        prefetch_writers(spare)
    for c, start, n in parts():
        yield c, start, run_seeds(plan, compiled, stacked, start, width, n, show)


class Relay(Progress):
    """A worker process's :class:`Progress` (``live``: its programs have the engine's callback): no bar and
    no notes; each count goes to the run's process (``tell``, the worker's task's, see
    :class:`mobandit_jax.runner.workers.Workers`), whose bar adds it (:meth:`Progress.elsewhere`)."""

    def __init__(self, plan: Plan, tell):
        super().__init__(plan, [], [], live=True)
        self._tell = tell

    def note(self, text: str):
        """No note: the run's process shows its own.

        Args:
          text: the note (dropped).

        Returns:
          None.
        """

    def _add(self, c: int, units: int):
        if units:
            self._tell(("progress", c, units))


def work_on_parts(spec, x64: bool, workers: int, live: bool, index: int, width: int, parts, tell):
    """A worker process's task: build the plan of ``spec`` and run its share (:func:`run_parts`).

    Args:
      spec: the run's :class:`~mobandit_jax.experiment_spec.ExperimentSpec`.
      x64: compute in float64.
      workers: the run's workers.
      live: count its checkpoints on the run's progress bar (:class:`Relay`).
      index: this worker's index.
      width: seeds per part.
      parts: ``parts()`` yields the parts ``(c, start, n)`` this worker takes.
      tell: sends a message to the run's process.

    Returns:
      A generator of ``(c, start, arrays)``, one per part.
    """
    if x64:
        jax.config.update("jax_enable_x64", True)
    plan = build(spec)
    yield from run_parts(plan, index, workers, width, parts, show=Relay(plan, tell) if live else None)


def _execute(plan: Plan, out_dir=None, progress: bool = True, workers=1, figures: bool = True,
             band: str = "ci") -> Results | None:
    """Run the chunks that are not on disk yet; process 0 then merges them into :class:`Results`.

    With ``out_dir`` the chunks and the result files are written there (process 0 writes the
    results; other processes return None); with ``out_dir=None`` every chunk runs (no chunk of this
    host is left to another), stays in memory, and nothing is written. ``workers > 1`` computes the
    chunks on that many single-device workers, one per core: this process and ``workers - 1`` worker
    processes (:mod:`mobandit_jax.runner.workers`; CPU, single host), with the same results; ``workers``
    may also be the processes of :func:`mobandit_jax.runner.workers.start_run_workers` (the caller
    closes them). Chunk files are written on a thread while the next chunk computes. ``progress``: notes
    and, where stderr is a terminal, a bar that advances once per checkpoint (:class:`Progress`).
    ``figures=False``: the run folder gets no figures (:meth:`mobandit_jax.analysis.results.Results.write`);
    ``band``: what the report's cells and the figures' bands are (default the mean and its 95% CI).
    """
    out = None if out_dir is None else Path(out_dir)
    total = math.ceil(plan.seeds / plan.chunk)
    mine = sharding.process_share(total) if out is not None else range(total)
    todo = [c for c in mine if out is None or not files.own_chunk(plan, out, c)]
    writes = out is not None and jax.process_index() == 0
    kept = []  # the chunks' arrays, when they stay in memory
    show = Progress(plan, mine, todo) if progress else None
    t0 = time.time()
    started = not isinstance(workers, int)
    if started:
        pool = workers
    elif workers > 1 and todo:
        pool = local_workers.start_run_workers(plan.spec, files.precision() == "float64", workers, plan.chunk,
                                               show is not None and show.live)
    else:
        pool = None
    if pool is not None and todo:
        if show is not None:
            show.note(f"compiling {len(plan.groups)} program(s) in this process and in each of {len(pool.procs)} "
                      "worker process(es), one core each...")
        computed = pool.run_chunks(plan.chunk, plan.seeds, todo,
                                   functools.partial(run_parts, plan, 0, pool.count, writes=writes, show=show,
                                                     spare=pool.cores),
                                   None if show is None else show.elsewhere)
    else:
        computed = _in_process(plan, todo, show, writes)
    # leaving the block, an interrupt included, waits for the chunks already computed to be written
    with (contextlib.closing(computed), (contextlib.nullcontext() if started or pool is None else pool),
          ThreadPoolExecutor(1) as writer):
        writes = []
        for c, arrays in computed:
            ident = files.chunk_identity(plan, c)
            arrays["seed_index"] = np.arange(*ident["seeds"])
            if out is None:
                kept.append((c, arrays))
            else:
                writes.append(writer.submit(files.write_chunk, files.chunk_path(out, c), arrays, ident))
            for w in [w for w in writes if w.done()]:
                w.result()  # a failed write stops the run
                writes.remove(w)  # only pending writes stay: the check is not quadratic in the chunks
            if show is not None:
                show.chunk_done(c)
        for w in writes:
            w.result()
    if show is not None:
        show.close()
    wall = time.time() - t0
    if out is None:
        return Results.merge(plan, files.concat_chunks([a for _, a in sorted(kept, key=lambda x: x[0])]), wall,
                             files.marker(plan))
    sharding.barrier(f"chunks-done-{files.fingerprint(plan)}")
    if jax.process_index() != 0:
        return None
    for c in range(total):
        if not files.own_chunk(plan, out, c):
            raise files.RunFolderError(f"{files.chunk_path(out, c)} is missing or unreadable after the run")
    merged = files.merge_chunks([files.chunk_path(out, c) for c in range(total)])
    res = Results.merge(plan, merged, wall, files.marker(plan))
    res.write(out, figures, band)
    return res


def execute(plan: Plan, out_dir=None, progress: bool = True, workers=1, figures: bool = True,
            band: str = "ci") -> Results | None:
    """Run the chunks that are not on disk yet and merge them (:func:`_execute`), after
    :func:`mobandit_jax.runner.runtime.configure` (the CPU settings the specs were timed with); the run folder is
    checked and stays locked while this process writes it (:func:`mobandit_jax.runner.run_folder.check_fingerprint`).

    Args:
      plan: the :class:`Plan`.
      out_dir: the run folder, or None (nothing written).
      progress: notes and a progress bar on stderr.
      workers: worker processes, or the started :class:`~mobandit_jax.runner.workers.Workers`.
      figures: draw the run folder's figures.
      band: what the report's cells and the figures' bands are.

    Returns:
      The :class:`~mobandit_jax.analysis.results.Results` (None in a process other than 0 of a multi-host run).
    """
    runtime.configure()
    held = None if out_dir is None else files.check_fingerprint(plan, Path(out_dir))
    with held or contextlib.nullcontext():
        return _execute(plan, out_dir, progress, workers, figures, band)
