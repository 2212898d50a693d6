"""DTLZ-style synthetic top-k Pareto bandit instances (Gutowski et al., Experiments, "Synthetic Environments").

An instance has ``n`` arms with mean vectors in ``[0, 1]^d``:

- ``n_front = max(10, floor(0.35 n))`` arms on a parametric front given by the DTLZ angular
  parameterisation (Deb et al. 2005) with ``d - 1`` angles ``theta_j``::

      x_i = (prod_{j < i} sin^a(theta_j)) * (cos^a(theta_i) if i < d - 1 else 1)

  with the shape exponent ``a``: ``"concave"`` a = 1 (sum x_i^2 = 1), ``"convex"`` a = 0.5
  (sum x_i^4 = 1), ``"linear"`` a = 2 (simplex), then rescaled by ``s = min(0.45 d, 2.5)`` and clipped
  to ``[0.01, 1]^d``, and ``"clusters"`` a = 1 with the first angle in ``[0, pi/5] U [3pi/10, pi/2]``;
- ``n - n_front`` dominated distractors uniform in ``[0, 0.3]^d``.

Pulls return the mean plus ``N(0, sigma^2)`` noise per coordinate, clipped to ``[0, 1]^d``, and
cost nothing (no budget). The reference point is 0. The truth every metric scores is the paper's: the
front's noiseless points (the means above), not the slightly different means of the clipped draws
(``kind = "stochastic"`` scores the clipped means instead).

Readings of points the text leaves open (documented in ``experiments/topk_pareto/report.md``):

- every angle is drawn i.i.d. ``U[0, pi/2]`` (literal reading; no area-uniform sampling on the sphere);
- "theta_1" of the clusters geometry is the first angle (the only one at d = 2); each front arm
  draws it uniformly on the union of the two intervals (equal lengths, so each cluster w.p. 1/2);
- distractors are drawn uniformly in ``[0, 0.3]^d`` without rejection (the text calls them
  dominated; a rare distractor that no front arm dominates is kept);
- the arms are randomly permuted, so index-based tie-breaking favours neither group;
- each seed draws its own instance (the paper averages over 10 "random seeds" and pairs methods "by
  environment seed", Table 6): by default the instance is drawn by ``reset`` from the seed's
  environment key, so every method of a seed faces the same instance and the same noise stream.
  With ``instance_seed = s`` (an integer) one fixed instance, drawn from ``PRNGKey(s)``, is used
  for every seed.

Every front geometry is an array parameter of one code path, so the four fronts share a compilation.

References:
  - Gutowski, Chhel, Letard & Lamprier, "Top-k Pareto Bandits: Hypervolume Regret for Multi-Objective
    Slate Selection" (preprint).
  - Deb, Thiele, Laumanns & Zitzler, "Scalable multi-objective optimization test problems", Congress
    on Evolutionary Computation (CEC) 2002; extended as "Scalable test problems for evolutionary
    multiobjective optimization", in Evolutionary Multiobjective Optimization, Springer, 2005.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..registry import register_env
from ..types import Env, EnvInstance

FRONTS = ("concave", "convex", "linear", "clusters")
DISTRACTOR_HIGH = 0.3
_INSTANCE_TAG = 0x5EED001  # fold-in tag separating the instance draw from the per-arm noise streams


class DTLZParams(NamedTuple):
    """Array parameters of a DTLZ instance; ``means`` is replaced per seed by ``reset``."""

    means: jnp.ndarray  # (n, d)
    sigma: jnp.ndarray  # () noise standard deviation
    alpha: jnp.ndarray  # () shape exponent
    scale: jnp.ndarray  # () rescale factor (linear front), 1 otherwise
    clip_lo: jnp.ndarray  # () lower clip of front coordinates (0.01 for linear)
    theta_len: jnp.ndarray  # () total length of the first angle's support
    gap_at: jnp.ndarray  # () position of the cluster gap within that support
    gap: jnp.ndarray  # () width of the cluster gap (0 for connected fronts)


def n_front_arms(n: int) -> int:
    """Number of front arms ``max(10, floor(0.35 n))``.

    Args:
      n: number of arms.

    Returns:
      The number of front arms.
    """
    return max(10, int(math.floor(0.35 * n)))


def linear_scale(d: int) -> float:
    """Rescale factor ``s = min(0.45 d, 2.5)`` of the linear front.

    Args:
      d: number of objectives.

    Returns:
      ``s``.
    """
    return min(0.45 * d, 2.5)


def front_arrays(front: str, d: int) -> dict:
    """The array parameters (alpha, scale, clip, angle support) of a front geometry.

    Args:
      front: one of :data:`FRONTS`.
      d: number of objectives.

    Returns:
      A dict of floats: ``alpha``, ``scale``, ``clip_lo``, ``theta_len``, ``gap_at``, ``gap``.

    Raises:
      ValueError: ``front`` is not one of :data:`FRONTS`.
    """
    if front not in FRONTS:
        raise ValueError(f"dtlz: unknown front {front!r}; allowed: {list(FRONTS)}")
    half_pi = math.pi / 2
    out = dict(alpha=1.0, scale=1.0, clip_lo=0.0, theta_len=half_pi, gap_at=half_pi, gap=0.0)
    if front == "convex":
        out["alpha"] = 0.5
    elif front == "linear":
        out.update(alpha=2.0, scale=linear_scale(d), clip_lo=0.01)
    elif front == "clusters":
        # theta_1 in [0, pi/5] U [3 pi/10, pi/2]: support length 2 pi/5, gap pi/10 after pi/5.
        out.update(theta_len=2 * math.pi / 5, gap_at=math.pi / 5, gap=math.pi / 10)
    return out


def dtlz_front_points(theta, alpha):
    """DTLZ angular map ``(..., d-1) angles -> (..., d)`` points with shape exponent ``alpha``.

    Args:
      theta: ``(..., d - 1)`` angles.
      alpha: shape exponent ``a``.

    Returns:
      ``(..., d)`` points.
    """
    s = jnp.sin(theta) ** alpha
    c = jnp.cos(theta) ** alpha
    ones = jnp.ones(theta.shape[:-1] + (1,), theta.dtype)
    prefix = jnp.concatenate([ones, jnp.cumprod(s, axis=-1)], axis=-1)  # prod_{j<i} sin^a
    last = jnp.concatenate([c, ones], axis=-1)
    return prefix * last


def draw_means(key, n: int, d: int, params: DTLZParams):
    """Draw one instance's ``(n, d)`` mean matrix from ``key`` (pure, jittable).

    Args:
      key: a PRNG key.
      n: number of arms (static).
      d: number of objectives (static).
      params: the :class:`DTLZParams` of the front geometry (its ``means`` are not read).

    Returns:
      ``(n, d)`` means: :func:`n_front_arms` front points and the distractors, randomly permuted.
    """
    nf = n_front_arms(n)
    k_theta, k_first, k_dom, k_perm = jax.random.split(key, 4)
    theta = jax.random.uniform(k_theta, (nf, d - 1), minval=0.0, maxval=math.pi / 2)
    u = jax.random.uniform(k_first, (nf,)) * params.theta_len
    first = u + jnp.where(u >= params.gap_at, params.gap, 0.0)
    theta = theta.at[:, 0].set(first)
    front = dtlz_front_points(theta, params.alpha) * params.scale
    front = jnp.clip(front, params.clip_lo, 1.0)
    dom = jax.random.uniform(k_dom, (n - nf, d), minval=0.0, maxval=DISTRACTOR_HIGH)
    means = jnp.concatenate([front, dom], axis=0)
    return means[jax.random.permutation(k_perm, n)]


_draw_means_once = jax.jit(draw_means, static_argnums=(1, 2))  # a plan's instance: one program, not an op at a time


def front_membership(key, n: int) -> np.ndarray:
    """``(n,)`` bool: which arms of the instance drawn from ``key`` are front arms (not distractors).

    Args:
      key: the key :func:`draw_means` drew the instance from.
      n: number of arms.

    Returns:
      ``(n,)`` numpy bool.
    """
    nf = n_front_arms(n)
    perm = np.asarray(jax.random.permutation(jax.random.split(key, 4)[3], n))
    return perm < nf


def _validate(section: dict) -> dict:
    """Check the env section and return the resolved options."""
    d = section.get("d", 2)
    n = section.get("n", 36)
    k = section.get("k", 3)
    sigma = section.get("sigma", 0.05)
    front = section.get("front", "concave")
    seed = section.get("instance_seed")
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 2:
        raise ValueError(f"dtlz: d must be an integer >= 2, got {d!r}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 10:
        raise ValueError(f"dtlz: n must be an integer >= 10 (at least 10 front arms), got {n!r}")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 1 <= k <= n:
        raise ValueError(f"dtlz: k (slate size) must be an integer in [1, n={n}], got {k!r}")
    if d >= 3 and k > 17:
        raise ValueError(f"dtlz: k={k} > 17 at d={d} is outside the exact hypervolume kernel's envelope")
    if not isinstance(sigma, (int, float)) or isinstance(sigma, bool) or not sigma >= 0:
        raise ValueError(f"dtlz: sigma must be a number >= 0, got {sigma!r}")
    if front not in FRONTS:
        raise ValueError(f"dtlz: unknown front {front!r}; allowed: {list(FRONTS)}")
    if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0):
        raise ValueError(f"dtlz: instance_seed must be a non-negative integer or absent, got {seed!r}")
    return dict(d=int(d), n=int(n), k=int(k), sigma=float(sigma), front=front, instance_seed=seed)


def make_params(front: str, d: int, sigma: float, means) -> DTLZParams:
    """Assemble the :class:`DTLZParams` pytree of a front geometry around ``means``.

    Args:
      front: one of :data:`FRONTS`.
      d: number of objectives.
      sigma: noise standard deviation.
      means: ``(n, d)`` means.

    Returns:
      The :class:`DTLZParams`, float32.
    """
    arrays = {k: jnp.asarray(v, jnp.float32) for k, v in front_arrays(front, d).items()}
    return DTLZParams(means=jnp.asarray(means, jnp.float32), sigma=jnp.asarray(sigma, jnp.float32), **arrays)


def make_env(n: int, d: int, per_seed: bool) -> Env:
    """The pure :class:`Env`: Gaussian noise clipped to [0,1]^d; ``reset`` redraws the instance.

    Args:
      n: number of arms.
      d: number of objectives.
      per_seed: whether ``reset`` draws each seed's own instance.

    Returns:
      The :class:`~mobandit_jax.types.Env` (pulls cost 0).
    """

    def sample(key, arm, pull_index, t, params):
        k = jax.random.fold_in(jax.random.fold_in(key, arm), pull_index)
        noise = params.sigma * jax.random.normal(k, (d,), params.means.dtype)
        reward = jnp.clip(params.means[arm] + noise, 0.0, 1.0)
        return reward, jnp.zeros((), params.means.dtype)

    def reset(key_env, params):
        key = jax.random.fold_in(key_env, _INSTANCE_TAG)
        return params._replace(means=draw_means(key, n, d, params))

    return Env(sample=sample, num_arms=n, dim=d, reset=reset if per_seed else None)


def instance_key_for_env_key(key_env):
    """The key from which ``reset`` draws a seed's instance (for tests and reports).

    Args:
      key_env: a seed's environment key.

    Returns:
      The PRNG key of its instance.
    """
    return jax.random.fold_in(key_env, _INSTANCE_TAG)


@register_env(
    "dtlz",
    doc="DTLZ fronts (concave/convex/linear/clusters) + dominated distractors, Gutowski et al. (top-k slates)",
    keys=("d", "n", "k", "sigma", "front", "instance_seed"),
)
def build(section: dict, config: dict) -> EnvInstance:
    """Build a DTLZ top-k instance; per-seed instances unless ``instance_seed`` is given.

    Args:
      section: the spec's ``[env]`` table (``d``, ``n``, ``k``, ``sigma``, ``front``, ``instance_seed``).
      config: the whole spec (not read).

    Returns:
      The :class:`~mobandit_jax.types.EnvInstance` (reference point 0, slate size ``k``).

    Raises:
      ValueError: a key's value is out of range, naming it and what is allowed.
    """
    o = _validate(section)
    d, n = o["d"], o["n"]
    params = make_params(o["front"], d, o["sigma"], jnp.zeros((n, d)))
    seed = o["instance_seed"]
    key = jax.random.PRNGKey(0 if seed is None else int(seed))
    means = _draw_means_once(key, n, d, params)
    params = params._replace(means=means)
    env = make_env(n, d, per_seed=seed is None)
    info = {"front": o["front"], "d": d, "per_seed_instance": seed is None}
    return EnvInstance(
        env=env,
        params=params,
        means=np.asarray(means, np.float64),
        mean_costs=None,
        static_key=("dtlz", n, d, seed is None),
        info=info,
        ref=np.zeros(d),
        slate_size=o["k"],
        noise_sigma=o["sigma"],
    )
