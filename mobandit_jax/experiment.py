"""From a resolved spec to compiled, chunked, resumable runs.

``build(spec)`` expands the grid, builds every environment, policy and metric set through the
registries, and groups the (grid point, policy option) pairs that share one compiled function
(same policy code, same static shapes). ``execute(plan, out_dir)`` runs the seeds in chunks: each
chunk runs every group, then its arrays are written atomically to ``chunks/`` — an interrupted run
loses at most the chunk in flight and resumes from the chunks on disk.
"""
from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import jax
import jax.numpy as jnp

from . import config as cfg
from . import engine, metrics, policies, problems, results, sharding
from .devices import cpu_cores
from .kernels import validate_cone
from .policies.base import POLICIES
from .problems.base import Context

DEFAULT_CHECKPOINTS = 100
DEFAULT_CHUNK = 256


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
        return name
    raise cfg.ConfigError(f"unknown policy {name!r}" + (f" in family {family!r}" if family else "")
                          + f"; registered: {sorted(POLICIES)}")


def make_context(resolved: dict, inst, horizon: int) -> Context:
    """The :class:`Context` policy and metric builders read, from a resolved spec and its environment."""
    info = dict(inst.info)
    W = resolved.get("preference", {}).get("W", info.get("W"))
    if W is not None:
        W = validate_cone(W)
        if W.shape[1] != inst.env.dim:
            raise cfg.ConfigError(f"preference matrix W has {W.shape[1]} columns but the arms have "
                                  f"d = {inst.env.dim} objectives")
    return Context(
        num_arms=inst.env.num_arms, dim=inst.env.dim, horizon=horizon, means=np.asarray(inst.means),
        config=resolved, W=W, ref=info.get("ref"),
        mean_costs=inst.mean_costs, budget=info.get("budget"), cost_floor=info.get("cost_floor"),
        slate_size=int(info.get("slate_size", 0)), info={**info, "env": inst.env},
    )


def _signature(tree) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return (str(treedef),) + tuple((np.shape(x), str(jnp.asarray(x).dtype)) for x in leaves)


def build(spec: dict) -> Plan:
    """Expand and build every run of a validated spec."""
    exp = spec["experiment"]
    points = cfg.grid_points(spec)
    built = []
    for setting, resolved in points:
        inst = problems.base.make(resolved["env"], resolved)
        horizon = max(exp["horizon"], int(inst.info.get("horizon", 0)))
        built.append((setting, resolved, inst, horizon))
    horizon = max(h for *_, h in built)
    record_every = exp["record_every"] or max(1, math.ceil(horizon / DEFAULT_CHECKPOINTS))

    groups: dict = {}
    names, reduce, grid = {}, {}, {}
    for entry in spec["policies"]:
        label = entry.get("label", entry["name"])
        if label in grid:
            raise cfg.ConfigError(f"two [[policies]] entries share the label {label!r}; give each a distinct 'label'")
        key = resolve_policy_name(entry["name"], entry.get("family"))
        family = POLICIES[key].family
        grid[label] = []
        for setting, resolved, inst, _ in built:
            ctx = make_context(resolved, inst, horizon)
            mset, mparams = metrics.base.make(family, ctx)
            names.setdefault(label, tuple(mset.names))
            reduce.setdefault(label, dict(zip(mset.names, mset.reduce)))
            for options in cfg.policy_points(entry):
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
    chunk = exp["chunk"] or min(exp["seeds"], DEFAULT_CHUNK)
    return Plan(spec, list(groups.values()), horizon, record_every, exp["seeds"], exp["seed"],
                min(chunk, exp["seeds"]), names, reduce, grid)


def fingerprint(plan: Plan) -> str:
    """A hash of everything that determines the per-seed results (not the seed count)."""
    spec = {k: v for k, v in plan.spec.items() if k != "experiment"}
    exp = {k: v for k, v in plan.spec["experiment"].items() if k not in ("seeds", "chunk")}
    text = json.dumps({"spec": spec, "exp": exp, "horizon": plan.horizon, "record_every": plan.record_every,
                       "chunk": plan.chunk}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _progress_bar(total: int):
    """A tqdm bar over this process's chunks, on stderr."""
    from tqdm import tqdm

    return tqdm(total=total, unit="chunk", file=sys.stderr, dynamic_ncols=True)


def _note(text: str):
    """A line on stderr that leaves the progress bar intact."""
    from tqdm import tqdm

    tqdm.write(text, file=sys.stderr)


def _compile_groups(plan: Plan, mesh, width: int, stacked: list, progress: bool) -> list:
    """Every group's sharded program compiled ahead of the first chunk (groups side by side on the
    cores), with a line on stderr."""
    keys = engine.seed_keys(plan.base_seed, np.arange(width))
    n = mesh.devices.size
    if progress:
        _note(f"compiling {len(plan.groups)} program(s) for {n} device(s)...")
    t0 = time.time()
    lowered = [sharding.compile_sharded(engine.batch(g.run), mesh).lower(params, keys)
               for g, params in zip(plan.groups, stacked)]
    with ThreadPoolExecutor(min(len(lowered), cpu_cores()) or 1) as pool:  # XLA compiles release the GIL
        compiled = list(pool.map(lambda low: low.compile(), lowered))
    if progress:
        _note(f"compiled in {time.time() - t0:.1f} s")
    return compiled


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


def parse_bytes(text: str) -> int:
    """``"512MB"``, ``"2GiB"``, ``"1e9"`` -> bytes."""
    units = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
    t = text.strip().upper()
    num = t.rstrip("KMGIB")
    unit = t[len(num):]
    if unit not in units or not num:
        raise ValueError(f"--max-memory {text!r}: expected a size such as 512MB or 2GiB")
    return int(float(num) * units[unit])


def fit_chunk(plan: Plan, max_bytes: int) -> Plan:
    """Set ``plan.chunk`` to the most seeds whose estimated memory fits in ``max_bytes``."""
    per_seed = bytes_per_seed(plan)
    chunk = int(max(1, min(plan.seeds, max_bytes // max(per_seed, 1.0))))
    n = sharding.local_mesh().devices.size  # a chunk is padded to a multiple of the devices it is split over
    plan.chunk = max(1, chunk // n * n) if chunk < plan.seeds else chunk
    return plan


def _check_fingerprint(plan: Plan, out: Path):
    fp = fingerprint(plan)
    meta_path = out / "run.json"
    if meta_path.exists():
        old = json.loads(meta_path.read_text())
        if old.get("fingerprint") != fp:
            raise RuntimeError(
                f"{out} holds results of a different experiment (fingerprint {old.get('fingerprint')} != {fp}); "
                "choose another --out directory or delete it"
            )
    if jax.process_index() == 0:
        results.write_json(meta_path, {"fingerprint": fp, "spec": plan.spec, "horizon": plan.horizon,
                                       "record_every": plan.record_every, "chunk": plan.chunk})


def execute(plan: Plan, out_dir, progress: bool = True) -> dict:
    """Run this process's chunks that are not on disk yet; process 0 then merges and writes results."""
    out = Path(out_dir)
    (out / "chunks").mkdir(parents=True, exist_ok=True)
    _check_fingerprint(plan, out)
    mesh = sharding.local_mesh()
    width = sharding.padded_size(plan.chunk, mesh)  # fixed: one compilation per group
    stacked = [engine.stack_params(g.params) for g in plan.groups]
    compiled = None  # compiled before the first chunk that is not on disk
    mine = sharding.process_share(math.ceil(plan.seeds / plan.chunk))
    bar = _progress_bar(len(mine)) if progress else None
    t0 = time.time()
    for c in mine:
        path = out / "chunks" / f"chunk_{c:05d}.npz"
        lo, hi = c * plan.chunk, min((c + 1) * plan.chunk, plan.seeds)
        if path.exists() and results.chunk_seed_count(path) == hi - lo:
            if bar:
                bar.update()
            continue
        if compiled is None:
            compiled = _compile_groups(plan, mesh, width, stacked, progress)
        keys = engine.seed_keys(plan.base_seed, np.arange(lo, lo + width))
        arrays = {}
        for g, fn, params in zip(plan.groups, compiled, stacked):
            res = jax.device_get(fn(params, keys))
            for m, value in res.items():
                for row, gi in enumerate(g.members):
                    arrays[f"{g.label}|{gi}|{m}"] = np.asarray(value[row, : hi - lo])
        arrays["seed_index"] = np.arange(lo, hi)
        results.write_npz(path, arrays)
        if bar:
            bar.update()
    if bar:
        bar.close()
    wall = time.time() - t0
    sharding.barrier(f"chunks-done-{fingerprint(plan)}")
    if jax.process_index() != 0:
        return {"records": []}
    return results.finalize(plan, out, wall)
