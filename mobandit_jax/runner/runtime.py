"""CPU runtime settings for many small batched kernels per round, applied by :func:`configure`.

A bandit round at a few hundred seeds is a chain of small kernels inside a ``lax.scan``; two XLA CPU
defaults are tuned for large tensors instead and cost most of such a round (measured with
``jax.profiler`` on PrefUCB, K = 42, d = 7, 256 seeds):

- Threefry random bits lowered as a rolled loop: replaced by the straight-line lowering of
  :mod:`mobandit_jax.runner.threefry` (identical bits);
- YNNPACK library fusions of small dots and reductions (``--xla_cpu_experimental_ynn_fusion_type``,
  jaxlib 0.10): turned off, which halved the per-round time of the engine's policy step. The flag is
  added to ``XLA_FLAGS`` only if the user has not set it, only for jaxlib versions known to accept
  it, and only takes effect if no JAX backend has been started yet.

:func:`keep_freed_memory` is a separate setting, of the C allocator (glibc only), that
``mobandit reproduce`` applies in its job processes: by default, XLA's large per-call buffers (an
identifier's table of pulls, hundreds of MB for a chunk) are mapped afresh and returned to the system at
every call, so the kernel zeroes every page again. With one arena, no mapped chunks and no trimming,
freed memory is reused: ``composed/identification_cones`` on one device went from 10.2 million page
faults to 0.43-0.49 million and its chunks from 79 s to 49-50 s (same outputs). One arena makes XLA's compiler
slower (threads share it: a cold quickstart took 14 s against 10-11 s), so a process that compiles
most of what it runs keeps the allocator's defaults.

Importing the package changes none of these: ``mobandit`` (the CLI) and :func:`mobandit_jax.runner.execution.execute`
call :func:`configure`; Python users who build runs with ``make_run`` call
``mobandit_jax.runner.runtime.configure()`` themselves, before their first JAX computation (the XLA flag is
read when the backend starts). Set ``MOBANDIT_XLA_DEFAULTS=1`` to keep JAX's defaults for both.
"""
from __future__ import annotations

import ctypes
import os

YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type"
YNN_FLAG_JAXLIB = ((0, 10), (0, 11))  # [first, last) jaxlib minor versions known to accept the flag


def _jaxlib_minor() -> tuple:
    import jaxlib

    return tuple(int(x) for x in jaxlib.__version__.split(".")[:2])


def configure():
    """Apply the settings above unless ``MOBANDIT_XLA_DEFAULTS`` is set (calling it again is harmless).

    Returns:
      None.
    """
    if os.environ.get("MOBANDIT_XLA_DEFAULTS"):
        return
    from .threefry import use_unrolled_threefry

    use_unrolled_threefry()
    flags = os.environ.get("XLA_FLAGS", "")
    first, last = YNN_FLAG_JAXLIB
    if YNN_FLAG not in flags and first <= _jaxlib_minor() < last:
        os.environ["XLA_FLAGS"] = f"{flags} {YNN_FLAG}=".strip()


# glibc's mallopt parameters: M_ARENA_MAX = 1, M_MMAP_MAX = 0, M_TRIM_THRESHOLD = its largest value
KEEP_FREED_MEMORY = ((-8, 1), (-4, 0), (-1, 2**31 - 1))


def keep_freed_memory() -> bool:
    """Make glibc's allocator of this process keep freed memory for reuse: one arena, no mapped chunks, no
    trimming (``mallopt``). Call it before any thread but the main one has allocated (before JAX starts its
    backend), or the arenas already made stay.

    Returns:
      Whether it applied (False for another C library).
    """
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
    except (ValueError, OSError):  # a C library that does not name itself
        return False
    mallopt = ctypes.CDLL(None).mallopt
    return all(mallopt(param, value) == 1 for param, value in KEEP_FREED_MEMORY)
