"""Stochastic mean-table environment of PDMOB (Section 2.2 and Section 4.1).

Each arm ``a`` has a location vector ``r(a)`` in ``[0, 1]^d`` (the spec's ``means``); a pull returns
``y`` with each objective drawn independently. The truth every metric and policy context reads
(``EnvInstance.means``) is the exact mean ``E[y]`` of the feedback model (:func:`feedback_means`):

=================================  ====================================  ==========================================
``noise`` (keys)                   reward ``y`` of a pull                truth ``E[y]``
=================================  ====================================  ==========================================
``"beta"`` (``concentration c``)   ``Beta(c r, c (1 - r))``; ``r`` if    ``r``
                                   ``r`` is 0 or 1
``"bernoulli"``                    ``Bernoulli(r)``                      ``r``
``"gaussian"`` (``sigma``)         ``clip(r + sigma Z, 0, 1)``,          ``(1 - Phi(b)) + r (Phi(b) - Phi(a))``
                                   ``Z ~ N(0, 1)``                       ``+ sigma (phi(a) - phi(b))``,
                                                                         ``a = -r / sigma``, ``b = (1 - r) / sigma``
``"gaussian"``, ``clip = false``   ``r + sigma Z`` (unbounded)           ``r``
=================================  ====================================  ==========================================

The clipped-Gaussian truth is ``E[clip(Y, 0, 1)] = P(Y >= 1) + E[Y 1{0 < Y < 1}]`` for
``Y ~ N(r, sigma^2)`` (the truncated-normal first moment), computed in float64; clipping pulls it
towards 1/2 near the bounds (``r = 0.05, sigma = 0.5`` gives about 0.22). For ``c <= 1`` Beta draws
use Johnk's exact rejection method (both shapes <= 1, acceptance >= pi/4) with a block of proposals
per draw, much cheaper under ``vmap`` than gamma ratios.

The reward of arm ``i`` at its ``j``-th pull is a pure function of ``(key, i, j)``, on one of two streams:

- ``sample`` (:func:`stochastic_sampler`), which every family draws from: the key folded with ``i``, then with
  ``j``, then JAX's draw from that key (``2 + d`` Threefry hashes for Bernoulli and Gaussian rewards);
- ``sample.counter_sampler`` (:func:`counter_sampler`, the same signature) and ``sample.counter_lanes``
  (:func:`counter_lanes`: many pulls of many seeds, the seeds last), which the step-wise fixed-confidence methods
  draw from: the pull's ``2 B`` random words (``B = ceil(d / 2)``) are the Threefry-2x32 hashes of the counters
  ``(B i + b, j)``, ``b < B``, under the key (:func:`~mobandit_jax.kernels.threefry.threefry2x32`); a Bernoulli or
  Gaussian objective ``n`` takes word ``n`` (a uniform number of 24 bits; the Gaussian draw is
  ``sqrt(2) erfinv(2 u - 1 + 2^-24)``), a Beta reward uses the first two words as the key of its sampler. For
  ``d <= 2`` that is one hash a pull: the cheaper stream where a method draws millions of pulls.

References:
  - PDMOB: Ma, Zhang, Sugiyama & Zhou, "Selective Ensemble Based on Preference-Directed
    Multi-Objective Bandits", arXiv 2026, https://arxiv.org/abs/2606.21929.
  - Johnk, "Erzeugung von betaverteilten und gammaverteilten Zufallszahlen", Metrika 8, 1964 (the
    Beta sampler).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import plain
from ..kernels.threefry import UNIFORM_BITS, threefry2x32, unit_uniform
from ..registry import register_env
from ..types import Env, EnvInstance

NOISES = ("beta", "bernoulli", "gaussian")
JOHNK_TRIES = 8  # Johnk proposals drawn per block (see beta_johnk)


class StochasticParams(NamedTuple):
    """Sweepable parameters: the mean table, the Beta concentration and the Gaussian sigma."""

    means: jnp.ndarray  # (K, d)
    concentration: jnp.ndarray  # ()
    sigma: jnp.ndarray  # ()


def beta_johnk(key, a, b, tries: int = JOHNK_TRIES):
    """Exact ``Beta(a, b)`` draws by Johnk's rejection method, efficient for ``a, b <= 1``.

    With ``X = U^(1/a)``, ``Y = V^(1/b)``, conditional on ``X + Y <= 1`` the ratio ``X / (X + Y)``
    is ``Beta(a, b)`` (Johnk, 1964). Acceptance is ``Gamma(a+1) Gamma(b+1) / Gamma(a+b+1)``,
    at least pi/4 when ``a + b <= 1``. ``tries`` proposals per entry are drawn at once and the first
    accepted one is kept; a block is redrawn only where all failed (probability <= (1 - pi/4)^tries,
    5e-6 for 8 tries), so a batched run almost never loops. Computed in log space so that small
    shapes do not underflow.

    Args:
      key: a PRNG key.
      a: shape ``a`` (array, positive).
      b: shape ``b`` (array shaped like ``a``, positive).
      tries: proposals drawn per entry and block (static).

    Returns:
      Draws shaped like ``a``, in ``a``'s dtype.
    """

    def block(i):
        u = jax.random.uniform(jax.random.fold_in(key, i), (tries, 2) + a.shape, a.dtype,
                               minval=jnp.finfo(a.dtype).tiny)
        # one kernel for the bits: without the barrier XLA copies the hash into both halves' kernels
        log_u = jnp.log(jax.lax.optimization_barrier(u))
        log_x, log_y = log_u[:, 0] / a, log_u[:, 1] / b
        log_s = jnp.logaddexp(log_x, log_y)
        accepted = log_s <= 0
        first = jnp.argmax(accepted, axis=0)
        value = jnp.take_along_axis(jnp.exp(log_x - log_s), first[None], axis=0)[0]
        return jnp.any(accepted, axis=0), value

    def cond(carry):
        return ~jnp.all(carry[1])

    def body(carry):
        i, done, value = carry
        ok, x = block(i)
        return i + 1, done | ok, jnp.where(done, value, x)

    ok, x = block(0)
    return jax.lax.while_loop(cond, body, (jnp.ones((), jnp.int32), ok, x))[2]


def _beta(key, r, c, johnk: bool):
    a, b = jnp.maximum(c * r, 1e-30), jnp.maximum(c * (1 - r), 1e-30)
    y = beta_johnk(key, a, b) if johnk else jax.random.beta(key, a, b)
    return jnp.where(r <= 0, 0.0, jnp.where(r >= 1, 1.0, y))


def _bernoulli(key, r, c):
    return jax.random.bernoulli(key, r).astype(r.dtype)


def _check_noise(noise: str):
    if noise not in NOISES:
        raise ValueError(f"unknown noise {noise!r}; allowed: {list(NOISES)}")


def stochastic_sampler(noise: str, small_concentration: bool = True, clip: bool = True):
    """Return ``sample(key, arm, pull_index, t, params)`` for a feedback model in ``NOISES``.

    ``small_concentration`` (static) selects Johnk's Beta sampler, valid for concentrations
    ``c <= 1``; larger concentrations use ``jax.random.beta``. ``clip`` (static, Gaussian noise
    only) clips the Gaussian draw to ``[0, 1]``.

    Args:
      noise: one of :data:`NOISES`.
      small_concentration: use Johnk's Beta sampler (static).
      clip: clip Gaussian draws to ``[0, 1]`` (static).

    Returns:
      The sampler; its params are :class:`StochasticParams`, its reward ``(d,)`` and its cost 0. Its attributes
      ``counter_sampler`` and ``counter_lanes`` are :func:`counter_sampler` and :func:`counter_lanes` of the same
      options (the module docstring's second stream).

    Raises:
      ValueError: ``noise`` is not one of :data:`NOISES`.
    """
    _check_noise(noise)

    def sample(key, arm, pull_index, t, params):
        key = jax.random.fold_in(jax.random.fold_in(key, arm), pull_index)
        r = params.means[arm]
        if noise == "beta":
            y = _beta(key, r, params.concentration, small_concentration)
        elif noise == "bernoulli":
            y = _bernoulli(key, r, params.concentration)
        else:
            y = r + params.sigma * jax.random.normal(key, r.shape, r.dtype)
            y = jnp.clip(y, 0.0, 1.0) if clip else y
        return y, jnp.zeros((), r.dtype)

    sample.counter_sampler = counter_sampler(noise, small_concentration, clip)
    sample.counter_lanes = counter_lanes(noise, small_concentration, clip)
    return sample


def counter_lanes(noise: str, small_concentration: bool = True, clip: bool = True):
    """The counter stream of the module docstring, many pulls of many seeds at once, the seeds (lanes) last:
    ``draw(keys, arms, pull_index, params) -> (rewards (n, d, L), costs (n, L))`` for the keys ``(L,)`` of ``L``
    seeds, the pulls ``arms (n, L)`` and ``pull_index (n, L)`` of each (``arms = None``: every arm in order,
    ``n = K``), and each seed's params (the seeds first: ``means (L, K, d)``). Elementwise along the lanes: each
    objective's draw is a vectorized kernel over ``(n, L)``.

    Args:
      noise: one of :data:`NOISES`.
      small_concentration: use Johnk's Beta sampler (static).
      clip: clip Gaussian draws to ``[0, 1]`` (static).

    Returns:
      The batched draw (its pull ``(arm, j)`` of seed ``l`` is :func:`counter_sampler`'s).

    Raises:
      ValueError: ``noise`` is not one of :data:`NOISES`.
    """
    _check_noise(noise)

    def draw(keys, arms, pull_index, params):
        K, d = params.means.shape[-2:]
        dtype = params.means.dtype
        if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
            keys = jax.random.key_data(keys)
        blocks, index = -(-d // 2), jnp.asarray(pull_index, jnp.uint32)
        means = jnp.moveaxis(params.means, 0, -1)  # (K, d, L)
        if arms is None:
            arms, r = jnp.arange(K, dtype=jnp.uint32)[:, None], means
        else:
            arms = jnp.asarray(arms, jnp.uint32)
            r = jnp.take_along_axis(means, arms[:, None, :].astype(jnp.int32), axis=0)  # (n, d, L): each pull's arm
        words = [threefry2x32(keys[:, 0], keys[:, 1], blocks * arms + b, index) for b in range(blocks)]
        words = [w for pair in words for w in pair]  # the 2 B words in counter order: objective n takes word n
        if noise == "beta":
            key_of = jnp.stack(words[:2], axis=-1)  # (n, L, 2)
            y = jax.vmap(jax.vmap(lambda k, r, c: _beta(k, r, c, small_concentration), in_axes=(0, 1, 0)),
                         in_axes=(0, 0, None), out_axes=0)(key_of, r, params.concentration)
            y = jnp.moveaxis(y, -1, 1)  # (n, d, L)
        elif noise == "bernoulli":
            y = jnp.stack([(unit_uniform(words[n], dtype) < r[:, n]).astype(dtype) for n in range(d)], axis=1)
        else:
            low, root2 = np.asarray(2.0 ** -UNIFORM_BITS, dtype), np.asarray(np.sqrt(2.0), dtype)
            z = jnp.stack([root2 * jax.lax.erf_inv(2 * unit_uniform(words[n], dtype) - 1 + low) for n in range(d)],
                          axis=1)
            y = r + params.sigma * z
            y = jnp.clip(y, 0.0, 1.0) if clip else y
        return y, jnp.zeros(index.shape, dtype)

    return draw


def counter_sampler(noise: str, small_concentration: bool = True, clip: bool = True):
    """The counter stream of the module docstring one pull at a time: ``sample(key, arm, pull_index, t, params)`` as
    :func:`stochastic_sampler`'s (:func:`counter_lanes` of one pull).

    Args:
      noise: one of :data:`NOISES`.
      small_concentration: use Johnk's Beta sampler (static).
      clip: clip Gaussian draws to ``[0, 1]`` (static).

    Returns:
      The sampler; its params are :class:`StochasticParams`, its reward ``(d,)`` and its cost 0.

    Raises:
      ValueError: ``noise`` is not one of :data:`NOISES`.
    """
    lanes = counter_lanes(noise, small_concentration, clip)

    def sample(key, arm, pull_index, t, params):
        one = lambda x: jnp.reshape(x, (1, 1))  # noqa: E731
        y, c = lanes(key[None], one(arm), one(pull_index), jax.tree_util.tree_map(lambda x: x[None], params))
        return y[0, :, 0], c[0, 0]

    return sample


def validate_means(means, name: str = "means", bounded: bool = True) -> np.ndarray:
    """Check a ``(K, d)`` mean table: finite, in [0, 1] if ``bounded``, K >= 2; errors name the offending entry.

    Args:
      means: the ``(K, d)`` table (array-like).
      name: its name in error messages.
      bounded: require values in ``[0, 1]``.

    Returns:
      ``(K, d)`` float64 numpy table.

    Raises:
      ValueError: a wrong shape, ``K < 2``, or a bad entry, naming it.
    """
    m = np.asarray(means, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError(f"{name} must be a (K, d) table of arms x objectives; got shape {m.shape}")
    if m.shape[0] < 2:
        raise ValueError(f"{name} must have K >= 2 arms; got K = {m.shape[0]}")
    if m.shape[1] < 1:
        raise ValueError(f"{name} must have d >= 1 objectives; got d = {m.shape[1]}")
    bad = np.argwhere(~np.isfinite(m))
    if bad.size:
        i, j = bad[0]
        raise ValueError(f"{name}[{i}][{j}] is {m[i, j]}: NaN/inf is not allowed")
    bad = np.argwhere((m < 0) | (m > 1))
    if bounded and bad.size:
        i, j = bad[0]
        raise ValueError(f"{name}[{i}][{j}] = {m[i, j]} is outside [0, 1]: rewards must lie in [0, 1] "
                         "(any real with noise = 'gaussian' and clip = false)")
    return m


def clipped_gaussian_mean(mu, sigma) -> np.ndarray:
    """``E[clip(Y, 0, 1)]`` for ``Y ~ N(mu, sigma^2)``, elementwise in float64 (``mu`` itself at ``sigma = 0``).

    Args:
      mu: locations (array-like).
      sigma: the standard deviation, ``>= 0``.

    Returns:
      float64 numpy means shaped like ``mu``.
    """
    mu = np.asarray(mu, np.float64)
    if sigma == 0:
        return mu.copy()
    from scipy.special import ndtr  # here: scipy's import costs every run a quarter of a second

    a, b = -mu / sigma, (1.0 - mu) / sigma
    pdf = np.exp(-0.5 * np.stack([a, b]) ** 2) / np.sqrt(2.0 * np.pi)
    return ndtr(-b) + mu * (ndtr(b) - ndtr(a)) + sigma * (pdf[0] - pdf[1])


def feedback_means(means, noise: str, sigma: float = 0.1, clip: bool = True) -> np.ndarray:
    """The exact mean reward ``E[y]`` (float64) of each arm and objective (the module docstring's table).

    Args:
      means: ``(K, d)`` locations ``r``.
      noise: one of :data:`NOISES`.
      sigma: Gaussian standard deviation.
      clip: whether Gaussian draws are clipped.

    Returns:
      ``(K, d)`` float64 numpy truth.

    Raises:
      ValueError: ``noise`` is not one of :data:`NOISES`.
    """
    _check_noise(noise)
    m = np.asarray(means, np.float64)
    return clipped_gaussian_mean(m, float(sigma)) if noise == "gaussian" and clip else m


CLIP_SHOWN = 1e-6  # a mean that clipping moves by more than this is named in the clip note (6 digits are shown)
CLIP_LISTED = 4  # the moved entries the note names, the largest shifts first


def clip_note(locations, means, arms=None, objectives=None) -> str | None:
    """The line a run prints where clipped Gaussian draws move the means: which arms and objectives moved, from
    what to what, and by how much at most (None where no mean moved by more than :data:`CLIP_SHOWN`).

    Args:
      locations: ``(K, d)`` the table's values ``r``.
      means: ``(K, d)`` the clipped means ``E[clip(r + sigma Z, 0, 1)]`` (:func:`clipped_gaussian_mean`).
      arms: the arms' names (default: ``arm 0``, ``arm 1``, ...).
      objectives: the objectives' names (default: ``objective 0``, ...).

    Returns:
      One line, or None.
    """
    r, mu = np.asarray(locations, np.float64), np.asarray(means, np.float64)
    shift = np.abs(mu - r)
    moved = [tuple(ij) for ij in np.argwhere(shift > CLIP_SHOWN)]
    if not moved:
        return None
    moved.sort(key=lambda ij: -shift[ij])
    arm = (lambda i: i) if arms is None else (lambda i: arms[i])
    obj = (lambda j: f"objective {j}") if objectives is None else (lambda j: objectives[j])
    named = ", ".join(f"arm {arm(i)} {obj(j)} {r[i, j]:.6g} -> {mu[i, j]:.6g}" for i, j in moved[:CLIP_LISTED])
    more = f" and {len(moved) - CLIP_LISTED} more" if len(moved) > CLIP_LISTED else ""
    return (f"clip = true moves {len(moved)} of {r.size} means (Gaussian draws clipped to [0, 1]), by at most "
            f"{shift[moved[0]]:.3g}: {named}{more}; the metrics and truth.json use the clipped means "
            "(clip = false keeps the table's)")


def make_stochastic(means, noise: str = "beta", concentration: float = 1.0, sigma: float = 0.1,
                    dtype=jnp.float32, clip: bool = True, arms=None, objectives=None) -> EnvInstance:
    """Build a stochastic mean-table environment (validated) as an :class:`EnvInstance`.

    ``means`` are the locations ``r`` the sampler draws around; ``EnvInstance.means`` is the truth
    :func:`feedback_means` (they differ only for clipped Gaussian noise, where ``info["notes"]`` holds the
    :func:`clip_note` a run prints).

    Args:
      means: ``(K, d)`` locations in ``[0, 1]`` (any real for unclipped Gaussian noise).
      noise: one of :data:`NOISES`.
      concentration: Beta concentration ``c > 0``.
      sigma: Gaussian standard deviation ``>= 0``.
      dtype: dtype of the params.
      clip: clip Gaussian draws to ``[0, 1]`` (``False`` only with ``noise = "gaussian"``).
      arms: the arms' names for the clip note (default: their indices).
      objectives: the objectives' names for the clip note (default: their indices).

    Returns:
      The :class:`~mobandit_jax.types.EnvInstance` (pulls cost nothing).

    Raises:
      ValueError: an option or mean out of range, naming it.
    """
    if not isinstance(clip, (bool, np.bool_)):
        raise ValueError(f"clip = {plain(clip)!r} must be true or false")
    if not clip and noise != "gaussian":
        raise ValueError(f"clip = false applies to noise = 'gaussian' only; noise = {noise!r} lies in [0, 1]")
    m = validate_means(means, bounded=bool(clip))
    if not (np.isfinite(concentration) and concentration > 0):
        raise ValueError(f"concentration = {concentration} must be a positive number")
    if not (np.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma = {sigma} must be >= 0")
    small, clip = bool(concentration <= 1.0), bool(clip)
    env = Env(sample=stochastic_sampler(noise, small, clip), num_arms=m.shape[0], dim=m.shape[1])
    params = StochasticParams(jnp.asarray(m, dtype), jnp.asarray(concentration, dtype), jnp.asarray(sigma, dtype))
    key = ("stochastic", noise, small) + (() if clip else ("unclipped",)) + m.shape
    truth = feedback_means(m, noise, sigma, clip)
    note = clip_note(m, truth, arms, objectives)
    return EnvInstance(env=env, params=params, means=truth, static_key=key,
                       noise_sigma=float(sigma) if noise == "gaussian" else None, bounded=clip,
                       info={} if note is None else {"notes": (note,)})


@register_env("stochastic", doc="mean table in [0,1]^d with Beta, Bernoulli or clipped Gaussian feedback (PDMOB)",
          keys=("means", "noise", "concentration", "sigma", "clip"))
def _build(section, config):
    if "means" not in section:
        raise KeyError("env kind 'stochastic' needs the key 'means' (K rows of d values in [0, 1])")
    return make_stochastic(section["means"], section.get("noise", "beta"),
                           float(section.get("concentration", 1.0)), float(section.get("sigma", 0.1)),
                           clip=section.get("clip", True))
