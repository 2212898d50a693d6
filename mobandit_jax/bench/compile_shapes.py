"""Compile time of every registered policy over arm counts, slate sizes and dimensions.

``python scripts/compile_bench.py [--sizes 2,3,...] [--policies NAME,...] [--timeout S] [--json FILE]``: each
shape is a one-policy spec on a per-arm table (:mod:`mobandit_jax.problems.table`: ``K`` arms, ``d``
objectives, a cost column, Gaussian feedback clipped to [0, 1]; the identity cone for the preference
family, a budget for the families that need one, a slate of ``k`` arms for the slate family), built as
``mobandit run`` builds it (:func:`mobandit_jax.runner.plans.build`, with the runtime settings of
:func:`mobandit_jax.runner.runtime.configure`), and its program lowered and compiled for one seed
(:func:`mobandit_jax.runner.execution.lower_group`), without the compilation cache. The shapes run one
after another in a worker process; a shape that has not compiled after ``--timeout`` seconds is recorded
as such, its worker killed and a new one started, so one hang does not stop the table.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time

SIZES = (2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 64, 100, 128, 256)
# (d, k) per family: two dimensions everywhere; the slate family also one arm per slate and six at d = 5
# (the d = 5 benchmark's shape). k = 0: no slate; a slate never holds more than K - 1 arms.
SHAPES = {"slate": ((2, 3), (3, 1), (5, 6))}
DEFAULT_SHAPES = ((2, 0), (3, 0))
BUDGETED = ("budgeted", "identification")
HORIZON = 50
TIMEOUT = 120.0


def _family_shapes(family: str, size: int):
    """The ``(d, k)`` shapes of ``family`` at ``size`` arms (a slate's ``k`` capped at ``size - 1``, at least 1)."""
    return tuple((d, min(k, size - 1) if k else 0) for d, k in SHAPES.get(family, DEFAULT_SHAPES))


def _write_table(folder: str, size: int, d: int) -> str:
    """A CSV of ``size`` arms: means in [0.1, 0.9]^d and costs in [0.5, 1], fixed by ``(size, d)``."""
    import numpy as np

    rng = np.random.default_rng([size, d])
    path = os.path.join(folder, f"table_{size}_{d}.csv")
    scores, costs = rng.uniform(0.1, 0.9, (size, d)), rng.uniform(0.5, 1.0, size)
    rows = [f"a{i}," + ",".join(f"{x:.4f}" for x in row) + f",{c:.4f}"
            for i, (row, c) in enumerate(zip(scores, costs, strict=True))]
    with open(path, "w") as fh:
        fh.write("arm," + ",".join(f"o{j}" for j in range(d)) + ",cost\n" + "\n".join(rows) + "\n")
    return path


def _shape_spec(name: str, family: str, size: int, d: int, k: int, folder: str) -> dict:
    """The validated spec of one shape (see the module docstring)."""
    from ..runner import spec as cfg

    env = dict(kind="table", path=_write_table(folder, size, d), arm="arm", objectives=[f"o{j}" for j in range(d)],
               cost="cost", noise="gaussian", sigma=0.1)
    if k:
        env["k"] = k
    spec = dict(experiment=dict(name=f"compile/{name}/{size}", horizon=HORIZON, seeds=1, seed=0,
                                record_every=HORIZON),
                env=env, policies=[dict(name=name.rpartition("/")[2], family=family)])
    if family in BUDGETED:
        spec["budget"] = dict(rho=4)
    if family == "preference":
        spec["preference"] = dict(W=[[float(i == j) for j in range(d)] for i in range(d)])
    return cfg.validate(spec)


def _compile_shape(name: str, family: str, size: int, d: int, k: int, folder: str) -> dict:
    """Build one shape and compile its program for one seed: ``{"lower_s", "compile_s"}`` (or ``"error"``)."""
    from .. import engine
    from ..runner import execution, plans, sharding

    try:
        plan = plans.build(_shape_spec(name, family, size, d, k, folder))
    except (ValueError, KeyError) as err:  # a shape the policy refuses (e.g. too few arms for its slate)
        return dict(error=str(err).splitlines()[0])
    mesh = sharding.local_mesh(1)
    keys = engine.seed_keys(plan.base_seed, range(1))
    lower_s = compile_s = 0.0
    for g in plan.groups:
        t0 = time.perf_counter()
        lowered = execution.lower_group(g, engine.stack_grid(g.params), mesh, keys)
        t1 = time.perf_counter()
        lowered.compile()
        lower_s += t1 - t0
        compile_s += time.perf_counter() - t1
    return dict(lower_s=lower_s, compile_s=compile_s)


def worker():
    """The worker process's loop: compile the shapes read from stdin (one JSON object a line, a job of
    :func:`jobs`), one JSON result a line on stdout, after a first line ``{"ready": true}``.

    Returns:
      None, once stdin is closed.
    """
    from ..runner import runtime

    runtime.configure()
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(dict(ready=True)), flush=True)
        for line in sys.stdin:
            job = json.loads(line)
            print(json.dumps(_compile_shape(folder=folder, **job)), flush=True)


class Worker:
    """A worker process (:func:`worker`) answering one shape at a time, killed if a shape takes too long; started
    (and ready) on construction."""

    def __init__(self):
        env = dict(os.environ, JAX_ENABLE_COMPILATION_CACHE="false", JAX_PLATFORMS="cpu")
        code = "from mobandit_jax.bench.compile_shapes import worker; worker()"
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, bufsize=1)
        self._read(600.0)

    def _read(self, timeout: float):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        return json.loads(line) if line else None

    def compile(self, job: dict, timeout: float) -> dict:
        """Compile one shape in the worker.

        Args:
          job: a job of :func:`jobs`.
          timeout: the seconds the worker has to answer.

        Returns:
          The worker's answer (``{"lower_s", "compile_s"}`` or ``{"error"}``); ``{"timeout": timeout}`` if it gave
          none in time, ``{"crashed": status}`` if it died (in both cases it is gone: :attr:`alive` is false).
        """
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        answer = self._read(timeout)
        if answer is not None:
            return answer
        status = self.proc.poll()
        self.close()
        return dict(timeout=timeout) if status is None else dict(crashed=status)

    @property
    def alive(self) -> bool:
        """Whether the worker process is still running.

        Returns:
          ``True`` until it is killed or has exited and been waited for.
        """
        return self.proc.returncode is None

    def close(self):
        """Kill the worker process and wait for it.

        Returns:
          None.
        """
        self.proc.kill()
        self.proc.wait()


def jobs(policies=None, sizes=SIZES):
    """Every shape to compile: each policy at each size, in the shapes of its family.

    Args:
      policies: policy names or aliases (default: every registered policy).
      sizes: arm counts.

    Returns:
      A generator of jobs, dicts with keys ``name``, ``family``, ``size``, ``d`` and ``k``.

    Raises:
      ValueError: an unknown policy name.
    """
    from .. import policies as _registered  # noqa: F401  (registers the built-in policies)
    from ..registry import POLICIES

    names = sorted(POLICIES) if policies is None else [POLICIES.resolve(p) for p in policies]
    for name in names:
        family = POLICIES[name].family
        for size in sizes:
            for d, k in _family_shapes(family, size):
                yield dict(name=name, family=family, size=size, d=d, k=k)


def measure(todo, timeout: float = TIMEOUT, log=print) -> list:
    """Compile every job of ``todo`` one after another in a worker process (a new one after a timeout or crash).

    Args:
      todo: jobs (see :func:`jobs`).
      timeout: the seconds each job has.
      log: called with one line per job as it ends.

    Returns:
      The rows: each job plus ``wall_s`` and the worker's answer (see :meth:`Worker.compile`).
    """
    rows, proc = [], None
    for job in todo:
        proc = proc if proc is not None and proc.alive else Worker()
        t0 = time.perf_counter()
        answer = proc.compile(job, timeout)
        row = dict(job, wall_s=time.perf_counter() - t0, **answer)
        rows.append(row)
        log(_line(row))
    if proc is not None and proc.alive:
        proc.close()
    return rows


def _line(row) -> str:
    shape = f"{row['name']:30s} K={row['size']:<4d} d={row['d']} k={row['k']}"
    if "timeout" in row:
        return f"{shape}  TIMEOUT after {row['timeout']:.0f} s"
    if "crashed" in row:
        return f"{shape}  CRASHED: the worker exited with status {row['crashed']}"
    if "error" in row:
        return f"{shape}  refused: {row['error']}"
    return f"{shape}  lower {row['lower_s']:6.2f} s  compile {row['compile_s']:6.2f} s"


def _cell(row) -> str:
    """A table cell: lowering plus compile seconds, ``> T`` for a timeout, ``-`` for a refused shape."""
    if "timeout" in row:
        return f"> {row['timeout']:.0f}"
    if "crashed" in row:
        return "crashed"
    if "error" in row:
        return "-"
    return f"{row['lower_s'] + row['compile_s']:.1f}"


def markdown(rows, sizes=SIZES) -> str:
    """The table: one row per policy and shape, one column per arm count.

    Args:
      rows: the rows of :func:`measure`.
      sizes: the arm counts, one column each.

    Returns:
      A markdown table; a cell holds lowering plus compile seconds, ``> T`` for a timeout, ``crashed``, ``-`` for
      a refused shape, or nothing where the shape was not measured.
    """
    by_shape = {}
    for row in rows:
        by_shape.setdefault((row["name"], row["d"], bool(row["k"])), {})[row["size"]] = row
    lines = ["| policy | d | k | " + " | ".join(f"K={s}" for s in sizes) + " |",
             "|---|---|---|" + "---|" * len(sizes)]
    for (name, d, slate), cells in by_shape.items():
        ks = sorted({r["k"] for r in cells.values()})
        k = "-" if not slate else (str(ks[-1]) if len(ks) == 1 else f"min({ks[-1]}, K-1)")
        lines.append(f"| `{name}` | {d} | {k} | " + " | ".join(_cell(cells[s]) if s in cells else "" for s in sizes)
                     + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Measure the shapes and print a line each, then the count of slow ones (and optionally JSON and markdown).

    Args:
      argv: the options (default: ``sys.argv[1:]``): ``--sizes``, ``--policies``, ``--timeout``, ``--json``,
        ``--markdown``.

    Returns:
      The exit code: 0, 1 when a shape took over 30 s, timed out or crashed, 2 for a bad option (one line on
      stderr).
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", help="comma-separated arm counts (default: {})".format(",".join(map(str, SIZES))))
    p.add_argument("--policies", help="comma-separated policy names (default: every registered policy)")
    p.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per shape (default %(default)s)")
    p.add_argument("--json", help="write the rows to this file")
    p.add_argument("--markdown", help="write the table to this file")
    args = p.parse_args(argv)
    try:
        sizes = SIZES if args.sizes is None else tuple(int(s) for s in args.sizes.split(","))
    except ValueError:
        print(f"error: --sizes {args.sizes!r}: give comma-separated integers, e.g. 16,17", file=sys.stderr)
        return 2
    if any(s < 2 for s in sizes):
        print(f"error: --sizes {args.sizes!r}: every arm count must be >= 2", file=sys.stderr)
        return 2
    try:
        todo = list(jobs(None if args.policies is None else args.policies.split(","), sizes))
    except ValueError as err:
        print(f"error: --policies: {err}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rows = measure(todo, args.timeout)
    slow = [r for r in rows if "timeout" in r or "crashed" in r or r.get("lower_s", 0) + r.get("compile_s", 0) > 30]
    print(f"{len(rows)} shapes in {time.perf_counter() - t0:.0f} s; {len(slow)} over 30 s, timed out or crashed")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(timeout_s=args.timeout, horizon=HORIZON, rows=rows), fh, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(markdown(rows, sizes) + "\n")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
