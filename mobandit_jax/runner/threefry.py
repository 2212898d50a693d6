"""An unrolled CPU lowering of JAX's Threefry-2x32 hash (Salmon et al., SC 2011), same bits.

On CPU, JAX lowers every ``threefry2x32`` call (each ``fold_in``, ``split``, ``uniform``, ...) to a
rolled loop of five steps of four rounds, which keeps programs small but costs a loop of small
kernel launches per random call. Inside a ``lax.scan`` over rounds, with a few random calls per
round, those launches dominate a bandit run at a few hundred seeds. :func:`use_unrolled_threefry`
registers a straight-line lowering of the same hash for the CPU platform: the 20 rounds become one
fused elementwise kernel. The bits are identical (``tests/runner/test_runtime.py`` compares both lowerings'
draws and checks Random123's known-answer vector); only the compiled program changes.
:func:`mobandit_jax.runner.runtime.configure` registers it (importing the package registers nothing).
"""
from __future__ import annotations

import numpy as np
from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir

# Threefry-2x32 rotation constants (two alternating groups of four rounds) and key-schedule parity.
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
PARITY = np.uint32(0x1BD11BDA)


def _rotate_left(x, r: int):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key1, key2, x1, x2):
    """Threefry-2x32 with 20 rounds: ``(key1, key2)`` keys the hash of the counter pair ``(x1, x2)``.

    Args:
      key1: the key's first word, uint32 (an array or a traced value).
      key2: the key's second word.
      x1: the counters' first words, uint32.
      x2: the counters' second words.

    Returns:
      ``(y1, y2)``, the hashed words, uint32 (wrapping arithmetic).
    """
    keys = (key1, key2, key1 ^ key2 ^ PARITY)
    x1, x2 = x1 + keys[0], x2 + keys[1]
    for block in range(5):
        for r in ROTATIONS[block % 2]:
            x1 = x1 + x2
            x2 = _rotate_left(x2, r) ^ x1
        x1 = x1 + keys[(block + 1) % 3]
        x2 = x2 + keys[(block + 2) % 3] + np.uint32(block + 1)
    return x1, x2


def use_unrolled_threefry():
    """Lower ``threefry2x32`` on CPU with :func:`threefry2x32` (straight-line) from now on.

    Returns:
      None.
    """
    mlir.register_lowering(threefry2x32_p, mlir.lower_fun(threefry2x32, multiple_results=True), platform="cpu")
