"""Trailing (moving) means of per-round values, read off cumulative sums recorded at checkpoints."""
from __future__ import annotations

import numpy as np


def trailing_mean(cum, rounds, window: int) -> np.ndarray:
    """Mean of the last ``window`` per-round values at each checkpoint, from cumulative sums.

    ``cum`` is ``(S, C)`` cumulative sums recorded when ``rounds`` (``(S, C)`` or ``(C,)``) rounds had
    been played; the sum at ``rounds - window`` is interpolated linearly between checkpoints (exact
    when ``window`` is a multiple of the checkpoint spacing) and fewer rounds are used at the start.
    """
    cum = np.asarray(cum, np.float64)
    rounds = np.broadcast_to(np.asarray(rounds, np.float64), cum.shape)
    out = np.empty_like(cum)
    for s in range(cum.shape[0]):
        x, keep = np.unique(np.concatenate([[0.0], rounds[s]]), return_index=True)
        y = np.concatenate([[0.0], cum[s]])[keep]
        start = np.maximum(rounds[s] - window, 0)
        out[s] = (cum[s] - np.interp(start, x, y)) / np.maximum(np.minimum(window, rounds[s]), 1)
    return out
