"""How many devices a run shards its seeds over: one XLA host device per core on CPU, by default.

XLA's CPU backend exposes a single device unless ``--xla_force_host_platform_device_count=N`` is in
``XLA_FLAGS`` when the backend starts; seeds never communicate, so a chunk's seed axis split over N
host devices runs N-way parallel and every seed computes exactly what it computes on one device
(see :mod:`mobandit_jax.sharding`). The CLI calls :func:`configure` before any JAX computation;
importing the package changes nothing.
"""
from __future__ import annotations

import importlib.util
import os

HOST_COUNT_FLAG = "--xla_force_host_platform_device_count"
GPU_PLUGINS = ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin", "jax_rocm7_plugin")


def cpu_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _platform_is_cpu() -> bool:
    """Whether JAX will run on its CPU backend: ``JAX_PLATFORMS`` says so, or no GPU plugin is installed."""
    platforms = os.environ.get("JAX_PLATFORMS", "").strip()
    if platforms:
        return platforms.split(",")[0].strip().lower() == "cpu"
    return not any(importlib.util.find_spec(name) for name in GPU_PLUGINS)


def check_count(devices) -> int | None:
    """``--devices`` as given: ``None`` (every core) or an integer >= 1."""
    if devices is None:
        return None
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"--devices {devices!r}: the number of devices must be an integer >= 1")
    return devices


def configure(devices: int | None = None) -> int | None:
    """Ask XLA for ``devices`` host devices (default: one per core) before the backend starts.

    Only on the CPU platform and only when ``XLA_FLAGS`` does not already set the count (a user's
    own value wins). Returns the count requested, or ``None`` when nothing was set. ``devices`` also
    bounds the mesh of :func:`mobandit_jax.sharding.local_mesh` on any platform (see :func:`limit`).
    """
    global _LIMIT
    _LIMIT = check_count(devices)
    flags = os.environ.get("XLA_FLAGS", "")
    if HOST_COUNT_FLAG in flags or not _platform_is_cpu():
        return None
    count = _LIMIT or cpu_cores()
    os.environ["XLA_FLAGS"] = f"{flags} {HOST_COUNT_FLAG}={count}".strip()
    return count


_LIMIT: int | None = None


def limit() -> int | None:
    """The ``--devices`` bound given to :func:`configure` (``None``: every local device)."""
    return _LIMIT
