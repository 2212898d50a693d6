"""Execution of a plan: compiled, chunked, resumable runs.

``execute(plan, out_dir)`` runs the seeds in chunks: each chunk runs every group, then its arrays are
written atomically to ``chunks/`` (:mod:`mobandit_jax.runner.run_folder`); an interrupted run loses at
most the chunk in flight and resumes from the chunks on disk. With ``out_dir=None`` the chunks stay in
memory and nothing is written. Either way the merged chunks become a
:class:`mobandit_jax.analysis.files.Results`.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import math
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import jax

from . import run_folder as files
from . import runtime, sharding, workers as local_workers
from .devices import cpu_cores
from .plans import Group, Plan, build
from .. import engine
from ..analysis.results import Results

def _progress_bar(total: int):
    """A tqdm bar over this process's chunks, on stderr."""
    from tqdm import tqdm

    return tqdm(total=total, unit="chunk", file=sys.stderr, dynamic_ncols=True)


def _note(text: str):
    """A line on stderr that leaves the progress bar intact."""
    from tqdm import tqdm

    tqdm.write(text, file=sys.stderr)


WRITERS = ("mobandit_jax.analysis.report", "matplotlib.backends.backend_agg")  # what writing a run folder imports


def _import_writers():
    try:
        for name in WRITERS:
            importlib.import_module(name)
    except Exception:  # noqa: BLE001 -- the writer's own import, later, reports it in the main thread
        pass


def prefetch_writers():
    """Import the run folder's writers (matplotlib: about 0.6 s) on a thread, to be called once tracing is
    done: XLA's compilation and computation release the GIL, so the import costs no wall time there."""
    threading.Thread(target=_import_writers, daemon=True).start()


def lower_group(group: Group, params, mesh, keys):
    """``group``'s batched run lowered with the seed axis of ``keys`` sharded over ``mesh`` (``.compile()`` it)."""
    return sharding.compile_sharded(engine.batch(group.run), mesh).lower(params, keys)


def _compile_groups(plan: Plan, mesh, width: int, stacked: list, progress: bool, writes: bool = False) -> list:
    """Every group's sharded program compiled ahead of the first chunk (groups side by side on the
    cores, each while the next is traced), with a line on stderr; ``writes``: :func:`prefetch_writers`
    once every group is traced."""
    keys = engine.seed_keys(plan.base_seed, np.arange(width))
    n = mesh.devices.size
    if progress:
        _note(f"compiling {len(plan.groups)} program(s) for {n} device(s)...")
    t0 = time.time()
    # each group compiles while the next is traced: XLA compiles release the GIL, tracing holds it
    with ThreadPoolExecutor(min(len(plan.groups), cpu_cores()) or 1) as pool:
        futures = [pool.submit(lower_group(g, params, mesh, keys).compile) for g, params in zip(plan.groups, stacked)]
        if writes:
            prefetch_writers()
        compiled = [f.result() for f in futures]
    if progress:
        _note(f"compiled in {time.time() - t0:.1f} s")
    return compiled


def run_seeds(plan: Plan, compiled: list, stacked: list, start: int, width: int, n: int) -> dict:
    """Every group's arrays for the seeds ``[start, start + n)``, computed on ``width >= n`` lanes."""
    keys = engine.seed_keys(plan.base_seed, np.arange(start, start + width))
    arrays = {}
    for g, fn, params in zip(plan.groups, compiled, stacked):
        res = jax.device_get(fn(params, keys))
        for m, value in res.items():
            for row, gi in enumerate(g.members):
                arrays[f"{g.label}|{gi}|{m}"] = np.asarray(value[row, :n])
    return arrays


def bytes_per_seed(plan: Plan, probe: int = 8) -> float:
    """Estimated device bytes per seed: compiled memory analysis of each group at ``probe`` seeds."""
    worst = 0.0
    for g in plan.groups:
        params = engine.stack_params(g.params)
        keys = engine.seed_keys(plan.base_seed, np.arange(probe))
        mem = jax.jit(engine.batch(g.run)).lower(params, keys).compile().memory_analysis()
        total = 0 if mem is None else mem.temp_size_in_bytes + mem.output_size_in_bytes
        worst = max(worst, total / probe)
    return worst


def fit_chunk(plan: Plan, max_bytes: int, workers: int = 1) -> Plan:
    """Set ``plan.chunk`` to the most seeds whose estimated memory fits in ``max_bytes`` (a chunk's seeds are
    split over the devices, or over ``workers`` processes, so all of them together hold one chunk)."""
    per_seed = bytes_per_seed(plan)
    chunk = int(max(1, min(plan.seeds, max_bytes // max(per_seed, 1.0))))
    # a chunk is padded to a multiple of the devices (or workers) it is split over
    n = workers if workers > 1 else sharding.local_mesh().devices.size
    plan.chunk = max(1, chunk // n * n) if chunk < plan.seeds else chunk
    return plan


def _in_process(plan: Plan, chunks: list, progress: bool, writes: bool = False):
    """``(c, arrays)`` of each chunk in ``chunks``, computed in this process on the local mesh (``writes``:
    this process then writes the run folder)."""
    mesh = sharding.local_mesh()
    width = sharding.padded_size(plan.chunk, mesh)  # fixed: one compilation per group
    stacked = [engine.stack_params(g.params) for g in plan.groups]
    compiled = _compile_groups(plan, mesh, width, stacked, progress, writes) if chunks else []
    for c in chunks:
        lo, hi = files.chunk_identity(plan, c)["seeds"]
        yield c, run_seeds(plan, compiled, stacked, lo, width, hi - lo)


def run_parts(plan: Plan, index: int, workers: int, width: int, parts, writes: bool = False):
    """Worker ``index`` of ``workers``'s share of a run (:class:`mobandit_jax.runner.workers.Workers`):
    compile every group at ``width`` seeds on one device, starting at group ``index G / workers`` (so
    that workers with an empty compilation cache compile different programs first), then yield
    ``(c, start, arrays)`` for each ``(c, start, n)`` of ``parts()`` (``writes``: this process then
    writes the run folder: :func:`prefetch_writers` once every group is compiled)."""
    mesh = sharding.local_mesh(1)
    stacked = [engine.stack_params(g.params) for g in plan.groups]
    keys = engine.seed_keys(plan.base_seed, np.arange(width))
    n_groups, first = len(plan.groups), index * len(plan.groups) // workers
    compiled = [None] * n_groups
    for g in [(first + i) % n_groups for i in range(n_groups)]:
        compiled[g] = lower_group(plan.groups[g], stacked[g], mesh, keys).compile()
    if writes:
        prefetch_writers()
    for c, start, n in parts():
        yield c, start, run_seeds(plan, compiled, stacked, start, width, n)


def work_on_parts(spec: dict, x64: bool, workers: int, index: int, width: int, parts):
    """A worker process's task: build the plan of ``spec`` and run its share (:func:`run_parts`)."""
    if x64:
        jax.config.update("jax_enable_x64", True)
    yield from run_parts(build(spec), index, workers, width, parts)


def execute(plan: Plan, out_dir=None, progress: bool = True, workers=1) -> Results | None:
    """Run the chunks that are not on disk yet; process 0 then merges them into :class:`Results`.

    With ``out_dir`` the chunks and the result files are written there (process 0 writes the
    results; other processes return None); with ``out_dir=None`` every chunk runs (no chunk of this
    host is left to another), stays in memory, and nothing is written. ``workers > 1`` computes the
    chunks on that many single-device workers, one per core: this process and ``workers - 1`` worker
    processes (:mod:`mobandit_jax.runner.workers`; CPU, single host), with the same results; ``workers``
    may also be the processes of :func:`mobandit_jax.runner.workers.start_run_workers` (the caller
    closes them). Chunk files are written on a thread while the next chunk computes. Applies
    :func:`mobandit_jax.runner.runtime.configure` first (the CPU settings the specs were timed with).
    """
    runtime.configure()
    out = None if out_dir is None else Path(out_dir)
    if out is not None:
        files.check_fingerprint(plan, out)
    total = math.ceil(plan.seeds / plan.chunk)
    mine = sharding.process_share(total) if out is not None else range(total)
    todo = [c for c in mine if out is None or not files.own_chunk(plan, out, c)]
    writes = out is not None and jax.process_index() == 0
    kept = []  # the chunks' arrays, when they stay in memory
    bar = _progress_bar(len(mine)) if progress else None
    if bar:
        bar.update(len(mine) - len(todo))
    t0 = time.time()
    started = not isinstance(workers, int)
    if started:
        pool = workers
    elif workers > 1 and todo:
        pool = local_workers.start_run_workers(plan.spec, files.precision() == "float64", workers, plan.chunk)
    else:
        pool = None
    if pool is not None and todo:
        if progress:
            _note(f"compiling {len(plan.groups)} program(s) in this process and in each of {len(pool.procs)} "
                  "worker process(es), one core each...")
        computed = pool.run_chunks(plan.chunk, plan.seeds, todo,
                                   functools.partial(run_parts, plan, 0, pool.count, writes=writes))
    else:
        computed = _in_process(plan, todo, progress, writes)
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
            if bar:
                bar.update()
        for w in writes:
            w.result()
    if bar:
        bar.close()
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
    res.write(out)
    return res
