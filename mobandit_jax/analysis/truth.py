"""Ground truth, ``truth.json``: what every metric of a run scores against.

``truth.json``: ``{"settings": [entry per grid setting, in grid order]}``, the ground truth every
metric scores against (:class:`TruthTable`), each family's from its registered ``truth``
(:func:`mobandit_jax.registry.register_family`; the built-in families' definitions: PDMOB Defs. 2 and 4,
Xue et al. Section 3, Gutowski et al. Eq. (1)-(2)). An entry holds ``setting``, ``arms`` (the K arm names,
:attr:`~mobandit_jax.types.EnvInstance.arm_names`), ``means`` (K, d)
(``EnvInstance.means``: what the policies' contexts and the metrics read), ``mean_costs`` (K,) or
null, ``budget`` (where the instance has one: ``B`` in the instance's cost units, ``cost_scale`` and
``cost_name``, the data's own unit, and ``B_own_units``, ``B * cost_scale``), ``families`` (per metric
family of the spec's policies, taken from that family's own metric params after its ``prepare``, as the
engine hands them to the metric step, each with ``true_set``, the (K,) bool set its recommended sets are
compared with, or null: its registered ``true_set``):

- ``preference``: ``cone_optimal`` (K,) bool (``cone_optimal_mask(means, W)``), ``gaps`` (K,);
- ``identification``: ``pareto`` (K,) bool, the strict Pareto set ``P*``, and ``budget``;
- ``slate``: ``vstar`` (exact ``V*`` at d = 2, greedy ``HV(G*)`` at d >= 3), ``alpha_vstar``, ``ref``,
  ``benchmark`` (``"exhaustive"`` or ``"greedy"``) and ``slate``, the greedy slate ``G*`` (d >= 3;
  null at d = 2, where only the value of the best slate is computed);
- ``budgeted``: ``efficiency`` ``nu`` (K,), ``nu_star`` and ``optimal`` (K,) bool (``nu = nu*``);
- ``pac``: ``optimal`` (K,) bool, ``gaps`` (K,) and ``cover`` (K, K) (:class:`mobandit_jax.metrics.pac.PacTruth`);
- a plugin family: what its ``truth`` returns, as plain lists (by default its metric params);

and ``per_seed``: for an environment whose ``reset`` redraws the instance (its params carry
``means``, e.g. ``dtlz`` without ``instance_seed``), ``{"seed", "means", "families"}`` of the first
``TRUTH_SEEDS`` seeds, drawn by the environment's own reset on the run's seed keys
(:func:`mobandit_jax.engine.seed_keys`, stream ``RESET_STREAM``); then the setting's ``means`` and
``families`` describe the instance built from the spec, which a seed's prepare-less metrics
(preference, identification, budgeted) still score against. ``per_seed`` is null otherwise, also for
``nyse_replay``, whose reset draws only the replay's start offset: its truth, the average over all
days, is the same for every seed.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..engine import RESET_STREAM, RunParams, prepare, seed_keys
from ..registry import family_of

TRUTH_FILE = "truth.json"
TRUTH_SEEDS = 16  # seeds whose redrawn instance truth.json lists


def _plain(x):
    """A pytree of arrays as plain JSON data (dicts, lists, floats, ints, bools, None)."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if hasattr(x, "_asdict"):
        return {k: _plain(v) for k, v in x._asdict().items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return None if x is None else np.asarray(x).tolist()


def _families_json(truths: dict) -> dict:
    return {family: family_of(family).truth_json(_plain(t)) for family, t in truths.items()}


def _scored(env, families: dict, slate_size: int, env_params, mparams: dict):
    """``(instance means or None, {family: truth})``: each family's metric params as the engine prepares them."""
    truths = {}
    for family, (mset, _) in families.items():
        _, prepared = prepare(env, mset, RunParams(env_params, None, mparams[family], None), None)
        truths[family] = family_of(family).truth(prepared, slate_size)
    return getattr(env_params, "means", None), truths


def _truth_program(inst, families: dict):
    """``f(env_params, mparams, keys)``: the truths of the instance ``env_params`` and, vmapped over ``keys``
    (None: none), of each seed's instance drawn by ``reset`` as in the engine
    (:func:`mobandit_jax.engine.prepare`); jitted."""
    import jax

    fixed, k = inst.env._replace(reset=None), int(inst.slate_size)

    def program(env_params, mparams, keys):
        def seed(key):
            return _scored(fixed, families, k, inst.env.reset(jax.random.fold_in(key, RESET_STREAM), env_params),
                           mparams)

        return _scored(fixed, families, k, env_params, mparams)[1], None if keys is None else jax.vmap(seed)(keys)

    return jax.jit(program)


class TruthTable(Sequence):
    """``truth.json``'s entries of a plan, one per grid setting, each computed on first use (module docstring).

    ``points``: ``(setting, EnvInstance, [(instance seen, {family: (MetricSet, mparams)})])`` per grid setting,
    as built for its policies (a family that does not read a cone sees the instance projected under it);
    ``seeds`` and ``base_seed``: the run's, whose first :data:`TRUTH_SEEDS` keys redraw a
    per-seed instance. Settings of one environment code and slate size share one compiled program (as
    the engine's groups share one compiled run).
    """

    def __init__(self, points: list, seeds: int, base_seed: int):
        self.points, self.seeds, self.base_seed = points, seeds, base_seed
        self._entries: dict = {}
        self._programs: dict = {}

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, i: int) -> dict:
        i = range(len(self.points))[i]
        if i not in self._entries:
            self._entries[i] = self._entry(*self.points[i])
        return self._entries[i]

    def _entry(self, setting: dict, inst, parts: list) -> dict:
        entry = {"setting": setting, "arms": inst.arm_names, "means": _plain(inst.means),
                 "mean_costs": _plain(inst.mean_costs), "families": {}, "per_seed": None}
        if inst.info.get("notes"):  # e.g. the means clipped Gaussian draws moved: what the metrics score
            entry["notes"] = list(inst.info["notes"])
        if inst.budget is not None:
            scale, name = inst.cost_unit
            entry["budget"] = {"B": float(inst.budget), "cost_scale": scale, "cost_name": name,
                               "B_own_units": float(inst.budget) * scale}
        for seen, families in parts:  # the instance each family saw: ``inst``, or its projection under a cone
            fixed, per_seed = self._scores(seen, families)
            entry["families"].update(_families_json(fixed))
            for family in families:
                find = family_of(family).true_set
                found = None if find is None else find(entry["families"][family], np.asarray(seen.means))
                entry["families"][family]["true_set"] = None if found is None else _plain(np.asarray(found, bool))
            if "cone" in seen.info:
                entry["cone"] = {"W": seen.info["cone"], "means": _plain(seen.means)}
            if per_seed is not None:
                rows = entry["per_seed"] = entry["per_seed"] or [{"seed": s, "means": None, "families": {}}
                                                                 for s, _, _ in per_seed]
                for row, (_, means, truths) in zip(rows, per_seed, strict=False):
                    row["cone_means" if "cone" in seen.info else "means"] = means
                    row["families"].update(truths)
        return entry

    def _scores(self, inst, families: dict):
        """``(truths of the instance, [(seed, means, truths)] or None)`` of one instance's families."""
        import jax

        per_seed = inst.env.reset is not None and getattr(inst.params, "means", None) is not None
        key = (inst.static_key, int(inst.slate_size), tuple(families), per_seed)
        if key not in self._programs:
            self._programs[key] = _truth_program(inst, families)
        keys = seed_keys(self.base_seed, np.arange(min(TRUTH_SEEDS, self.seeds))) if per_seed else None
        fixed, seeds = self._programs[key](inst.params, {f: mp for f, (_, mp) in families.items()}, keys)
        if not per_seed:
            return fixed, None
        means, truths = seeds
        return fixed, [(s, _plain(means[s]), _families_json(jax.tree_util.tree_map(lambda x, s=s: x[s], truths)))
                       for s in range(len(keys))]
