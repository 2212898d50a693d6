"""The slate kernels (Pareto layers, slate fills, safe pruning, scalarisations) against plain numpy and
brute-force references on small hand-made cases; crowding distance, layered_top_k and the no-fallback
safe pruning are checked in test_topk_pareto_policies.py."""
import ast
import itertools
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax.kernels import layers, pruning, scalarization, slates

KERNEL_MODULES = ("layers", "slates", "pruning", "crowding", "scalarization")


def _dominates(a, b):
    return bool(np.all(a >= b) and np.any(a > b))


def _brute_layers(x):
    """Full non-dominated sorting by repeatedly removing the points no remaining point dominates."""
    n = len(x)
    rank = np.full(n, -1)
    r = 0
    while np.any(rank < 0):
        left = [i for i in range(n) if rank[i] < 0]
        front = [i for i in left if not any(_dominates(x[j], x[i]) for j in left if j != i)]
        rank[front] = r
        r += 1
    return rank


def _brute_truncated(full, k, fill=None):
    """Ranks of the first layers that a layer-by-layer choice of ``fill`` arms reaches (others: ``k``)."""
    need = len(full) if fill is None else fill
    stop = next((r for r in range(k + 1) if np.sum(full < r) >= need), k)
    return np.where(full < stop, full, k)


HAND = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [0.5, 0.5], [0.4, 0.4], [0.2, 0.9], [0.1, 0.1], [0.4, 0.1],
                 [0.0, 0.0]])


def test_brute_layers_on_the_hand_case():
    # layer 0: (0, 1), (1, 0), (0.2, 0.9) and the duplicated (0.5, 0.5); then (0.4, 0.4), (0.4, 0.1), (0.1, 0.1)
    np.testing.assert_array_equal(_brute_layers(HAND), [0, 0, 0, 0, 1, 0, 3, 2, 4])


@pytest.mark.parametrize("k,fill", [(9, None), (3, None), (2, None), (9, 1), (9, 5), (9, 6), (3, 7), (1, 2)])
def test_top_layers_match_brute_force_on_the_hand_case(k, fill):
    got = np.asarray(layers.top_layers(jnp.asarray(HAND, jnp.float32), k, fill))
    np.testing.assert_array_equal(got, _brute_truncated(_brute_layers(HAND), k, fill))


@pytest.mark.parametrize("seed,n,d", [(0, 12, 2), (1, 15, 3), (2, 10, 4)])
def test_peel_layers_match_brute_force(seed, n, d):
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(0, 1, (n, d)), 1).astype(np.float32)  # coarse grid: ties and duplicates
    x[3] = x[0]
    full = _brute_layers(x)
    dom = jnp.asarray([[_dominates(x[j], x[i]) for i in range(n)] for j in range(n)])
    for k, fill in [(n, None), (2, None), (n, 3), (4, 4)]:
        np.testing.assert_array_equal(np.asarray(layers.peel_layers(dom, k, fill)), _brute_truncated(full, k, fill))


def test_current_layer_is_the_best_layer_with_untaken_arms():
    layer = np.array([2, 0, 1, 0, 1, 3])
    for taken in itertools.product([False, True], repeat=len(layer)):
        taken = np.array(taken)
        free = layer[~taken]
        expect = ~taken & (layer == free.min()) if free.size else np.zeros(len(layer), bool)
        np.testing.assert_array_equal(np.asarray(layers.current_layer(jnp.asarray(layer), jnp.asarray(taken))),
                                      expect)


def test_top_k_breaks_ties_to_the_lowest_index():
    score = np.array([0.3, 0.7, 0.7, 0.1, 0.7, 0.3], np.float32)
    for k in range(1, 7):
        np.testing.assert_array_equal(np.asarray(slates.top_k(jnp.asarray(score), k)),
                                      np.argsort(-score, kind="stable")[:k])


@pytest.mark.parametrize("use_eligible", [False, True])
def test_sequential_pick_matches_a_plain_loop(use_eligible):
    rng = np.random.default_rng(4)
    n, k = 10, 4
    base = np.round(rng.uniform(0, 1, (k, n)), 1).astype(np.float32)  # ties within a slot
    eligible = np.array([True, False, True, True, False, True, True, True, False, True])

    def score_np(slot, chosen):  # depends on the prefix: arms next to a chosen arm lose 0.5
        near = np.zeros(n, bool)
        for c in chosen:
            near[max(c - 1, 0):c + 2] = True
        return base[slot] - 0.5 * near

    expect = []
    for slot in range(k):
        s = score_np(slot, expect)
        free = [i for i in range(n) if i not in expect and (eligible[i] or not use_eligible)]
        expect.append(max(free, key=lambda i: (s[i], -i)))

    def score_fn(slot, chosen, taken):
        near = jnp.zeros((n,), bool)
        for j in range(slot):
            near = near | (jnp.abs(jnp.arange(n) - chosen[j]) <= 1)
        return jnp.asarray(base)[slot] - 0.5 * near

    got = slates.sequential_pick(k, n, score_fn, jnp.asarray(eligible) if use_eligible else None)
    np.testing.assert_array_equal(np.asarray(got), expect)


def _brute_prune(up, lo, k):
    n = len(up)
    keep = np.array([not any(j != i and np.all(up[i] <= lo[j]) for j in range(n)) for i in range(n)])
    return keep if keep.sum() >= k else np.ones(n, bool)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_safe_prune_matches_its_definition_with_the_fallback(k):
    # arm 0's box lies above arms 1 and 2; arm 3 is incomparable; arms 4 and 5 are equal points (zero width)
    up = np.array([[0.9, 0.9], [0.5, 0.5], [0.6, 0.4], [0.95, 0.2], [0.3, 0.3], [0.3, 0.3]], np.float32)
    lo = np.array([[0.7, 0.7], [0.3, 0.3], [0.4, 0.2], [0.8, 0.0], [0.3, 0.3], [0.3, 0.3]], np.float32)
    expect = _brute_prune(up, lo, k)
    np.testing.assert_array_equal(np.asarray(pruning.safe_prune(jnp.asarray(up), jnp.asarray(lo), k)), expect)
    assert expect.all() == (k > 2)  # arms 0 and 3 survive: k <= 2 prunes, k > 2 falls back to all arms


@pytest.mark.parametrize("d,at_least", [(2, 1), (2, 32), (3, 10), (3, 32), (4, 5)])
def test_simplex_interior_lattice_is_the_smallest_positive_lattice(d, at_least):
    w = scalarization.simplex_interior_lattice(d, at_least)
    H = next(h for h in itertools.count(d) if math.comb(h - 1, d - 1) >= at_least)
    compositions = sorted(c for c in itertools.product(range(1, H + 1), repeat=d) if sum(c) == H)
    np.testing.assert_allclose(w, np.array(compositions) / H, rtol=0, atol=1e-15)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert len(w) >= at_least and np.all(w > 0)


def test_simplex_lattice_of_one_objective_is_its_single_weight():
    np.testing.assert_array_equal(scalarization.simplex_interior_lattice(1, 32), [[1.0]])


def test_positive_sphere_directions_are_unit_and_nonnegative():
    lam = np.asarray(scalarization.positive_sphere(jax.random.PRNGKey(0), (500, 3)))
    assert np.all(lam >= 0)
    np.testing.assert_allclose(np.linalg.norm(lam, axis=1), 1.0, rtol=1e-6)
    assert np.all(lam.mean(axis=0) > 0.4)  # every orthant axis is reached, none favoured by far


def test_empirical_nadir_is_the_minimum_over_the_front():
    mu = np.array([[0.9, 0.1], [0.5, 0.6], [0.2, 0.8], [0.1, 0.1]], np.float32)
    front = np.array([True, True, True, False])
    np.testing.assert_array_equal(np.asarray(scalarization.empirical_nadir(jnp.asarray(mu), jnp.asarray(front))),
                                  mu[front].min(axis=0))


@pytest.mark.parametrize("name", KERNEL_MODULES)
def test_slate_kernels_import_no_policy_problem_metric_or_runner(name):
    tree = ast.parse((Path(__file__).parents[2] / "mobandit_jax" / "kernels" / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [("." * node.level) + (node.module or "")]
        else:
            continue
        for m in mods:
            top = m.lstrip(".").split(".")[0]
            if m.startswith(".."):
                assert m == "..types", f"kernels/{name}.py imports {m}"
            elif not m.startswith("."):
                assert top in {"__future__", "itertools", "math", "numpy", "jax", "typing"} or (
                    m == "mobandit_jax.types" or m.startswith("mobandit_jax.kernels")), f"kernels/{name}.py imports {m}"


def test_descending_rank_is_the_place_in_numpy_s_stable_descending_order():
    rng = np.random.default_rng(7)
    for n in (1, 5, 16, 17):
        u = rng.integers(0, 4, n).astype(np.float32) / 4  # many ties, and exact zeros
        order = np.lexsort((np.arange(n), -u))  # descending u, ties to the lowest index
        expected = np.empty(n, int)
        expected[order] = np.arange(n)
        np.testing.assert_array_equal(np.asarray(jax.jit(slates.descending_rank)(jnp.asarray(u))), expected)


@pytest.mark.parametrize("n", [5, 16, 17])
def test_layered_random_k_is_the_uniform_tie_break_of_the_same_draws(n):
    """The slate of ``lexsort((-u, layer))[:k]`` for ``u = jax.random.uniform(key, (n,))``, as the layered fill
    with the draws themselves as the secondary score gave it before."""
    rng = np.random.default_rng(n)
    fill = jax.jit(slates.layered_random_k, static_argnums=2)
    for trial in range(20):
        key = jax.random.PRNGKey(trial)
        layer = rng.integers(0, 3, n).astype(np.int32)
        u = np.asarray(jax.random.uniform(key, (n,)))
        k = min(n, 4)
        np.testing.assert_array_equal(np.asarray(fill(jnp.asarray(layer), key, k)), np.lexsort((-u, layer))[:k])
