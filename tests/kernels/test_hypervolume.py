"""Hypervolume kernels against moocore and brute-force inclusion-exclusion."""
import itertools

import jax
import moocore
import numpy as np
import pytest

from mobandit_jax.kernels import box_volume, hv_contributions, hypervolume


def hv_moocore(points, ref):
    keep = points[(points > ref).all(axis=1)]
    if len(keep) == 0:
        return 0.0
    return float(moocore.hypervolume(-keep.astype(np.float64), ref=-np.asarray(ref, np.float64)))


def hv_brute(points, ref):
    total = 0.0
    m = len(points)
    for size in range(1, m + 1):
        for S in itertools.combinations(range(m), size):
            lo = points[list(S)].min(axis=0)
            total += (-1) ** (size + 1) * np.prod(np.maximum(lo - ref, 0.0))
    return total


@pytest.mark.parametrize("d", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("m", [2, 4, 9, 16])
def test_random_sets_vs_moocore(d, m):
    rng = np.random.default_rng(100 * d + m)
    P = rng.random((12, m, d)).astype(np.float32)
    ref = np.full(d, 0.15, np.float32)
    P[:, 0] = P[:, -1]  # duplicates
    P[:3, 1] = 0.1  # a point below the reference in every coordinate
    P[3:6, 0, 0] = 0.15  # a point on the reference boundary adds nothing
    ours = np.asarray(hypervolume(P, ref))
    expect = np.array([hv_moocore(p, ref) for p in P])
    np.testing.assert_allclose(ours, expect, atol=5e-6, rtol=1e-5)


def test_float64_and_bruteforce():
    rng = np.random.default_rng(7)
    P = rng.random((5, 7, 4))
    ref = np.zeros(4)
    with jax.enable_x64(True):
        ours = np.asarray(hypervolume(P, ref))
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours, [hv_brute(p, ref) for p in P], rtol=1e-12, atol=1e-14)


def test_d2_any_number_of_points():
    rng = np.random.default_rng(3)
    P = rng.random((3, 300, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(hypervolume(P, np.zeros(2))),
                               [hv_moocore(p, np.zeros(2)) for p in P], rtol=1e-5)


def test_hand_computed():
    # Two boxes [0,2]x[0,1] and [0,1]x[0,2]: union area 3.
    assert float(hypervolume(np.array([[2.0, 1.0], [1.0, 2.0]]), np.zeros(2))) == pytest.approx(3.0)
    # Three unit-corner boxes in 3-d: 3 * 1*1*2 - 3 * 1 + 1 = 4? corners (2,1,1),(1,2,1),(1,1,2) -> 4
    P = np.array([[2.0, 1, 1], [1, 2, 1], [1, 1, 2]])
    assert float(hypervolume(P, np.zeros(3))) == pytest.approx(4.0)
    assert float(box_volume(np.array([0.5, 0.5, 0.2]), np.array([0.1, 0.0, 0.3]))) == 0.0


def test_outside_envelope_raises():
    with pytest.raises(ValueError, match="17 points in d=3"):
        hypervolume(np.zeros((17, 3)), np.zeros(3))


def test_contributions_vs_difference():
    rng = np.random.default_rng(11)
    for d in (2, 3, 5):
        C = rng.random((9, d))
        B = rng.random((4, d))
        B[-1] = 0.0  # a padding row at the reference point is inert
        ref = np.zeros(d)
        base = hv_moocore(B, ref)
        expect = [hv_moocore(np.vstack([B, c]), ref) - base for c in C]
        np.testing.assert_allclose(np.asarray(hv_contributions(C, B, ref)), expect, atol=2e-6)


@pytest.mark.parametrize("d", [3, 5])
def test_contributions_vs_brute_force_with_ties(d):
    rng = np.random.default_rng(50 + d)
    C = np.round(rng.random((25, d)), 1)  # coarse grid: ties between candidates and base points
    ref = np.full(d, 0.05)
    for m in range(1, 7):
        B = np.round(rng.random((m, d)), 1)
        C[:m] = B  # candidates equal to base points add nothing
        C[m] = C[m + 1]  # duplicate candidates get the same gain
        base = hv_brute(B, ref)
        expect = [hv_brute(np.vstack([B, c]), ref) - base for c in C]
        got = np.asarray(hv_contributions(C.astype(np.float32), B.astype(np.float32), ref.astype(np.float32)))
        np.testing.assert_allclose(got, expect, atol=2e-6)
        assert got[m] == got[m + 1]

