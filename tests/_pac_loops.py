"""Plain numpy loops of Auer et al. (Algorithm 1) and APE as linear_psi runs them, the references of the pac
family's and the numba peer's tests."""
import math

import numpy as np


def _radius(n, delta, sigma):
    c = math.log(1 / delta) / 2 + max(math.log(math.log(1 / delta) / 2), 0.0)
    ll = np.log1p(np.log(n))
    return sigma * np.sqrt(2 * (2 * c + ll[:, None] + ll[None, :]) * (1 / n[:, None] + 1 / n[None, :]))


def _M(mu):
    return np.max(mu[:, None, :] - mu[None, :, :], -1)


def auer_numpy(pull, K, delta, sigma):
    """Algorithm 1 of Auer et al. as linear_psi runs it (every test of a step on the step's first A)."""
    n, sums = np.zeros(K), np.zeros((K, 2))
    A, P = list(range(K)), []
    while A:
        for a in A:
            sums[a] += pull(a, int(n[a]))
            n[a] += 1
        mu = sums / np.maximum(n, 1)[:, None]
        beta = _radius(np.maximum(n, 1), delta, sigma)
        M = _M(mu)
        A = [i for i in A if not any(-M[i, j] > beta[i, j] for j in A)]  # m(i, j) = min_n (mu_jn - mu_in) = -M(i, j)
        P1 = [i for i in A if all(M[i, j] > beta[i, j] for j in A if j != i)]
        P2 = [i for i in P1 if all(M[j, i] > beta[i, j] for j in A if j not in P1)]
        A = [i for i in A if i not in P2]
        P += P2
    return sorted(P), n


def ape_numpy(pull, K, delta, sigma):
    """APE as linear_psi runs it (both b_t and c_t pulled)."""
    n, sums = np.ones(K), np.array([pull(i, 0) for i in range(K)])
    while True:
        mu = sums / n[:, None]
        beta = _radius(n, delta, sigma)
        M = _M(mu)
        mm = np.min(mu[None, :, :] - mu[:, None, :], -1)  # [i, j] = min_n (mu_jn - mu_in)
        off = ~np.eye(K, dtype=bool)
        h = np.where(off, M - beta, np.inf).min(1)
        g = np.where(off, mm - beta, -np.inf).max(1)
        dom = np.array([[j != i and np.all(mu[j] >= mu[i]) and np.any(mu[j] > mu[i]) for j in range(K)]
                        for i in range(K)])
        S = ~dom.any(1)
        z1 = np.min(np.where(S, h, np.inf))
        z2 = np.min(np.where(S, np.inf, np.maximum(h, g)))
        if z1 >= 0 and z2 >= 0:
            return sorted(np.flatnonzero(S)), n
        score = np.where(h > 0, -np.inf, np.where(off, M + beta.T, np.inf).min(1))
        b = int(np.argmax(score))
        c = int(np.argmin(np.where(off[b], M[b] - beta[b], np.inf)))
        for k in (b, c):
            sums[k] += pull(k, int(n[k]))
            n[k] += 1
