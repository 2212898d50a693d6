"""From a validated spec to a plan: every environment, policy and metric set built, grouped by program.

``build(spec)`` takes the typed spec (:class:`~mobandit_jax.experiment_spec.ExperimentSpec`) and reads its parts:
it imports the plugins, expands the grid settings, builds every environment, policy and metric set through the
registries (:mod:`mobandit_jax.registry`), and groups the runs, each a
:class:`~mobandit_jax.experiment_spec.GridPoint` of a policy label, that share one compiled function (same policy
code, same static shapes). ``Plan.truth`` holds each setting's ground
truth (``truth.json``), computed on first use (:class:`mobandit_jax.analysis.truth.TruthTable`).
:func:`checked_build` reports a bad value met while building as a one-line
:class:`~mobandit_jax.types.ConfigError` naming its spec key.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from .. import engine, metrics, plugins, policies, problems  # noqa: F401  (importing fills the registries)
from ..analysis.truth import TruthTable
from ..digest import content_digest
from ..errors import ConfigError
from ..experiment_spec import ExperimentSpec, GridPoint, GridSetting
from ..kernels import validate_cone
from ..problems.budget import with_budget
from ..problems.cone import apply_cone
from ..registry import POLICIES, RegistryError, family_of, make_env, make_metrics, make_policy
from ..spec_tables import PolicyEntry
from ..types import Context
from . import runtime
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

    spec: ExperimentSpec
    groups: list
    horizon: int
    record_every: int
    seeds: int
    base_seed: int
    chunk: int
    names: dict  # label -> metric names
    reduce: dict  # label -> {metric: reducer}
    grid: dict  # label -> [GridPoint]
    plugins: str | None = None  # hash of the plugins' source (None: the spec names none)
    data: str | None = None  # hash of the data files the spec names (None: it names none)
    truth_points: list = field(default_factory=list)  # per grid setting, what its truth is computed from (TruthTable)
    bounds: dict = field(default_factory=dict)  # label -> {metric: (low, high)} of its per-seed values (Metric.bounds)
    goal: dict = field(default_factory=dict)  # label -> {metric: "min" | "max" | ""} (Metric.goal)

    @functools.cached_property
    def truth(self) -> TruthTable:
        """``truth.json``'s entry per grid setting, in grid order, each computed on first use.

        Returns:
          The :class:`~mobandit_jax.analysis.truth.TruthTable`.
        """
        return TruthTable(self.truth_points, self.seeds, self.base_seed)


def resolve_policy(entry: PolicyEntry, entries: Sequence = ()) -> str:
    """The registry name of a ``[[policies]]`` entry: its ``name``, and its ``family`` if given; a bare name that
    several families share (``pareto_ucb``) is decided by the families of the spec's other entries, where exactly
    one of the name's families is among them (:meth:`~mobandit_jax.registry.Registry.resolve`).

    Args:
      entry: a ``[[policies]]`` entry.
      entries: the spec's ``[[policies]]`` entries, ``entry`` among them (none: the entry alone decides).

    Returns:
      The registered name.

    Raises:
      ConfigError: one line, for an unknown or undecided name.
    """
    among = set()
    for other in entries:
        found = POLICIES.matches(other.name, other.family)
        if other is not entry and len(found) == 1:  # an undecided or unknown name is reported at its own entry
            among.add(POLICIES[found[0]].family)
    try:
        return POLICIES.resolve(entry.name, entry.family, among)
    except RegistryError as err:
        raise ConfigError(str(err)) from None


def cone_of(cone, inst):
    """The cone ``W`` of a grid setting (``[preference] W``), validated against the arms of ``inst``.

    Args:
      cone: the setting's ``W`` (None: the spec gives no cone).
      inst: its :class:`~mobandit_jax.types.EnvInstance`.

    Returns:
      ``W`` as an ``(M, d)`` float array, or None.
    """
    if cone is None:
        return None
    W = validate_cone(cone)
    if W.shape[1] != inst.env.dim:
        raise ConfigError(f"preference matrix W has {W.shape[1]} columns but the arms have "
                          f"d = {inst.env.dim} objectives")
    return W


def family_view(cone, inst, horizon: int, family: str) -> tuple:
    """``(instance, Context)`` that ``family``'s policies and metrics see: ``inst`` and the cone for a family that
    reads it (its registered ``reads_cone``; the Pareto order ``W = I`` where the spec has no ``[preference]``,
    :meth:`~mobandit_jax.registry.FamilyEntry.cone`), else the projection of ``inst`` under the cone
    (:func:`mobandit_jax.problems.cone.apply_cone`) and no cone.

    Args:
      cone: the grid setting's cone ``W`` (:func:`cone_of`; None: none).
      inst: its :class:`~mobandit_jax.types.EnvInstance`.
      horizon: the run's rounds.
      family: the family's name.

    Returns:
      ``(instance, Context)``.
    """
    entry = family_of(family)
    if entry.reads_cone:
        return inst, Context.of(inst, horizon, entry.cone(cone, inst.env.dim))
    seen = inst if cone is None else apply_cone(inst, cone)
    return seen, Context.of(seen, horizon)


def recommend_of(family: str, ctx: Context):
    """``recommend(final, params) -> (K,) bool`` of the engine (:func:`mobandit_jax.engine.make_run`): ``family``'s
    registered ``recommended`` under the context ``ctx`` of a group's first grid point, with each point's own cone
    (``RunParams.cone``, :func:`padded_cone`: traced, so that points that differ only in ``W`` share one compiled
    run).

    Args:
      family: the family's name.
      ctx: the :class:`Context` of the group's first grid point.

    Returns:
      ``recommend``.
    """
    entry = family_of(family)

    def recommend(final, params):
        return entry.recommended(final, ctx if params.cone is None else dataclasses.replace(ctx, W=params.cone))

    return recommend


def padded_cone(cone, rows: int):
    """``RunParams.cone``: the cone ``W`` as an array of ``rows`` rows, its last row repeated (the same cone), so that
    grid points whose cones differ in their number of rows share one compiled run.

    Args:
      cone: ``(M, d)`` with ``M <= rows`` (None: no cone).
      rows: the rows of every cone of the plan.

    Returns:
      ``(rows, d)`` in the engine's float dtype, or None.
    """
    if cone is None:
        return None
    cone = np.asarray(cone)
    return jnp.asarray(np.concatenate([cone, np.repeat(cone[-1:], rows - len(cone), axis=0)]), engine.float_dtype())


def make_context(cone, inst, horizon: int, family: str = "preference") -> Context:
    """The :class:`Context` of ``family``'s builders (:func:`family_view`).

    Args:
      cone: the cone ``W`` (None: none).
      inst: the :class:`~mobandit_jax.types.EnvInstance`.
      horizon: the run's rounds.
      family: the family's name.

    Returns:
      The :class:`Context`.
    """
    return family_view(cone_of(cone, inst), inst, horizon, family)[1]


class Built(NamedTuple):
    """One grid setting built: the setting, its environment instance and the rounds it runs."""

    point: GridSetting
    inst: object
    horizon: int


def build_setting(point: GridSetting, experiment) -> Built:
    """A grid setting's environment through the registry (:func:`~mobandit_jax.registry.make_env`), with its budget.

    Args:
      point: the :class:`~mobandit_jax.experiment_spec.GridSetting`.
      experiment: the spec's :class:`~mobandit_jax.experiment_spec.Experiment`.

    Returns:
      The :class:`Built` setting: its instance and its rounds (the experiment's horizon, or the budget's ``T_B``
      where that is longer).
    """
    inst = with_budget(make_env(point.env, point.tables), point.budget)
    if experiment.paper_schedule:  # fixed-budget methods keep their papers' schedules below their first phase
        inst = inst._replace(info={**inst.info, "paper_schedule": True})
    return Built(point, inst, max(experiment.horizon, int(inst.horizon)))


def build(spec: ExperimentSpec) -> Plan:
    """Expand and build every run of a validated spec, after :func:`mobandit_jax.runner.runtime.configure` and with
    its plugins imported (:func:`mobandit_jax.plugins.load`).

    What the spec names is read first: its plugins imported, its data files listed, its grid settings expanded and
    each ``[[policies]]`` entry's options at each of them (:meth:`~mobandit_jax.spec_tables.PolicyEntry.points`);
    then the settings' environments and the entries' policies and metric sets are built, and the plugins' source
    and the data files hashed for the run's fingerprint.

    Args:
      spec: the :class:`~mobandit_jax.experiment_spec.ExperimentSpec`.

    Returns:
      The :class:`Plan`.
    """
    runtime.configure()
    exp = spec.experiment
    sources = plugins.load(exp.plugins)
    files = spec.data_files()
    settings = spec.settings()
    options = [[entry.points(s.setting) for s in settings] for entry in spec.policies]  # per entry, per setting
    built = [build_setting(point, exp) for point in settings]
    print_notes(b.inst for b in built)
    horizon = max(b.horizon for b in built)
    record_every = exp.record_every or max(1, math.ceil(horizon / DEFAULT_CHECKPOINTS))
    grid = _Grid(built, horizon, record_every)
    for entry, points in zip(spec.policies, options, strict=True):
        grid.add(entry, spec.policies, points)
    plugin_digest, data_digest = content_digest(sources), content_digest([(f, Path(f).read_bytes()) for f in files])
    return Plan(spec, list(grid.groups.values()), horizon, record_every, exp.seeds, exp.seed, exp.chunk_size,
                grid.names, grid.reduce, grid.points, plugin_digest, data_digest, grid.truth_points(), grid.bounds,
                grid.goal)


class _Grid:
    """The plan's groups and per-label tables, filled one ``[[policies]]`` entry at a time (:meth:`add`)."""

    def __init__(self, built: list, horizon: int, record_every: int):
        self.built, self.horizon, self.record_every = built, horizon, record_every
        self.cones = [cone_of(b.point.cone, b.inst) for b in built]
        self.rows = max(b.inst.env.dim if W is None else W.shape[0] for b, W in zip(built, self.cones, strict=True))
        self.seen: dict = {}  # (setting, reads the cone) -> (instance, Context): shared by the families that do not
        self.metrics: dict = {}  # (setting, family) -> (MetricSet, mparams), built once for all its policies
        self.groups: dict = {}
        self.names, self.reduce, self.points, self.bounds, self.goal = {}, {}, {}, {}, {}

    def view(self, i: int, family: str) -> tuple:
        """``(instance, Context)`` of setting ``i`` as ``family`` sees it (:func:`family_view`)."""
        reads = family_of(family).reads_cone
        if (i, reads) not in self.seen:
            self.seen[i, reads] = family_view(self.cones[i], self.built[i].inst, self.horizon, family)
        return self.seen[i, reads]

    def add(self, entry: PolicyEntry, entries: tuple, points: list):
        """Every run of ``entry`` (one of the spec's ``entries``) at every setting, in the group of its compiled
        program; ``points[i]``: the entry's option dicts at setting ``i``."""
        key = resolve_policy(entry, entries)
        label, family = entry.label, POLICIES[key].family
        if label in self.points:
            raise ConfigError(f"two [[policies]] entries share the label {label!r}; give each a distinct 'label'")
        self.points[label] = []
        for i, b in enumerate(self.built):
            inst, ctx = self.view(i, family)
            # the policies first: one that cannot run here says why before its family's metrics are built
            made = [(options, make_policy(key, ctx, **options)) for options in points[i]]
            if (i, family) not in self.metrics:
                self.metrics[i, family] = make_metrics(family, ctx)
            mset, mparams = self.metrics[i, family]
            self.names.setdefault(label, tuple(mset.names))
            self.reduce.setdefault(label, dict(zip(mset.names, mset.reduce, strict=False)))
            self.bounds.setdefault(label, {m.name: list(m.bounds) for m in mset.metrics})
            self.goal.setdefault(label, {m.name: m.goal for m in mset.metrics})
            for options, (policy, pparams, static_key) in made:
                budget = ctx.budget if ctx.budget is not None else np.inf
                budgeted = bool(np.isfinite(budget))
                params = engine.RunParams(inst.params, pparams, mparams, jnp.asarray(budget, engine.float_dtype()),
                                          padded_cone(ctx.W, self.rows))
                gkey = (label, static_key, inst.static_key, signature(params), budgeted)
                if gkey not in self.groups:
                    run = engine.make_run(inst.env, policy, mset, self.horizon, self.record_every, budgeted,
                                          recommend_of(family, ctx))
                    self.groups[gkey] = Group(label, entry.name, family, run)
                self.groups[gkey].params.append(params)
                self.groups[gkey].members.append(len(self.points[label]))
                self.points[label].append(GridPoint(b.point.setting, {"name": entry.name, **options}))

    def truth_points(self) -> list:
        """:attr:`TruthTable.points`: per setting, ``(setting, instance, [(instance seen, {family: (MetricSet,
        mparams)})])``, its families by the instance they see."""
        points = []
        for i, b in enumerate(self.built):
            parts: dict = {}
            for (j, family), built in self.metrics.items():
                if j == i:
                    reads = family_of(family).reads_cone
                    parts.setdefault(reads, (self.seen[i, reads][0], {}))[1][family] = built
            points.append((b.point.setting, b.inst, list(parts.values())))
        return points


def print_notes(instances):
    """Print each distinct line of the instances' ``info["notes"]`` once on standard error (what an environment
    changed of the user's data, e.g. :func:`mobandit_jax.problems.stochastic.clip_note`).

    Args:
      instances: the built :class:`~mobandit_jax.types.EnvInstance` of each grid point.

    Returns:
      None.
    """
    for note in dict.fromkeys(n for inst in instances for n in inst.info.get("notes", ())):
        print(note, file=sys.stderr)


def checked_build(spec: ExperimentSpec) -> Plan:
    """:func:`build`, with a bad value met while building reported as a one-line :class:`ConfigError`.

    Environment, policy and metric builders raise ``ValueError`` / ``KeyError`` / ``TypeError`` on
    values the spec parser cannot check by itself; the message gains the spec key holding the value.

    Args:
      spec: the :class:`~mobandit_jax.experiment_spec.ExperimentSpec`.

    Returns:
      The :class:`Plan`.
    """
    plugins.load(spec.experiment.plugins)
    for entry in spec.policies:
        _check_option_types(entry, resolve_policy(entry, spec.policies))
    try:
        return build(spec)
    except (ConfigError, RegistryError) as err:
        raise ConfigError(str(err)) from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, ZeroDivisionError, OverflowError) as err:
        msg = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
        values = list(_spec_values(spec.to_dict()))
        keys = [k for k, v in values
                if isinstance(v, str) and repr(v) in msg and k.split(".")[-1].split()[-1] not in msg]
        named = (isinstance(err, KeyError) and " " in msg  # the registries' own messages name the key
                 or any(re.search(rf"(?<![\w.]){re.escape(k)}(?![\w.])", msg) for k, _ in values))
        where = "" if named else f"{keys[0]}: " if keys else f"building env kind {spec.env['kind']!r}: "
        raise ConfigError(where + " ".join(msg.split())) from err


def _check_option_types(entry: PolicyEntry, key: str):
    """Each option (and swept value) of a [[policies]] entry has the type of the registry default of ``key``."""
    default = POLICIES[key].defaults
    values = list(entry.options.items()) + [(k, v) for k, vs in entry.sweep.items() for v in vs]
    for k, v in values:
        want = default.get(k)
        if isinstance(v, dict):  # a table of per-setting values, resolved by the policy's builder
            continue
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        if (isinstance(want, bool) and not isinstance(v, bool)) or (
                isinstance(want, (int, float)) and not isinstance(want, bool) and not number) or (
                isinstance(want, str) and not isinstance(v, str)):
            raise ConfigError(f"policy {entry.label!r}: option {k} = {v!r} must be "
                              f"{type(want).__name__} like its default {want!r}")


def _spec_values(tables: dict):
    """``(dotted key, value)`` of every env and preference value, sweep value and scenario override of a spec's
    tables."""
    for table in ("env", "preference", "experiment"):
        for k, v in tables.get(table, {}).items():
            if k != "kind":  # a kind is named by the registry's own message
                yield f"{table}.{k}", v
    for k, values in tables.get("sweep", {}).items():
        for v in values:
            yield f"sweep.{k}", v
    for sc in tables.get("scenarios", []):
        for k, v in sc.items():
            yield f"[[scenarios]] {sc['name']!r} {k}", v
