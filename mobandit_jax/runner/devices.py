"""How many devices a run shards its seeds over: one XLA host device per core on CPU, by default.

XLA's CPU backend exposes a single device unless ``--xla_force_host_platform_device_count=N`` is in
``XLA_FLAGS`` when the backend starts; seeds never communicate, so a chunk's seed axis split over N
host devices runs N-way parallel and every seed computes exactly what it computes on one device
(see :mod:`mobandit_jax.runner.sharding`). The CLI calls :func:`configure` before any JAX computation;
importing the package changes nothing.

XLA's CPU backend also splits large kernels over a thread pool sized by the process's CPU affinity
mask, so a one-device run is not a one-core run. ``--devices N`` below the core count therefore also
confines the process to N cores (:func:`pin`); ``mobandit reproduce --jobs J`` gives each of its J
worker processes its own cores (:func:`core_slots`), so workers do not contend for the same cores.
"""
from __future__ import annotations

import importlib.util
import os

HOST_COUNT_FLAG = "--xla_force_host_platform_device_count"
LIMIT_ENV = "MOBANDIT_DEVICES"  # the --devices bound of the mesh (:func:`limit`), kept beside XLA_FLAGS' count
# One process's host devices share one thread pool, and split small per-round kernels over devices
# costs more than it gains: a chunk is sharded over devices only when each gets this many seeds
# (quickstart, K = 8, 32 seeds: 0.24 s on one device against 0.63 s over two; PrefUCB, K = 42,
# 256 seeds: 2.3 s over two devices against 3.3 s on one).
MIN_SEEDS_PER_DEVICE = 128
GPU_PLUGINS = ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin", "jax_rocm7_plugin")


def cpu_cores() -> int:
    """Cores this process may run on.

    Returns:
      The size of the affinity mask where the OS has one, else the machine's core count (at least 1).
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def affinity() -> list | None:
    """This thread's cores.

    Returns:
      Its affinity mask as a sorted list; ``None`` where the OS has no affinity masks.
    """
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def core_slots(jobs: int) -> list:
    """This process's cores dealt into ``jobs`` disjoint, equal, sorted lists (leftover cores unused).

    Args:
      jobs: the number of shares.

    Returns:
      ``jobs`` lists of cores; ``[]`` off the CPU platform, where the OS has no affinity masks, or with fewer
      cores than jobs.
    """
    cores = affinity()
    if cores is None or not _platform_is_cpu():
        return []
    per = len(cores) // max(jobs, 1)
    return [cores[i * per:(i + 1) * per] for i in range(jobs)] if per else []


def pin(cores) -> None:
    """Confine this process (and the thread pool XLA's CPU backend sizes from it) to ``cores``.

    Call it before JAX starts its backend; a no-op where the OS has no affinity masks.

    Args:
      cores: core numbers (empty or ``None``: no change).

    Returns:
      None.
    """
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)


def _platform_is_cpu() -> bool:
    """Whether JAX will run on its CPU backend: ``JAX_PLATFORMS`` says so, or no GPU plugin is installed."""
    platforms = os.environ.get("JAX_PLATFORMS", "").strip()
    if platforms:
        return platforms.split(",")[0].strip().lower() == "cpu"
    return not any(importlib.util.find_spec(name) for name in GPU_PLUGINS)


def _check_count(devices) -> int | None:
    """``--devices`` as given: ``None`` (every core) or an integer >= 1."""
    if devices is None:
        return None
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"--devices {devices!r}: the number of devices must be an integer >= 1")
    return devices


def configure(devices: int | None = None) -> int | None:
    """Ask XLA for ``devices`` host devices (default: one per core) before the backend starts.

    Only on the CPU platform and only when ``XLA_FLAGS`` does not already set the count (a user's
    own value wins). ``devices`` also bounds the mesh of :func:`mobandit_jax.runner.sharding.local_mesh` on
    any platform (see :func:`limit`). On CPU, ``devices`` below the core count also pins the process to its
    first ``devices`` cores.

    Args:
      devices: ``--devices``: ``None`` (every core) or an integer >= 1.

    Returns:
      The count requested, or ``None`` when nothing was set.

    Raises:
      ValueError: ``devices`` is not ``None`` or an integer >= 1 (one line naming ``--devices``).
    """
    bound = _check_count(devices)
    _set_limit(bound)
    if not _platform_is_cpu():
        return None
    cores = core_slots(1)  # [] where the OS has no affinity masks (macOS): nothing to pin
    if bound is not None and cores and len(cores[0]) > bound:
        pin(cores[0][:bound])
    return _request_host_devices(bound or cpu_cores())


def configure_run(devices: int | None = None, distributed: bool = False, processes: bool = True,
                  chunk: int | None = None) -> int:
    """Lay out a ``mobandit run`` before JAX starts.

    - Multi-host runs, other platforms than CPU, one core, and a host device count of the user's own
      in ``XLA_FLAGS``: :func:`configure`.
    - With ``processes``: ``devices`` (default: every core) single-device workers, one per core, this
      process with one host device and the others worker processes (:mod:`mobandit_jax.runner.workers`).
    - Otherwise one process: :func:`configure` (a chunk's seeds sharded over one host device per core,
      or over ``devices``), except that without a ``devices`` count, when chunks of ``chunk`` seeds
      would give a device fewer than :data:`MIN_SEEDS_PER_DEVICE` seeds, it keeps one host device,
      unpinned: small kernels run faster there than split over devices sharing one thread pool, and
      compilation still uses every core.

    Args:
      devices: ``--devices``: ``None`` (every core) or an integer >= 1.
      distributed: a multi-host run.
      processes: run on CPU in single-device worker processes.
      chunk: seeds per chunk, where known.

    Returns:
      The number of workers (1: this process alone).

    Raises:
      ValueError: a bad ``devices`` (see :func:`configure`).
    """
    count = _check_count(devices)
    workers = count or cpu_cores()
    user_count = HOST_COUNT_FLAG in os.environ.get("XLA_FLAGS", "")
    small_chunks = count is None and chunk is not None and chunk < MIN_SEEDS_PER_DEVICE * workers
    if distributed or workers == 1 or not _platform_is_cpu() or user_count or not (processes or small_chunks):
        configure(count)
        return 1
    _set_limit(1)
    _request_host_devices(1)
    return workers if processes else 1


def single_host_device() -> None:
    """Set the host device count in ``XLA_FLAGS`` to one, replacing any count (a worker process).

    Returns:
      None.
    """
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(HOST_COUNT_FLAG)]
    os.environ["XLA_FLAGS"] = " ".join(flags + [f"{HOST_COUNT_FLAG}=1"])


def configure_workers(jobs: int) -> int | None:
    """For ``jobs`` worker processes started after this call: ``cores // jobs`` host devices each
    (inherited through ``XLA_FLAGS``; each worker pins itself to its share with :func:`pin`). Sets no
    mesh bound, so a user's own device count in ``XLA_FLAGS`` is used as it is.

    Args:
      jobs: the number of worker processes.

    Returns:
      The count requested, or ``None`` when nothing was set (off the CPU platform, or a user's own count).
    """
    return _request_host_devices(max(1, cpu_cores() // max(jobs, 1))) if _platform_is_cpu() else None


def _request_host_devices(count: int) -> int | None:
    flags = os.environ.get("XLA_FLAGS", "")
    if HOST_COUNT_FLAG in flags:
        return None
    os.environ["XLA_FLAGS"] = f"{flags} {HOST_COUNT_FLAG}={count}".strip()
    return count


def _set_limit(bound: int | None) -> None:
    if bound is None:
        os.environ.pop(LIMIT_ENV, None)
    else:
        os.environ[LIMIT_ENV] = str(bound)


def limit() -> int | None:
    """The ``--devices`` bound given to :func:`configure` (``None``: every local device).

    Returns:
      :data:`LIMIT_ENV` as an integer: like the host device count in ``XLA_FLAGS``, it is set in the process
      environment before JAX starts, and ``mobandit`` restores the environment when a command returns.
    """
    given = os.environ.get(LIMIT_ENV, "").strip()
    return int(given) if given.isdigit() and int(given) >= 1 else None
