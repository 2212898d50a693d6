"""Devices and hosts: the seed axis of a chunk is sharded over local devices, chunks over hosts.

- Devices: a 1-d mesh over this process's devices, axis ``"seeds"``; keys are split along it and
  the grid axis is replicated. Seeds never communicate, so XLA partitions the vmapped run with no
  collectives, and every seed computes exactly what it computes on one device.
- Hosts: after ``jax.distributed.initialize`` (auto-detected on Slurm and Open MPI, or an explicit
  coordinator address), process ``p`` of ``n`` runs the chunks ``c`` with ``c % n == p`` and writes
  them to the shared run directory; a barrier, then process 0 merges the chunks and writes the
  summary, which is therefore the same as a single-host run's.
"""
from __future__ import annotations

import math

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def local_mesh(devices: int | None = None) -> Mesh:
    """A 1-d mesh named ``"seeds"`` over this process's first ``devices`` devices.

    Args:
      devices: how many devices; ``None`` takes the ``--devices`` bound set by
        :func:`mobandit_jax.runner.devices.configure`, or every local device when there is none.

    Returns:
      The mesh.

    Raises:
      ValueError: more devices than this process has (one line naming ``--devices``).
    """
    from .devices import limit

    local = jax.local_devices()
    n = devices if devices is not None else limit()
    if n is not None and n > len(local):
        raise ValueError(f"--devices {n}: this process has {len(local)} {jax.default_backend()} device(s)")
    return Mesh(np.array(local[:n]), ("seeds",))


def padded_size(seeds: int, mesh: Mesh) -> int:
    """``seeds`` rounded up to a multiple of the mesh size (extra lanes are computed and dropped).

    Args:
      seeds: the seeds of a call.
      mesh: the devices they are split over.

    Returns:
      The padded seed count.
    """
    n = mesh.devices.size
    return int(math.ceil(seeds / n) * n)


def compile_sharded(batched, mesh: Mesh):
    """``jit`` a batched run with its keys and outputs split on seeds, its grid parameters replicated.

    Args:
      batched: ``(grid params, keys) -> (G, S, ...)`` outputs.
      mesh: a mesh with a ``"seeds"`` axis (:func:`local_mesh`).

    Returns:
      The jitted function.
    """
    replicated = NamedSharding(mesh, P())
    return jax.jit(batched, in_shardings=(replicated, NamedSharding(mesh, P("seeds"))),
                   out_shardings=NamedSharding(mesh, P(None, "seeds")))


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None):
    """Join a multi-host run: explicit coordinator address, or auto-detection (Slurm, Open MPI).

    Args:
      coordinator: the coordinator's ``host:port`` (None: auto-detected).
      num_processes: the processes of the run, with ``coordinator``.
      process_id: this process's index, with ``coordinator``.

    Returns:
      None.
    """
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if coordinator is None:
        jax.distributed.initialize()
    else:
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id)


def process_share(n_chunks: int) -> list:
    """The chunks this process runs.

    Args:
      n_chunks: the run's chunk count.

    Returns:
      The chunk indices ``c`` with ``c % process_count == process_index``.
    """
    return [c for c in range(n_chunks) if c % jax.process_count() == jax.process_index()]


def barrier(name: str):
    """Wait until every process reaches this point (no-op on a single process).

    Args:
      name: the barrier's name, the same in every process.

    Returns:
      None.
    """
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)
