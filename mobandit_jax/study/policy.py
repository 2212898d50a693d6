"""The policy a study drives, built through the registry, and the values it sees.

A study's policy is built as a simulated run builds it (:func:`mobandit_jax.registry.make_policy` on a
:class:`~mobandit_jax.types.Context`), on an instance that has no sampler: the rewards are told. Its family
(:func:`mobandit_jax.registry.family_of`) says whether it is an online :class:`~mobandit_jax.types.Policy`
(``init/select/update``, one arm or slate a round) or an identifier, which a study drives through its step-wise form
(:class:`~mobandit_jax.types.Stepwise`). The policy sees told values scaled by the spec's bounds to ``[0, 1]`` (or as
they are, with a noise scale) and, for a family that does not read the cone, projected under ``[preference] W``
(:func:`mobandit_jax.problems.cone.normalisation`, as :func:`~mobandit_jax.problems.cone.apply_cone` projects a
simulated instance); a family that reads the cone gets ``W = I`` (the Pareto order) where the spec gives none.
Costs are in units of the largest expected cost.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import jax
import numpy as np

from ..errors import ConfigError
from ..problems.cone import normalisation
from ..registry import IDENTIFIER, POLICIES, RegistryError, family_of, make_policy
from ..types import Context, Env, EnvInstance, Identifier
from .errors import StudyError
from .spec import StudySpec


def _told_not_sampled(*args, **kwargs):
    raise StudyError("a study's rewards are told by the user, not sampled")


class Built(NamedTuple):
    """The study's policy: its registered name, family entry, the built policy (or identifier) and params, its
    context, the cost scale, the dimension the policy sees, the map from told values to it and the warnings its
    building raised."""

    name: str
    family: object
    policy: object
    params: object
    ctx: Context
    cost_scale: float
    dim: int
    to_policy: object  # (..., d) told values -> (..., dim) policy values (numpy)
    notes: tuple = ()  # the warnings building it raised (a budget below a literal schedule's first phase)


def build(spec: StudySpec) -> Built:
    """Build the spec's policy through the registry (module docstring).

    Args:
      spec: the study's :class:`~.spec.StudySpec`.

    Returns:
      The :class:`Built` policy; a refusal is one :class:`StudyError` line.
    """
    import mobandit_jax.metrics  # noqa: F401  (fills the family registry)
    import mobandit_jax.policies  # noqa: F401

    if spec.plugins:
        from .. import plugins

        try:
            plugins.load(plugins.validate(spec.plugins))
        except ConfigError as err:
            raise StudyError(str(err)) from None

    try:
        name = POLICIES.resolve(spec.policy, spec.family)
    except RegistryError as err:
        raise StudyError(str(err)) from None
    family = family_of(POLICIES[name].family)
    K, d = len(spec.arms), len(spec.objectives)
    bounded = spec.noise is None
    lower = np.zeros(d) if bounded is False else np.asarray(spec.lower, float)
    span = np.ones(d) if bounded is False else np.asarray(spec.upper, float) - lower
    # a family that reads the cone gets W = I (the Pareto order) where the spec gives none (FamilyEntry.cone)
    W = family.cone(spec.W, d) if family.reads_cone else None if spec.W is None else np.asarray(spec.W, float)
    sigma = spec.noise
    if W is not None and not family.reads_cone:
        low, wspan = normalisation(W, bounded)
        dim = len(W)
        if sigma is not None:
            sigma = float(sigma * np.max(np.linalg.norm(W, axis=1) / wspan))

        def to_policy(v):  # W x summed elementwise: a told row's value does not depend on the rows beside it
            return (np.sum(((np.asarray(v, float) - lower) / span)[..., None, :] * W, axis=-1) - low) / wspan
        W_ctx = None
    else:
        dim = d

        def to_policy(v):
            return (np.asarray(v, float) - lower) / span
        W_ctx = W
    if spec.costs is not None:
        scale = float(max(spec.costs))
        alloc = np.asarray(spec.costs, float) / scale
        budget = spec.budget / scale
        extra = dict(mean_costs=alloc, alloc_costs=alloc, min_costs=alloc, cost_floor=float(alloc.min()),
                     budget=budget)
    else:
        scale, extra = 1.0, {}
    env = Env(sample=_told_not_sampled, num_arms=K, dim=dim, prefix_table=_told_not_sampled)
    inst = EnvInstance(env=env, params=None, means=np.zeros((K, dim)), noise_sigma=sigma, bounded=bounded,
                       slate_size=spec.slate, info={"arms": list(spec.arms), "cost_scale": scale,
                                                    "cost_name": spec.cost_name, "budget_key": "budget.B",
                                                    "replan": spec.replan,
                                                    # not re-planned: the paper's own schedule, also below its first
                                                    # phase (with a warning), as a run's experiment.paper_schedule
                                                    "paper_schedule": not spec.replan},
                       **extra)
    ctx = Context.of(inst, spec.horizon, W_ctx)
    try:
        with warnings.catch_warnings(record=True) as caught:  # kept as the study's notes, not printed at each load
            warnings.simplefilter("always")
            policy, params, _ = make_policy(name, ctx, **spec.options)
    except (ConfigError, ValueError, KeyError, TypeError) as err:
        raise StudyError(str(err.args[0] if isinstance(err, KeyError) and err.args else err)) from None
    if family.kind == IDENTIFIER and (not isinstance(policy, Identifier) or policy.stepwise is None):
        raise StudyError(f"policy {name!r} runs only as one bulk call in simulation and has no step-wise form "
                         "(Identifier.stepwise), which a study drives; in a study use one of "
                         f"{sorted(stepwise_names())}")
    notes = tuple(str(w.message) for w in caught)
    return Built(name, family, policy, params, ctx, scale, dim, to_policy, notes)


def stepwise_names() -> list:
    """The registered identifiers with a step-wise form (on their family's example context); read for an error
    message only, so each is built again on every call.

    Returns:
      Their registered names.
    """
    names = []
    for key, entry in POLICIES.items():
        fam = family_of(entry.family)
        if fam.kind != IDENTIFIER or fam.example is None:
            continue
        try:
            if make_policy(key, fam.example(0))[0].stepwise is not None:
                names.append(key)
        except Exception:  # noqa: BLE001  (an example that cannot build this policy)
            continue
    return names


def fold(key, t):
    """``fold_in(key, t)``, jitted once.

    Args:
      key: a JAX key.
      t: a whole number (a round).

    Returns:
      The folded key.
    """
    return _fold(key, np.uint32(t))


_fold = jax.jit(jax.random.fold_in)
