"""From a resolved spec to compiled, chunked, resumable runs.

``build(spec)`` expands the grid, builds every environment, policy and metric set through the
registries, and groups the (grid point, policy option) pairs that share one compiled function
(same policy code, same static shapes). ``execute(plan, out_dir)`` runs the seeds in chunks: each
chunk runs every group, then its arrays are written atomically to ``chunks/`` — an interrupted run
loses at most the chunk in flight and resumes from the chunks on disk. With ``out_dir=None`` the
chunks stay in memory and nothing is written. Either way the merged chunks become a
:class:`mobandit_jax.run_results.Results`.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import math
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import jax
import jax.numpy as jnp

from . import config as cfg
from . import engine, local_workers, metrics, policies, problems, results, runtime, sharding
from .budget import with_budget
from .devices import cpu_cores
from .kernels import validate_cone
from .policies.base import POLICIES
from .run_results import Results
from .types import Context

DEFAULT_CHECKPOINTS = 100


@dataclass
class Group:
    """Grid points that share one compiled, batched run function."""

    label: str
    name: str
    family: str
    run: object
    params: list = field(default_factory=list)  # RunParams per member
    members: list = field(default_factory=list)  # (grid index within label, setting, options)


@dataclass
class Plan:
    """A built experiment: groups, shared sizes and the metadata written next to the results."""

    spec: dict
    groups: list
    horizon: int
    record_every: int
    seeds: int
    base_seed: int
    chunk: int
    names: dict  # label -> metric names
    reduce: dict  # label -> {metric: reducer}
    grid: dict  # label -> [{"setting", "params"}]


def resolve_policy_name(name: str, family: str | None) -> str:
    """Registry key for a policy entry: ``family/name`` first, then ``name``."""
    if family and f"{family}/{name}" in POLICIES:
        return f"{family}/{name}"
    if name in POLICIES:
        if family and POLICIES[name].family != family:
            raise cfg.ConfigError(f"policy {name!r} is in family {POLICIES[name].family!r}, not family = {family!r}; "
                                  "drop 'family' or write the registered one (see `mobandit list`)")
        return name
    raise cfg.ConfigError(f"unknown policy {name!r}" + (f" in family {family!r}" if family else "")
                          + f"; registered: {sorted(POLICIES)}")


def make_context(resolved: dict, inst, horizon: int) -> Context:
    """The :class:`Context` policy and metric builders read, from a resolved spec and its environment."""
    W = resolved.get("preference", {}).get("W")
    if W is not None:
        W = validate_cone(W)
        if W.shape[1] != inst.env.dim:
            raise cfg.ConfigError(f"preference matrix W has {W.shape[1]} columns but the arms have "
                                  f"d = {inst.env.dim} objectives")
    return Context.of(inst, horizon, W)


def _signature(tree) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return (str(treedef),) + tuple((np.shape(x), str(jnp.asarray(x).dtype)) for x in leaves)


def build(spec: dict) -> Plan:
    """Expand and build every run of a validated spec (after :func:`mobandit_jax.runtime.configure`)."""
    runtime.configure()
    exp = spec["experiment"]
    points = cfg.grid_points(spec)
    built = []
    for setting, resolved in points:
        inst = with_budget(problems.base.make(resolved["env"], resolved), resolved.get("budget"))
        horizon = max(exp["horizon"], int(inst.horizon))
        built.append((setting, resolved, inst, horizon))
    horizon = max(h for *_, h in built)
    record_every = exp["record_every"] or max(1, math.ceil(horizon / DEFAULT_CHECKPOINTS))

    contexts = [make_context(resolved, inst, horizon) for _, resolved, inst, _ in built]
    family_metrics: dict = {}  # (grid point, family) -> (MetricSet, mparams), built once for all its policies
    groups: dict = {}
    names, reduce, grid = {}, {}, {}
    for entry in spec["policies"]:
        label = entry.get("label", entry["name"])
        if label in grid:
            raise cfg.ConfigError(f"two [[policies]] entries share the label {label!r}; give each a distinct 'label'")
        key = resolve_policy_name(entry["name"], entry.get("family"))
        family = POLICIES[key].family
        grid[label] = []
        for i, (setting, resolved, inst, _) in enumerate(built):
            ctx = contexts[i]
            if (i, family) not in family_metrics:
                family_metrics[i, family] = metrics.base.make(family, ctx)
            mset, mparams = family_metrics[i, family]
            names.setdefault(label, tuple(mset.names))
            reduce.setdefault(label, dict(zip(mset.names, mset.reduce)))
            for options in cfg.policy_points(entry, setting):
                policy, pparams, static_key = policies.base.make(key, ctx, **options)
                budget = ctx.budget if ctx.budget is not None else np.inf
                budgeted = bool(np.isfinite(budget))
                params = engine.RunParams(inst.params, pparams, mparams, jnp.asarray(budget, jnp.float32))
                gkey = (label, static_key, inst.static_key, _signature(params), budgeted)
                if gkey not in groups:
                    run = engine.make_run(inst.env, policy, mset, horizon, record_every, budgeted)
                    groups[gkey] = Group(label, entry["name"], family, run)
                g = len(grid[label])
                grid[label].append({"setting": setting, "params": {"name": entry["name"], **options}})
                groups[gkey].params.append(params)
                groups[gkey].members.append(g)
    return Plan(spec, list(groups.values()), horizon, record_every, exp["seeds"], exp["seed"], cfg.chunk_size(spec),
                names, reduce, grid)


def checked_build(spec: dict) -> Plan:
    """:func:`build`, with a bad value met while building reported as a one-line :class:`ConfigError`.

    Environment, policy and metric builders raise ``ValueError`` / ``KeyError`` / ``TypeError`` on
    values the spec parser cannot check by itself; the message gains the spec key holding the value.
    """
    for entry in spec["policies"]:
        _check_option_types(entry)
    try:
        return build(spec)
    except cfg.ConfigError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, ZeroDivisionError, OverflowError) as err:
        msg = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
        keys = [k for k, v in _spec_values(spec)
                if isinstance(v, str) and repr(v) in msg and k.split(".")[-1].split()[-1] not in msg]
        named = isinstance(err, KeyError) and " " in msg  # the registries' own messages name the key
        where = f"{keys[0]}: " if keys else "" if named else f"building env kind {spec['env']['kind']!r}: "
        raise cfg.ConfigError(where + " ".join(msg.split())) from err


def _check_option_types(entry: dict):
    """Each option (and swept value) of a [[policies]] entry has the type of the registry default."""
    default = POLICIES[resolve_policy_name(entry["name"], entry.get("family"))].defaults
    values = [(k, v) for k, v in entry.items() if k not in cfg.POLICY_META_KEYS]
    values += [(k, v) for k, vs in entry.get("sweep", {}).items() for v in vs]
    for k, v in values:
        want = default.get(k)
        if isinstance(v, dict):  # a table of per-setting values, resolved by the policy's builder
            continue
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        if (isinstance(want, bool) and not isinstance(v, bool)) or (
                isinstance(want, (int, float)) and not isinstance(want, bool) and not number) or (
                isinstance(want, str) and not isinstance(v, str)):
            raise cfg.ConfigError(f"policy {entry.get('label', entry['name'])!r}: option {k} = {v!r} must be "
                                  f"{type(want).__name__} like its default {want!r}")


def _spec_values(spec: dict):
    """``(dotted key, value)`` of every env and preference value, sweep value and scenario override."""
    for table in ("env", "preference", "experiment"):
        for k, v in spec.get(table, {}).items():
            if k != "kind":  # a kind is named by the registry's own message
                yield f"{table}.{k}", v
    for k, values in spec.get("sweep", {}).items():
        for v in values:
            yield f"sweep.{k}", v
    for sc in spec.get("scenarios", []):
        for k, v in sc.items():
            yield f"[[scenarios]] {sc['name']!r} {k}", v


def precision() -> str:
    """The float precision runs compute in: ``"float64"`` under ``--x64``, else ``"float32"``."""
    return "float64" if jax.config.jax_enable_x64 else "float32"


def fingerprint(plan: Plan) -> str:
    """A hash of everything that determines the per-seed results (not the seed count), precision included.

    float32 runs hash as before precision was recorded, so their earlier run folders still resume.
    """
    spec = {k: v for k, v in plan.spec.items() if k != "experiment"}
    exp = {k: v for k, v in plan.spec["experiment"].items() if k not in ("seeds", "chunk")}
    ident = {"spec": spec, "exp": exp, "horizon": plan.horizon, "record_every": plan.record_every, "chunk": plan.chunk}
    if precision() != "float32":
        ident["precision"] = precision()
    text = json.dumps(ident, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def chunk_identity(plan: Plan, c: int) -> dict:
    """What chunk ``c`` of a run must hold: spec fingerprint, seed index range, precision, chunk size."""
    lo, hi = c * plan.chunk, min((c + 1) * plan.chunk, plan.seeds)
    return {"fingerprint": fingerprint(plan), "seeds": [lo, hi], "precision": precision(), "chunk": plan.chunk}


def chunks_kept(plan: Plan, out) -> tuple:
    """``(chunks on disk whose identity matches the plan, chunks in the plan)``."""
    total = math.ceil(plan.seeds / plan.chunk)
    kept = sum(results.chunk_identity(results.chunk_path(out, c)) == chunk_identity(plan, c) for c in range(total))
    return kept, total


def _progress_bar(total: int):
    """A tqdm bar over this process's chunks, on stderr."""
    from tqdm import tqdm

    return tqdm(total=total, unit="chunk", file=sys.stderr, dynamic_ncols=True)


def _note(text: str):
    """A line on stderr that leaves the progress bar intact."""
    from tqdm import tqdm

    tqdm.write(text, file=sys.stderr)


WRITERS = ("mobandit_jax.report", "matplotlib.backends.backend_agg")  # what writing a run folder imports


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


def marker(plan: Plan) -> dict:
    """The ``run.json`` of the plan's run folder: tool, fingerprint, precision, spec, sizes."""
    return {"tool": results.TOOL, "fingerprint": fingerprint(plan), "precision": precision(), "spec": plan.spec,
            "horizon": plan.horizon, "record_every": plan.record_every, "chunk": plan.chunk}


def _check_fingerprint(plan: Plan, out: Path):
    """Refuse a folder that is not a run of this tool or holds another experiment; write ``run.json``.

    Process 0 checks and writes the marker and clears temporary files of killed writes, before any
    process writes a chunk.
    """
    fp = fingerprint(plan)
    if jax.process_index() == 0:
        old = results.run_marker(out)
        if old is not None and old.get("fingerprint") != fp:
            if old.get("precision", precision()) != precision():
                raise results.RunFolderError(
                    f"{out} holds a {old['precision']} run and this run computes in {precision()}; run it "
                    f"{'with' if old['precision'] == 'float64' else 'without'} --x64 or choose another --out folder")
            raise results.RunFolderError(
                f"{out} holds results of a different experiment (fingerprint {old.get('fingerprint')} != {fp}); "
                "choose another --out folder or delete it")
        results.write_json(out / results.MARKER, marker(plan))
        results.remove_partial_writes(out)
    sharding.barrier(f"run-folder-{fp}")


def _own_chunk(plan: Plan, out: Path, c: int) -> bool:
    """True if chunk ``c`` is on disk with the plan's identity; refuses a chunk of another experiment."""
    found = results.chunk_identity(results.chunk_path(out, c))
    want = chunk_identity(plan, c)
    if found is not None and found.get("fingerprint") != want["fingerprint"]:
        raise results.RunFolderError(
            f"{results.chunk_path(out, c)} belongs to another experiment (fingerprint {found.get('fingerprint')} "
            f"!= {want['fingerprint']}); it is not merged: choose another --out folder or delete it")
    return found == want


def _in_process(plan: Plan, chunks: list, progress: bool, writes: bool = False):
    """``(c, arrays)`` of each chunk in ``chunks``, computed in this process on the local mesh (``writes``:
    this process then writes the run folder)."""
    mesh = sharding.local_mesh()
    width = sharding.padded_size(plan.chunk, mesh)  # fixed: one compilation per group
    stacked = [engine.stack_params(g.params) for g in plan.groups]
    compiled = _compile_groups(plan, mesh, width, stacked, progress, writes) if chunks else []
    for c in chunks:
        lo, hi = chunk_identity(plan, c)["seeds"]
        yield c, run_seeds(plan, compiled, stacked, lo, width, hi - lo)


def run_parts(plan: Plan, index: int, workers: int, width: int, parts, writes: bool = False):
    """Worker ``index`` of ``workers``'s share of a run (:class:`mobandit_jax.local_workers.Workers`):
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
    processes (:mod:`mobandit_jax.local_workers`; CPU, single host), with the same results; ``workers``
    may also be the processes of :func:`mobandit_jax.local_workers.start_run_workers` (the caller
    closes them). Chunk files are written on a thread while the next chunk computes. Applies
    :func:`mobandit_jax.runtime.configure` first (the CPU settings the specs were timed with).
    """
    runtime.configure()
    out = None if out_dir is None else Path(out_dir)
    if out is not None:
        _check_fingerprint(plan, out)
    total = math.ceil(plan.seeds / plan.chunk)
    mine = sharding.process_share(total) if out is not None else range(total)
    todo = [c for c in mine if out is None or not _own_chunk(plan, out, c)]
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
        pool = local_workers.start_run_workers(plan.spec, precision() == "float64", workers, plan.chunk)
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
            ident = chunk_identity(plan, c)
            arrays["seed_index"] = np.arange(*ident["seeds"])
            if out is None:
                kept.append((c, arrays))
            else:
                writes.append(writer.submit(results.write_chunk, results.chunk_path(out, c), arrays, ident))
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
        return Results.merge(plan, results.concat_chunks([a for _, a in sorted(kept, key=lambda x: x[0])]), wall,
                             marker(plan))
    sharding.barrier(f"chunks-done-{fingerprint(plan)}")
    if jax.process_index() != 0:
        return None
    for c in range(total):
        if not _own_chunk(plan, out, c):
            raise results.RunFolderError(f"{results.chunk_path(out, c)} is missing or unreadable after the run")
    merged = results.merge_chunks([results.chunk_path(out, c) for c in range(total)])
    res = Results.merge(plan, merged, wall, marker(plan))
    res.write(out)
    return res
