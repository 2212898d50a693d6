"""KL-UCB indices against a float64 root finder (scipy brentq) and hand-computed edge cases."""
import jax
import numpy as np
import pytest
from _kl_reference import ref_lower, ref_upper

from mobandit_jax.kernels import kl_bernoulli, klucb_lower, klucb_upper, klucb_upper_refine


@pytest.fixture(scope="module")
def grid():
    rng = np.random.default_rng(0)
    # Uniform p, and p piled up near 0 and near 1 (u^8), where the starting caps differ most.
    p = np.concatenate([rng.random(1500), rng.random(600) ** 8, 1 - rng.random(600) ** 8,
                        [0.0, 1.0, 1e-7, 1 - 1e-7, 0.5, 1e-3, 0.999, 6e-15]])
    level = np.exp(rng.uniform(np.log(1e-6), np.log(10.0), p.size))
    level[:100] = 1e-6  # the small levels where float32 loses digits
    level[100:200] = 10.0
    level[-1] = 1.79e-6  # p << level: log1p of a ratio near -1 would round to -inf
    up = np.array([ref_upper(a, b) for a, b in zip(p, level, strict=False)])
    lo = np.array([ref_lower(a, b) for a, b in zip(p, level, strict=False)])
    return p, level, up, lo


def test_float32_within_1e6(grid):
    p, level, up, lo = grid
    u = np.asarray(klucb_upper(p.astype(np.float32), level.astype(np.float32)))
    l = np.asarray(klucb_lower(p.astype(np.float32), level.astype(np.float32)))
    assert u.dtype == np.float32
    assert np.abs(u - up).max() <= 1e-6
    assert np.abs(l - lo).max() <= 1e-6


def test_float64_within_1e10(grid):
    p, level, up, lo = grid
    with jax.enable_x64(True):
        u = np.asarray(klucb_upper(p, level))
        l = np.asarray(klucb_lower(p, level))
    assert u.dtype == np.float64
    assert np.abs(u - up).max() <= 1e-10
    assert np.abs(l - lo).max() <= 1e-10


def test_edge_cases_exact():
    p = np.array([0.0, 1.0, 0.3, 0.3, 0.0, 1.0], np.float32)
    level = np.array([0.5, 0.5, 0.0, np.inf, np.inf, 0.0], np.float32)
    u = np.asarray(klucb_upper(p, level))
    l = np.asarray(klucb_lower(p, level))
    # p = 0: kl(0, q) = -log(1 - q) -> q = 1 - exp(-level)
    np.testing.assert_allclose(u[0], 1 - np.exp(-0.5), atol=1e-6)
    assert u[1] == 1.0 and u[2] == np.float32(0.3) and u[3] == 1.0
    assert l[0] == 0.0 and l[2] == np.float32(0.3) and l[3] == 0.0 and l[5] == 1.0
    # p = 1: kl(1, q) = -log q -> lower = exp(-level)
    np.testing.assert_allclose(l[1], np.exp(-0.5), atol=1e-6)


def test_kl_matches_definition():
    p, q = 0.3, 0.55
    assert abs(float(kl_bernoulli(p, q)) - (0.3 * np.log(0.3 / 0.55) + 0.7 * np.log(0.7 / 0.45))) < 1e-6


def test_batched_shapes_broadcast():
    p = np.random.default_rng(1).random((4, 3, 2)).astype(np.float32)
    assert klucb_upper(p, 0.1).shape == (4, 3, 2)
    assert klucb_upper(p, np.full((3, 1), 0.1, np.float32)).shape == (4, 3, 2)


@pytest.mark.parametrize("t", [7, 12, 300, 100_000])
def test_refine_moves_a_root_from_log_t_to_log_t_plus_1_within_round_off(grid, t):
    # PrefUCB's warm start: an arm with n pulls, not pulled in round t, goes from level log(t) / n to
    # log(t + 1) / n. From t = 7 on, one refine is as accurate as a fresh solve (float32 round-off).
    p = grid[0].astype(np.float32)
    n = np.random.default_rng(t).integers(1, t, p.size).astype(np.float32)
    n[::3] = 1  # the largest levels: one pull so far
    previous_level, level = np.log(np.float32(t)) / n, np.log(np.float32(t + 1)) / n
    ref = np.array([ref_upper(float(a), float(b)) for a, b in zip(p, level, strict=False)])
    refined = np.asarray(klucb_upper_refine(p, level, klucb_upper(p, previous_level), previous_level), np.float64)
    fresh = np.asarray(klucb_upper(p, level), np.float64)
    assert np.abs(refined - ref).max() < 1.5e-7 and np.abs(fresh - ref).max() < 1.5e-7
    assert np.all(refined >= p) and np.all(refined <= 1.0)


def test_refine_is_not_exact_from_far_away():
    # the bound of the claim above: at t = 2 (level x 1.58) one step is not enough, so PrefUCB with
    # fewer than 8 arms (forced rounds ending before t = 7) solves every root afresh
    p = np.float32(0.001) + np.zeros(1, np.float32)
    previous_level, level = np.log(np.float32([2.0])), np.log(np.float32([3.0]))
    refined = float(klucb_upper_refine(p, level, klucb_upper(p, previous_level), previous_level)[0])
    assert abs(refined - ref_upper(float(p[0]), float(level[0]))) > 1e-6


def test_refine_keeps_the_exact_cases():
    p = np.array([1.0, 0.3, 0.3], np.float32)
    level = np.array([0.5, np.inf, 0.0], np.float32)
    out = np.asarray(klucb_upper_refine(p, level, np.array([1.0, 0.9, 0.3], np.float32), level / 2))
    assert out.tolist() == [1.0, 1.0, np.float32(0.3)]
