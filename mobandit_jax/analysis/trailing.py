"""Trailing (moving) means of per-round values, read off cumulative sums recorded at checkpoints."""
from __future__ import annotations

import numpy as np

STARTS = ("interpolated", "checkpoint")  # where a window starts: at rounds - window exactly, or at a checkpoint


def trailing_mean(cum, rounds, window: int, start: str = "interpolated") -> np.ndarray:
    """Mean of the last ``window`` per-round values at each checkpoint, from cumulative sums.

    Args:
      cum: ``(S, C)`` cumulative sums, recorded when ``rounds`` rounds had been played.
      rounds: ``(S, C)`` or ``(C,)`` rounds played at each checkpoint.
      window: the number of rounds averaged.
      start: ``"interpolated"``: the window starts at round ``rounds - window``, its sum interpolated linearly
        between checkpoints (exact when ``window`` is a multiple of the checkpoint spacing), and fewer rounds
        are used at the start; ``"checkpoint"``: the window starts at the latest checkpoint (or round 0) at or
        before ``rounds - window``, and the mean is over the rounds since then (at least ``window``; fewer at
        the start).

    Returns:
      ``(S, C)`` float64 trailing means.
    """
    if start not in STARTS:
        raise ValueError(f"start = {start!r}; allowed: {list(STARTS)}")
    cum = np.asarray(cum, np.float64)
    rounds = np.broadcast_to(np.asarray(rounds, np.float64), cum.shape)
    out = np.empty_like(cum)
    for s in range(cum.shape[0]):
        x, keep = np.unique(np.concatenate([[0.0], rounds[s]]), return_index=True)
        y = np.concatenate([[0.0], cum[s]])[keep]
        if start == "checkpoint":
            at = np.searchsorted(x, rounds[s])  # each checkpoint's own place among the recorded rounds
            j = np.clip(np.searchsorted(x, rounds[s] - window, side="right") - 1, 0, np.maximum(at - 1, 0))
            out[s] = (cum[s] - y[j]) / np.maximum(rounds[s] - x[j], 1)
        else:
            begin = np.maximum(rounds[s] - window, 0)
            out[s] = (cum[s] - np.interp(begin, x, y)) / np.maximum(np.minimum(window, rounds[s]), 1)
    return out
