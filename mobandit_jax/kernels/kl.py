"""Bernoulli KL divergence and the KL-UCB confidence indices (Garivier & Cappe, 2011).

Seed 000, Eq. (3): ``U = sup{q in [p, 1] : n kl(p, q) <= beta}``; here ``level = beta / n``.
The root is found by a fixed-iteration, branch-free bisection on the bracket given by Pinsker's
inequality (``kl(p, q) >= 2 (p - q)^2``), so ``q* <= p + sqrt(level / 2)``. The divergence is
evaluated through ``log1p`` of small relative differences, which keeps float32 comparisons sharp
at levels as small as 1e-6 where ``log(p / q)`` would lose its last digits.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp


def kl_bernoulli(p, q):
    """Elementwise ``kl(p, q) = p log(p/q) + (1-p) log((1-p)/(1-q))`` with ``0 log 0 = 0``."""
    p, q = jnp.asarray(p), jnp.asarray(q)
    a = jnp.where(p > 0, p * jnp.log1p((p - q) / q), 0.0)
    b = jnp.where(p < 1, (1 - p) * jnp.log1p((q - p) / (1 - q)), 0.0)
    return a + b


def _iterations(dtype) -> int:
    # Bracket width <= 1; the midpoint of the last bracket is within 2^-(n+1) of the root.
    return 40 if jnp.dtype(dtype) == jnp.float64 else 23


def _bisect(p, level, lo, hi, upper: bool):
    def body(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        inside = kl_bernoulli(p, mid) <= level
        # Upper index: inside -> root is above mid. Lower index: inside -> root is below mid.
        go_up = inside if upper else ~inside
        return jnp.where(go_up, mid, lo), jnp.where(go_up, hi, mid)

    lo, hi = jax.lax.fori_loop(0, _iterations(p.dtype), body, (lo, hi))
    return 0.5 * (lo + hi)


def _prepare(p, level):
    p = jnp.asarray(p)
    if not jnp.issubdtype(p.dtype, jnp.floating):
        p = p.astype(jnp.float32)
    level = jnp.asarray(level, p.dtype)
    p, level = jnp.broadcast_arrays(p, level)
    return jnp.clip(p, 0.0, 1.0), jnp.maximum(level, 0.0)


@jax.jit
def klucb_upper(p, level):
    """Elementwise ``sup{q in [p, 1] : kl(p, q) <= level}`` (exact at p = 1, level = 0 or inf)."""
    p, level = _prepare(p, level)
    hi = jnp.minimum(1.0, p + jnp.sqrt(level / 2))
    q = _bisect(p, level, p, hi, upper=True)
    q = jnp.where(hi >= 1.0, jnp.where(kl_bernoulli(p, jnp.ones_like(p)) <= level, 1.0, q), q)
    q = jnp.where(level == 0, p, q)
    q = jnp.where(jnp.isinf(level) | (p >= 1.0), 1.0, q)
    return q


@jax.jit
def klucb_lower(p, level):
    """Elementwise ``inf{q in [0, p] : kl(p, q) <= level}`` (exact at p = 0, level = 0 or inf)."""
    p, level = _prepare(p, level)
    lo = jnp.maximum(0.0, p - jnp.sqrt(level / 2))
    q = _bisect(p, level, lo, p, upper=False)
    q = jnp.where(lo <= 0.0, jnp.where(kl_bernoulli(p, jnp.zeros_like(p)) <= level, 0.0, q), q)
    q = jnp.where(level == 0, p, q)
    q = jnp.where(jnp.isinf(level) | (p <= 0.0), 0.0, q)
    return q
