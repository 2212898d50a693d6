"""From a validated spec to a plan: every environment, policy and metric set built, grouped by program.

``build(spec)`` expands the grid, builds every environment, policy and metric set through the
registries (:mod:`mobandit_jax.registry`), and groups the (grid point, policy option) pairs that share
one compiled function (same policy code, same static shapes). ``Plan.truth`` holds each setting's ground
truth (``truth.json``), computed on first use (:class:`mobandit_jax.analysis.truth.TruthTable`).
:func:`checked_build` reports a bad value met while building as a one-line
:class:`~mobandit_jax.types.ConfigError` naming its spec key.
"""
from __future__ import annotations

import dataclasses
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

from .. import engine, metrics, plugins, policies, problems  # noqa: F401  (importing fills the registries)
from ..analysis.truth import TruthTable
from ..kernels import validate_cone
from ..problems.budget import with_budget
from ..problems.cone import apply_cone
from ..registry import POLICIES, RegistryError, family_of, make_env, make_metrics, make_policy
from ..types import Context
from . import run_folder as files
from . import runtime
from . import spec as cfg
from .programs import signature

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
    plugins: str | None = None  # hash of the plugins' source (None: the spec names none)
    data: str | None = None  # hash of the data files the spec names (None: it names none)
    truth: Sequence = field(default_factory=list)  # truth.json's entry per grid setting, in grid order
    bounds: dict = field(default_factory=dict)  # label -> {metric: (low, high)} of its per-seed values (Metric.bounds)
    goal: dict = field(default_factory=dict)  # label -> {metric: "min" | "max" | ""} (Metric.goal)


def resolve_policy(entry: dict, spec: dict | None = None) -> str:
    """The registry name of a ``[[policies]]`` entry: its ``name``, and its ``family`` if given; a bare name that
    several families share (``pareto_ucb``) is decided by the families of ``spec``'s other entries, where exactly
    one of the name's families is among them (:meth:`~mobandit_jax.registry.Registry.resolve`).

    Args:
      entry: a ``[[policies]]`` entry.
      spec: the spec holding it (None: the entry alone decides).

    Returns:
      The registered name.

    Raises:
      ConfigError: one line, for an unknown or undecided name.
    """
    among = set()
    for other in (spec or {}).get("policies", ()):
        try:
            if other is not entry:
                among.add(POLICIES[POLICIES.resolve(other["name"], other.get("family"))].family)
        except RegistryError:  # an undecided or unknown name is reported at its own entry
            pass
    try:
        return POLICIES.resolve(entry["name"], entry.get("family"), among)
    except RegistryError as err:
        raise cfg.ConfigError(str(err)) from None


def cone_of(resolved: dict, inst):
    """The ``[preference] W`` of a resolved grid point, validated against the arms of ``inst`` (None: no cone)."""
    W = resolved.get("preference", {}).get("W")
    if W is None:
        return None
    W = validate_cone(W)
    if W.shape[1] != inst.env.dim:
        raise cfg.ConfigError(f"preference matrix W has {W.shape[1]} columns but the arms have "
                              f"d = {inst.env.dim} objectives")
    return W


def family_view(resolved: dict, inst, horizon: int, family: str) -> tuple:
    """``(instance, Context)`` that ``family``'s policies and metrics see: ``inst`` and the cone for a family that
    reads it (its registered ``reads_cone``; the Pareto order ``W = I`` where the spec has no ``[preference]``,
    :meth:`~mobandit_jax.registry.FamilyEntry.cone`), else the projection of ``inst`` under the cone
    (:func:`mobandit_jax.problems.cone.apply_cone`) and no cone."""
    W = cone_of(resolved, inst)
    entry = family_of(family)
    if entry.reads_cone:
        return inst, Context.of(inst, horizon, entry.cone(W, inst.env.dim))
    seen = inst if W is None else apply_cone(inst, W)
    return seen, Context.of(seen, horizon)


def recommend_of(family: str, ctx: Context):
    """``recommend(final, params) -> (K,) bool`` of the engine (:func:`mobandit_jax.engine.make_run`): ``family``'s
    registered ``recommended`` under the context ``ctx`` of a group's first grid point, with each point's own cone
    (``RunParams.cone``, :func:`padded_cone`: traced, so that points that differ only in ``W`` share one compiled
    run)."""
    entry = family_of(family)

    def recommend(final, params):
        return entry.recommended(final, ctx if params.cone is None else dataclasses.replace(ctx, W=params.cone))

    return recommend


def padded_cone(cone, rows: int):
    """``RunParams.cone``: the cone ``W`` as an array of ``rows`` rows, its last row repeated (the same cone), so that
    grid points whose cones differ in their number of rows share one compiled run (None: no cone)."""
    if cone is None:
        return None
    cone = np.asarray(cone)
    return jnp.asarray(np.concatenate([cone, np.repeat(cone[-1:], rows - len(cone), axis=0)]), engine.float_dtype())


def make_context(resolved: dict, inst, horizon: int, family: str = "preference") -> Context:
    """The :class:`Context` of ``family``'s builders, from a resolved spec and its environment."""
    return family_view(resolved, inst, horizon, family)[1]


def build(spec: dict) -> Plan:
    """Expand and build every run of a validated spec (after :func:`mobandit_jax.runner.runtime.configure`)."""
    runtime.configure()
    plugins.load(spec["experiment"].get("plugins"))
    exp = spec["experiment"]
    points = cfg.grid_points(spec)
    built = []
    for setting, resolved in points:
        inst = with_budget(make_env(resolved["env"], resolved), resolved.get("budget"))
        if exp.get("paper_schedule"):  # fixed-budget methods keep their papers' schedules below their first phase
            inst = inst._replace(info={**inst.info, "paper_schedule": True})
        horizon = max(exp["horizon"], int(inst.horizon))
        built.append((setting, resolved, inst, horizon))
    print_notes(inst for _, _, inst, _ in built)
    horizon = max(h for *_, h in built)
    record_every = exp["record_every"] or max(1, math.ceil(horizon / DEFAULT_CHECKPOINTS))

    # (grid point, reads the cone) -> (instance, Context): the families that do not read the cone share its projection
    seen: dict = {}
    family_metrics: dict = {}  # (grid point, family) -> (MetricSet, mparams), built once for all its policies

    def view(i: int, family: str):
        reads = family_of(family).reads_cone
        if (i, reads) not in seen:
            seen[i, reads] = family_view(built[i][1], built[i][2], horizon, family)
        return seen[i, reads]

    groups: dict = {}
    names, reduce, grid, bounds, goal = {}, {}, {}, {}, {}
    rows = max(inst.env.dim if (W := cone_of(resolved, inst)) is None else W.shape[0] for _, resolved, inst, _ in built)
    for entry in spec["policies"]:
        label = entry.get("label", entry["name"])
        if label in grid:
            raise cfg.ConfigError(f"two [[policies]] entries share the label {label!r}; give each a distinct 'label'")
        key = resolve_policy(entry, spec)
        family = POLICIES[key].family
        grid[label] = []
        for i, (setting, _, _, _) in enumerate(built):
            inst, ctx = view(i, family)
            # the policies first: one that cannot run here says why before its family's metrics are built
            made = [(options, make_policy(key, ctx, **options)) for options in cfg.policy_points(entry, setting)]
            if (i, family) not in family_metrics:
                family_metrics[i, family] = make_metrics(family, ctx)
            mset, mparams = family_metrics[i, family]
            names.setdefault(label, tuple(mset.names))
            reduce.setdefault(label, dict(zip(mset.names, mset.reduce, strict=False)))
            bounds.setdefault(label, {m.name: list(m.bounds) for m in mset.metrics})
            goal.setdefault(label, {m.name: m.goal for m in mset.metrics})
            for options, (policy, pparams, static_key) in made:
                budget = ctx.budget if ctx.budget is not None else np.inf
                budgeted = bool(np.isfinite(budget))
                params = engine.RunParams(inst.params, pparams, mparams, jnp.asarray(budget, engine.float_dtype()),
                                          padded_cone(ctx.W, rows))
                gkey = (label, static_key, inst.static_key, signature(params), budgeted)
                if gkey not in groups:
                    run = engine.make_run(inst.env, policy, mset, horizon, record_every, budgeted,
                                          recommend_of(family, ctx))
                    groups[gkey] = Group(label, entry["name"], family, run)
                g = len(grid[label])
                grid[label].append({"setting": setting, "params": {"name": entry["name"], **options}})
                groups[gkey].params.append(params)
                groups[gkey].members.append(g)
    truth = TruthTable([(setting, inst, _truth_parts(i, family_metrics, seen))
                        for i, (setting, _, inst, _) in enumerate(built)], exp["seeds"], exp["seed"])
    return Plan(spec, list(groups.values()), horizon, record_every, exp["seeds"], exp["seed"], cfg.chunk_size(spec),
                names, reduce, grid, plugins.digest(spec), files.data_digest(spec), truth, bounds=bounds, goal=goal)


def print_notes(instances):
    """Print each distinct line of the instances' ``info["notes"]`` once on standard error (what an environment
    changed of the user's data, e.g. :func:`mobandit_jax.problems.stochastic.clip_note`).

    Args:
      instances: the built :class:`~mobandit_jax.types.EnvInstance` of each grid point.
    """
    for note in dict.fromkeys(n for inst in instances for n in inst.info.get("notes", ())):
        print(note, file=sys.stderr)


def _truth_parts(i: int, family_metrics: dict, seen: dict) -> list:
    """``[(instance, {family: (MetricSet, mparams)})]`` of grid point ``i``: its families by the instance they see."""
    parts: dict = {}
    for (j, family), built in family_metrics.items():
        if j == i:
            reads = family_of(family).reads_cone
            parts.setdefault(reads, (seen[i, reads][0], {}))[1][family] = built
    return list(parts.values())


def checked_build(spec: dict) -> Plan:
    """:func:`build`, with a bad value met while building reported as a one-line :class:`ConfigError`.

    Environment, policy and metric builders raise ``ValueError`` / ``KeyError`` / ``TypeError`` on
    values the spec parser cannot check by itself; the message gains the spec key holding the value.
    """
    plugins.load(spec["experiment"].get("plugins"))
    for entry in spec["policies"]:
        _check_option_types(entry, spec)
    try:
        return build(spec)
    except (cfg.ConfigError, RegistryError) as err:
        raise cfg.ConfigError(str(err)) from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, ZeroDivisionError, OverflowError) as err:
        msg = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
        keys = [k for k, v in _spec_values(spec)
                if isinstance(v, str) and repr(v) in msg and k.split(".")[-1].split()[-1] not in msg]
        named = (isinstance(err, KeyError) and " " in msg  # the registries' own messages name the key
                 or any(re.search(rf"(?<![\w.]){re.escape(k)}(?![\w.])", msg) for k, _ in _spec_values(spec)))
        where = "" if named else f"{keys[0]}: " if keys else f"building env kind {spec['env']['kind']!r}: "
        raise cfg.ConfigError(where + " ".join(msg.split())) from err


def _check_option_types(entry: dict, spec: dict):
    """Each option (and swept value) of a [[policies]] entry has the type of the registry default."""
    default = POLICIES[resolve_policy(entry, spec)].defaults
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
