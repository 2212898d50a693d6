"""An unrolled CPU lowering of JAX's Threefry-2x32 hash (Salmon et al., SC 2011), same bits.

On CPU, JAX lowers every ``threefry2x32`` call (each ``fold_in``, ``split``, ``uniform``, ...) to a
rolled loop of five steps of four rounds, which keeps programs small but costs a loop of small
kernel launches per random call. Inside a ``lax.scan`` over rounds, with a few random calls per
round, those launches dominate a bandit run at a few hundred seeds. :func:`use_unrolled_threefry`
registers a straight-line lowering of the same hash for the CPU platform
(:func:`mobandit_jax.kernels.threefry.threefry2x32`): the 20 rounds become one
fused elementwise kernel. The bits are identical (``tests/runner/test_runtime.py`` compares both lowerings'
draws and checks Random123's known-answer vector); only the compiled program changes.
:func:`mobandit_jax.runner.runtime.configure` registers it (importing the package registers nothing).
"""
from __future__ import annotations

from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir

from ..kernels.threefry import threefry2x32


def use_unrolled_threefry():
    """Lower ``threefry2x32`` on CPU with :func:`threefry2x32` (straight-line) from now on.

    Returns:
      None.
    """
    mlir.register_lowering(threefry2x32_p, mlir.lower_fun(threefry2x32, multiple_results=True), platform="cpu")
