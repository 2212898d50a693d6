"""Top-k slate metrics of Gutowski et al. (Problem Setting, Eq. (1)-(2); Experiments, "Computing V*").

Per round, on the true means (pseudo-hypervolume, no observation noise):

- ``hv_last100``: ``HV(S_t)`` of Eq. (1), summarised as the mean over the last 100 rounds;
- ``alpha_regret``: the alpha-regret of Eq. (2), ``alpha V* - HV(S_t)`` with ``alpha = 1 - 1/e``,
  summed over rounds (can be negative once a method beats ``alpha V*``);
- ``alpha_regret_pos``: its positive part ``max(0, alpha V* - HV(S_t))``, summed. This is the
  variant that matches the paper's "Final Regret" column (Tables 1, 3-5): THV-UCB's values there
  (e.g. 6.2 at d = 2, concave) equal the regret of the forced-exploration rounds only, whereas the
  plain sum would be about ``(alpha V* - HV_last100) T``, i.e. several hundred below zero;
- ``vstar``: the per-instance benchmark (reduce ``"mean"`` of a constant).

The benchmark is ``V* = max_{|S| = k} HV(S)`` by exhaustive enumeration over all k-subsets at
d = 2 (beyond :data:`MAX_ENUMERATION_SUBSETS` subsets, by the exact dynamic program over the front
sorted by the first objective, :func:`best_subset_value_2d`; Auger, Bader, Brockhoff & Zitzler,
"Investigating and exploiting the bias of the weighted hypervolume to articulate user preferences",
GECCO 2009), and the greedy proxy ``HV(G*)`` (greedy maximisation of the true marginal gains, Fact 1)
at d >= 3, as in the paper. Both are computed inside the compiled run by ``prepare`` from the seed's
instance (``env_params.means`` when the environment carries one, else the context's means).

Gutowski, Chhel, Letard & Lamprier, "Top-k Pareto Bandits: Hypervolume Regret for Multi-Objective
Slate Selection" (preprint).
"""
from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

from ..engine import float_dtype
from ..kernels import greedy_hv_subset, hypervolume, pareto_front_mask
from ..problems.stochastic import make_stochastic
from ..registry import ONLINE, register_family
from ..types import Context, Final, Metric, MetricSet

ALPHA = 1.0 - 1.0 / math.e
METRICS = (
    Metric("hv_last100", "last100", "hypervolume HV(S_t) of the played slate, averaged over the last 100 rounds",
           (0, None), "max"),
    Metric("alpha_regret", "sum", "alpha-regret alpha V* - HV(S_t) (Eq. 2), summed", goal="min"),
    Metric("alpha_regret_pos", "sum", "its positive part max(0, alpha V* - HV(S_t)), summed",
           (0, None), "min"),
    Metric("vstar", "mean", "the benchmark V* (exact at d = 2, greedy HV(G*) at d >= 3)",
           (0, None)),
)
MAX_ENUMERATION_SUBSETS = 2_000_000


def subset_table(n: int, k: int) -> np.ndarray:
    """All k-subsets of ``range(n)`` as an ``(C(n, k), k)`` int32 array.

    Args:
      n: number of arms.
      k: subset size.

    Returns:
      ``(C(n, k), k)`` int32 numpy array, in lexicographic order.

    Raises:
      ValueError: more than :data:`MAX_ENUMERATION_SUBSETS` subsets.
    """
    count = math.comb(n, k)
    if count > MAX_ENUMERATION_SUBSETS:
        raise ValueError(
            f"exhaustive V*: C({n}, {k}) = {count} subsets exceeds {MAX_ENUMERATION_SUBSETS}; "
            "use the greedy benchmark (d >= 3)"
        )
    return np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)),
                       dtype=np.int32, count=count * k).reshape(count, k)


def best_subset_value(means, k: int, ref, chunk: int = 8192):
    """``V* = max_{|S| = k} HV(S)`` by exhaustive enumeration (batched ``hypervolume``).

    Args:
      means: ``(K, d)`` true means.
      k: slate size.
      ref: ``(d,)`` reference point.
      chunk: subsets per batched hypervolume call.

    Returns:
      ``()`` ``V*``, in ``means``' dtype.
    """
    means = jnp.asarray(means)
    table = subset_table(means.shape[0], k)
    pad = (-len(table)) % chunk
    table = np.concatenate([table, np.repeat(table[:1], pad, axis=0)]).reshape(-1, chunk, k)

    def body(best, idx):
        return jnp.maximum(best, jnp.max(hypervolume(means[idx], ref))), None

    best, _ = jax.lax.scan(body, jnp.zeros((), means.dtype), jnp.asarray(table))
    return best


def greedy_subset(means, k: int, ref):
    """Greedy benchmark ``G*`` (Fact 1 on the true means, raw gains): ``(k,)`` int32 arm indices.

    Args:
      means: ``(K, d)`` true means.
      k: slate size.
      ref: ``(d,)`` reference point.

    Returns:
      ``(k,)`` int32 arm indices in the order chosen.
    """
    return greedy_hv_subset(means, ref, k)


def greedy_value(means, k: int, ref):
    """``HV(G*)`` of the greedy benchmark.

    Args:
      means: ``(K, d)`` true means.
      k: slate size.
      ref: ``(d,)`` reference point.

    Returns:
      ``()`` hypervolume of :func:`greedy_subset`.
    """
    means = jnp.asarray(means)
    return hypervolume(means[greedy_subset(means, k, ref)], jnp.asarray(ref, means.dtype))


def best_subset_value_2d(means, k: int, ref):
    """``V* = max_{|S| <= k} HV(S)`` at d = 2 by dynamic programming, ``O(k K^2)``, for any ``C(K, k)``.

    On the front sorted by the first objective ``x`` ascending (so ``y`` descending), a subset's hypervolume is
    ``sum_j (x_j - x_prev(j)) (y_j - ref_y)`` with ``x_prev`` the previous chosen point's ``x`` (``ref_x`` for the
    first), so ``f_j(i) = max(f_{j-1}(l) + (x_i - x_l)(y_i - ref_y), l < i)`` is the best value of ``j`` points
    ending at ``i``. Dominated arms and arms not above ``ref`` add nothing and are left out; extra points never
    lower a hypervolume, so ``|S| <= k`` and ``|S| = k`` give the same ``V*``.

    Args:
      means: ``(K, 2)`` true means.
      k: slate size.
      ref: ``(2,)`` reference point.

    Returns:
      ``()`` ``V*``, in ``means``' dtype.
    """
    means = jnp.asarray(means)
    ref = jnp.asarray(ref, means.dtype)
    x, y = means[:, 0], means[:, 1]
    useful = pareto_front_mask(means) & (x > ref[0]) & (y > ref[1])
    order = jnp.argsort(jnp.where(useful, x, jnp.inf))
    x, y, useful = x[order], y[order], useful[order]
    height = y - ref[1]
    before = jnp.arange(x.shape[0])[:, None] < jnp.arange(x.shape[0])[None, :]  # [l, i]: l comes before i
    gain = jnp.where(before & useful[:, None] & useful[None, :], (x[None, :] - x[:, None]) * height[None, :], -jnp.inf)
    first = jnp.where(useful, (x - ref[0]) * height, -jnp.inf)

    def step(f, _):
        return jnp.maximum(f, jnp.max(f[:, None] + gain, axis=0)), None

    best, _ = jax.lax.scan(step, first, None, length=k - 1)
    return jnp.maximum(jnp.max(best), 0.0).astype(means.dtype)


def benchmark_value(means, k: int, ref):
    """The paper's benchmark: exact ``V*`` at d = 2, greedy ``HV(G*)`` at d >= 3.

    Args:
      means: ``(K, d)`` true means.
      k: slate size.
      ref: ``(d,)`` reference point.

    Returns:
      ``()`` benchmark value.
    """
    if jnp.shape(means)[-1] <= 2:
        if math.comb(jnp.shape(means)[0], k) > MAX_ENUMERATION_SUBSETS:
            return best_subset_value_2d(means, k, ref)
        return best_subset_value(means, k, ref)
    return greedy_value(means, k, ref)


_benchmark_once = jax.jit(benchmark_value, static_argnums=1)  # a plan's benchmark: one program, not an op at a time


def build(ctx):
    """``(MetricSet, mparams)`` of the slate family: HV(S_t), alpha-regrets and the benchmark.

    Args:
      ctx: a :class:`~mobandit_jax.types.Context` whose instance has a slate size ``k >= 1``.

    Returns:
      ``(MetricSet, {"means", "ref", "vstar"})``.
    """
    k = int(ctx.slate_size)
    if k < 1:
        raise ValueError(f"slate metrics need a slate size k >= 1 (ctx.slate_size), got {k!r}")
    ref = jnp.asarray(np.zeros(ctx.dim) if ctx.ref is None else ctx.ref, float_dtype())
    means = jnp.asarray(ctx.means, float_dtype())
    mparams = {"means": means, "ref": ref, "vstar": _benchmark_once(means, k, ref)}
    redrawn = ctx.env is not None and ctx.env.reset is not None

    def prepare(mp, env_params):
        inst = getattr(env_params, "means", None)
        if inst is None:
            return mp
        # a seed's own instance where the environment redraws it; else the instance's truth (the sampler's
        # locations differ from it under clipped Gaussian noise)
        inst = jnp.asarray(inst if redrawn else mp["means"], float_dtype())
        return {**mp, "means": inst, "vstar": benchmark_value(inst, k, mp["ref"])}

    def step(mp, action, obs):
        hv = hypervolume(mp["means"][action], mp["ref"])
        gap = ALPHA * mp["vstar"] - hv
        return {"hv_last100": hv, "alpha_regret": gap, "alpha_regret_pos": jnp.maximum(gap, 0.0), "vstar": mp["vstar"]}

    return MetricSet(METRICS, step, prepare), mparams


def truth(mp: dict, slate_size: int) -> dict:
    """What the metrics score against (``truth.json``), from the prepared metric params: ``V*`` (or ``HV(G*)``),
    ``alpha V*``, the reference point and, at d >= 3, the greedy slate ``G*``.

    Args:
      mp: the prepared metric params of :func:`build` (``means``, ``ref``, ``vstar``).
      slate_size: ``k``.

    Returns:
      A dict with ``vstar``, ``alpha_vstar``, ``ref`` ``(d,)`` and, at ``d >= 3``, ``slate`` ``(k,)``.
    """
    out = {"vstar": mp["vstar"], "alpha_vstar": ALPHA * mp["vstar"], "ref": mp["ref"]}
    if mp["means"].shape[-1] > 2:  # benchmark_value: the greedy G* at d >= 3
        out["slate"] = greedy_subset(mp["means"], slate_size, mp["ref"])
    return out


def truth_json(plain: dict) -> dict:
    """The truth as ``truth.json`` writes it: ``slate`` null at d = 2, and which ``benchmark`` gave ``V*``.

    Args:
      plain: the :func:`truth` dict as plain values (changed in place).

    Returns:
      ``plain``, with ``slate`` (null at ``d = 2``) and ``benchmark`` (``"exhaustive"`` or ``"greedy"``).
    """
    plain.setdefault("slate", None)
    plain["benchmark"] = "exhaustive" if plain["slate"] is None else "greedy"
    return plain


def final_slate(final: Final, ctx: Context):
    """The set a slate run recommends: its final slate, as a ``(K,)`` mask.

    Args:
      final: the run's :class:`~mobandit_jax.types.Final` (its ``action``, the last slate ``(k,)``).
      ctx: the run's :class:`~mobandit_jax.types.Context`.

    Returns:
      ``(K,)`` bool.
    """
    return jnp.zeros(ctx.num_arms, bool).at[final.action].set(True)


def true_set(truth: dict, means) -> list | None:
    """The set a recommended slate is compared with: the greedy slate ``G*`` (d >= 3) as a mask; none at d = 2,
    where only the value of the best slate is computed."""
    if truth.get("slate") is None:
        return None
    return np.isin(np.arange(len(means)), truth["slate"]).tolist()


def example(seed: int) -> Context:
    """A small context of the family (the conformance test): 6 arms, 2 objectives, slates of 2.

    Args:
      seed: draws the means.

    Returns:
      A :class:`~mobandit_jax.types.Context` with horizon ``20 + 10 seed``.
    """
    means = np.random.default_rng(seed).uniform(0.1, 0.9, (6, 2))
    inst = make_stochastic(means, noise="gaussian", sigma=0.1)._replace(ref=np.zeros(2), slate_size=2)
    return Context.of(inst, 20 + 10 * seed)


register_family("slate", kind=ONLINE, metrics=build, truth=truth, truth_json=truth_json, recommended=final_slate,
                true_set=true_set,
                example=example, doc="top-k slates scored by hypervolume, alpha-regret (Gutowski et al.)")
