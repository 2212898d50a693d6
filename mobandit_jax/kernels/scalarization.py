"""Scalarisation weights, directions and reference points: the interior simplex lattice (ChebyshevUCB,
Mandow et al. 2023), directions uniform on the positive unit sphere and the hypervolume scalarisation
``s_lambda`` (Zhang & Golovin 2020, Lemma 5), and the nadir of an empirical Pareto front.

References:
  - Mandow, Martin-Albo & Perez-de-la-Cruz, "Multi-objective bandit algorithms with Chebyshev
    scalarization", Multi-Objective Decision Making Workshop (MODeM, ECAI) 2023.
  - Zhang & Golovin, "Random hypervolume scalarizations for provable multi-objective black box
    optimization", ICML 2020 (PMLR 119).
"""
from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np


def simplex_interior_lattice(d: int, at_least: int) -> np.ndarray:
    """Uniformly spread weights ``h / H`` with integer ``h_l >= 1``, smallest ``H`` giving >= ``at_least``, in
    lexicographic order of ``h``; at ``d = 1`` the single weight ``[1]``.

    The ``C(H - 1, d - 1)`` compositions of ``H`` into ``d`` positive parts are those of the cut points
    ``0 < c_1 < ... < c_{d-1} < H`` (``h_l = c_l - c_{l-1}``), whose lexicographic order is that of ``h``.

    Args:
      d: number of objectives.
      at_least: the least number of weights wanted.

    Returns:
      ``(C(H - 1, d - 1), d)`` float numpy weights, each row positive and summing to 1.
    """
    if d == 1:
        return np.ones((1, 1))
    H = d
    while math.comb(H - 1, d - 1) < at_least:
        H += 1
    cuts = np.array(list(itertools.combinations(range(1, H), d - 1)), np.int64).reshape(-1, d - 1)
    edges = np.concatenate([np.zeros((len(cuts), 1), np.int64), cuts, np.full((len(cuts), 1), H)], axis=1)
    return np.diff(edges, axis=1).astype(float) / H


def positive_sphere(key, shape):
    """Directions uniform on the positive unit sphere ``S^{d-1}_+`` (``|N(0, I)|`` normalised).

    Args:
      key: a PRNG key.
      shape: output shape ``(..., d)``.

    Returns:
      An array of ``shape``, each last-axis vector non-negative with unit norm.
    """
    z = jnp.abs(jax.random.normal(key, shape))
    return z / jnp.maximum(jnp.linalg.norm(z, axis=-1, keepdims=True), 1e-12)


def hv_scalarization(U, ref, lam):
    """``s_lambda(U) = (min_l max(0, (U_l - r_l) / lambda_l))^d`` (Zhang & Golovin 2020, Lemma 5).

    Args:
      U: ``(..., d)`` points.
      ref: ``(d,)`` reference point.
      lam: ``(..., d)`` positive directions (broadcast against ``U``).

    Returns:
      ``(...)`` scalarised values.
    """
    d = U.shape[-1]
    return jnp.min(jnp.maximum(0.0, (U - ref) / lam), axis=-1) ** d


def empirical_nadir(mu, front):
    """Nadir of the empirical Pareto front ``front`` (K,) bool: coordinate-wise minimum over its ``mu_hat``.

    Args:
      mu: ``(K, d)`` empirical means.
      front: ``(K,)`` bool, the empirical front.

    Returns:
      ``(d,)`` the nadir (``+inf`` for an empty front).
    """
    return jnp.min(jnp.where(front[:, None], mu, jnp.inf), axis=0)
