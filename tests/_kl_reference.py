"""Bernoulli KL-UCB bounds by a float64 root finder (scipy brentq): the reference of the KL-UCB kernels' and
PrefUCB's index tests."""
import numpy as np
from scipy.optimize import brentq


def _kl(p, q):
    a = 0.0 if p == 0 else p * np.log(p / q)
    b = 0.0 if p == 1 else (1 - p) * np.log((1 - p) / (1 - q))
    return a + b


HI, LO = np.nextafter(1.0, 0.0), 1e-300


def ref_upper(p, level):
    if p >= 1 or _kl(p, HI) <= level:
        return 1.0
    return brentq(lambda q: _kl(p, q) - level, p, HI, xtol=1e-16, rtol=1e-15)


def ref_lower(p, level):
    if p <= 0 or _kl(p, LO) <= level:
        return 0.0
    return brentq(lambda q: _kl(p, q) - level, LO, p, xtol=1e-16, rtol=1e-15)
