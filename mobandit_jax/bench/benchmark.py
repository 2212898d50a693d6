"""Throughput benchmarks, measured side by side in one run on this machine.

- Policies: seed-rounds per second of the engine run the way ``mobandit run`` runs a long run (jitted,
  seed-vmapped; on CPU the seeds split over one single-device worker process per core, timed together,
  unless ``--devices N``; on GPU sharded over the devices) against
  two numpy peers of the same algorithm: the per-seed loop of ``mobandit_jax.bench.reference`` and the
  seed-batched peer of ``mobandit_jax.bench.numpy_peers`` at the same seed count, and (PrefUCB, THV-UCB) the
  per-seed loop of ``mobandit_jax.bench.numba_peers`` compiled with numba, on one core; compile time apart.
- Fixed confidence (``--algorithms auer,ape``): seconds a seed of Auer et al. and APE, the engine at each seed
  count against the numba per-seed loop (``mobandit_jax.bench.fixed_confidence``).
- User-data environments (``--algorithms user_envs``): PrefUCB's engine rate on the same means as
  ``kind = "stochastic"``, ``"table"`` and ``"replay"``, the per-round cost of those environments.
- Hypervolume: the batched kernel on many small sets against ``moocore.hypervolume`` per call.
- KL-UCB: nanoseconds per index of the batched root finder.

Run ``python scripts/bench.py`` or ``mobandit bench``; ``--quick`` shortens every measurement.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from ..engine import RunParams, batch, make_run, seed_keys, stack_params
from ..runner import devices, sharding
from ..runner import workers as local_workers

CUSTOMER_SERVICE_W = np.array([[1, 0, 1, 0, 0, 2, 1], [0, -1, 0, 0, 0, 1, 0]], np.float64)  # PDMOB, Table 3


def _timed(fn, repeat: int = 1):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t0)
    return best


def _compiled(setup, horizon: int, seeds: int):
    """``(run, compile seconds)``: the batched run of ``setup`` at ``seeds`` seeds, compiled and called once,
    with the seeds sharded over the local mesh (padded to a multiple of the device count)."""
    fn, args = setup
    env, policy, metrics, params = fn(*args)
    run = make_run(env, policy, metrics, horizon, record_every=horizon,
                   budgeted=bool(np.isfinite(np.asarray(params.budget))))
    mesh = sharding.local_mesh()
    width = sharding.padded_size(seeds, mesh)
    batched = sharding.compile_sharded(batch(run), mesh)
    stacked = stack_params([params])
    t0 = time.perf_counter()
    jax.block_until_ready(batched(stacked, seed_keys(0, np.arange(width))))
    compile_s = time.perf_counter() - t0
    keys = seed_keys(1, np.arange(width))
    return (lambda: batched(stacked, keys)), compile_s


def engine_rate(setup, horizon: int, seeds: int, workers: int = 1, repeat: int = 3):
    """The engine's rate at ``seeds`` seeds, the best of ``repeat`` timed runs.

    As ``mobandit run`` runs a group: with ``workers > 1``, the seeds split over that many single-device
    worker processes, one core each, timed together (:func:`_workers_rate`); otherwise in this process,
    the seeds sharded over the local mesh (padding lanes not counted).

    Args:
      setup: ``(fn, args)`` with ``fn(*args) -> (env, policy, metrics, params)``, ``fn`` module-level so that
        worker processes can rebuild it.
      horizon: rounds per run.
      seeds: seeds per run.
      workers: worker processes to split the seeds over (at most ``seeds``; 1: this process).
      repeat: timed runs; the fastest counts.

    Returns:
      ``(seed-rounds per second, compile and first-call seconds)``.
    """
    workers = min(workers, seeds)
    if workers > 1:
        return _workers_rate(setup, horizon, seeds, workers, repeat)
    run, compile_s = _compiled(setup, horizon, seeds)
    return seeds * horizon / _timed(run, repeat), compile_s


def _worker_time(setup, horizon: int, width: int, repeat: int, conn, cores):
    """In a worker process: compile and warm the run at ``width`` seeds, say ``"ready"`` over ``conn`` and
    wait for the word to start, time the best of ``repeat`` runs; send ``(seconds, compile seconds)`` or
    ``("error", message)``."""
    local_workers.start_worker(cores)
    try:
        from ..runner import runtime

        runtime.configure()
        run, compile_s = _compiled(setup, horizon, width)
        conn.send("ready")
        conn.recv()
        conn.send((_timed(run, repeat), compile_s))
    except Exception as err:  # noqa: BLE001 -- reported by the parent in one line
        conn.send(("error", local_workers.one_line(err)))


def _workers_rate(setup, horizon: int, seeds: int, workers: int, repeat: int = 3):
    """The engine's rate with ``ceil(seeds / workers)`` seeds in each of ``workers`` pinned processes,
    started together once all are compiled: ``seeds x horizon / the slowest worker's seconds``."""
    width = -(-seeds // workers)
    links = dict(enumerate(local_workers.start_processes(_worker_time, [(setup, horizon, width, repeat)] * workers)))
    try:
        _one_message_each(links)  # "ready" from each, once compiled
        for link in links.values():
            link.conn.send("go")
        times = _one_message_each(links).values()
        return seeds * horizon / max(t for t, _ in times), max(c for _, c in times)
    finally:
        for link in links.values():
            link.process.terminate()
            link.process.join()
            link.conn.close()


def _one_message_each(links: dict) -> dict:
    """``{key: message}``: the next message of each worker process of ``links``; the first ``("error", message)``
    one sends, or its stop before it said anything, is raised."""
    said, waiting = {}, dict(links)
    while waiting:
        key, message = local_workers.receive(waiting)
        if message is None:  # ended without a word
            raise local_workers.stopped(key, 0)
        if isinstance(message, tuple) and message[0] == "error":
            raise RuntimeError(message[1])
        said[key] = message
        del waiting[key]
    return said


def _batched_rate(run_batched, seeds: int, rounds: int, repeat: int) -> float:
    """Seed-rounds per second of a seed-batched numpy peer ``run_batched(T, S)`` (best of ``repeat`` runs)."""
    return seeds * rounds / _timed(lambda: run_batched(rounds, seeds), repeat)


@dataclass
class Session:
    """One benchmark call: its settings, and what its engine-only sweep has measured so far."""

    repeat: int = 3  # timed runs per measurement, engine and peers alike; the fastest counts (--repeat)
    workers: int = 1  # worker processes the engine runs in (one per core on CPU, as `mobandit run`)
    path: str | None = None  # --engine-only --json: rewritten after every row
    info: dict | None = None  # the machine, written beside the rows
    rows: list = field(default_factory=list)  # the engine-only sweep's rows
    out_of_memory: list = field(default_factory=list)  # "algorithm at N seeds: message" of the sweeps stopped
    numba_missing: bool = False  # the missing numba was said

    def save(self, row):
        """Append a row to the engine-only sweep and rewrite its JSON (a time-limited run keeps its rows).

        Args:
          row: the row, a dict of JSON values.

        Returns:
          None; the JSON file is rewritten where the session has a ``path``.
        """
        self.rows.append(row)
        if self.path:
            with open(self.path, "w") as f:
                json.dump({"info": self.info, "policies": self.rows, "out_of_memory": self.out_of_memory}, f,
                          indent=1)


def _is_out_of_memory(err: Exception) -> bool:
    text = str(err)
    return "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()


def numba_peers(session: Session):
    """The numba peers' module, where numba is installed.

    Args:
      session: the benchmark call; where numba is missing, its first call says so in one line.

    Returns:
      :mod:`mobandit_jax.bench.numba_peers`, or ``None`` where numba is not installed.
    """
    try:
        from . import numba_peers as module
    except ImportError:
        if not session.numba_missing:
            session.numba_missing = True
            print("numba column: not measured (numba is not installed; pip install 'mobandit_jax[bench]')")
        return None
    return module


def _numba_rate(session: Session, run_seeds, horizon: int, seeds: int = 16) -> float:
    """Seed-rounds per second of a numba per-seed loop ``run_seeds(T, S)`` over ``seeds`` seeds of ``horizon`` rounds,
    one seed after another on this core (compiled first; the best of the session's ``repeat`` runs)."""
    run_seeds(horizon, 1)
    return seeds * horizon / _timed(lambda: run_seeds(horizon, seeds), session.repeat)


def _rows(session: Session, label: str, seed_counts, setup, horizon: int, numpy_rate, batched, numba_rate=None):
    """One row per seed count: the engine's rate (:func:`engine_rate` of ``setup``, with the session's workers)
    beside both numpy peers' (``batched(S)`` -> rate) and the numba loop's (``numba_rate``, seed-rounds/s).

    ``numpy_rate=None`` leaves the peers out; ``numba_rate=None`` the numba column. A seed count that runs out of
    device memory ends the sweep of this algorithm (noted in the session's ``out_of_memory``).
    """
    rows = []
    for s in seed_counts:
        try:
            rate, comp = engine_rate(setup, horizon, s, session.workers, session.repeat)
        except Exception as err:  # noqa: BLE001 -- only allocation failures are expected here
            if not _is_out_of_memory(err):
                raise
            session.out_of_memory.append(f"{label} at {s} seeds: {str(err).splitlines()[0][:200]}")
            break
        row = {"algorithm": label, "seeds": s, "seed_rounds_per_s": rate, "compile_s": comp}
        if numpy_rate is None and numba_rate is None:
            session.save(row)
        if numpy_rate is not None:
            peer = batched(s)
            row.update({"numpy_seed_rounds_per_s": numpy_rate, "speedup": rate / numpy_rate,
                        "numpy_batched_seed_rounds_per_s": peer, "speedup_batched": rate / peer})
        if numba_rate is not None:
            row.update({"numba_seed_rounds_per_s": numba_rate, "speedup_numba": rate / numba_rate})
        rows.append(row)
    return rows


def _prefucb_setup(section: dict | None = None):
    """PrefUCB (K = 42, d = 7, the Customer Service cone, M = 2) on :func:`_bench_means` with Beta feedback,
    or on the environment of ``section``: ``(env, policy, metrics, params)``."""
    from ..metrics.preference import preference_metrics, preference_truth
    from ..policies.preference import ConeParams, prefucb
    from ..problems.stochastic import make_stochastic
    from ..registry import make_env as make

    inst = make_stochastic(_bench_means()) if section is None else make(section)
    W = CUSTOMER_SERVICE_W
    params = RunParams(inst.params, ConeParams(jnp.asarray(W, jnp.float32)), preference_truth(inst.means, W), jnp.inf)
    return inst.env, prefucb(42, 7), preference_metrics(7), params


def _bench_means():
    return np.random.default_rng(0).uniform(0.05, 0.95, size=(42, 7))


def bench_prefucb(session: Session, seed_counts, horizon: int, numpy_rounds: int, peers: bool = True,
                  numba: bool = False):
    """PrefUCB at K = 42, d = 7, M = 2 (the Customer Service cone) against both numpy peers and the numba loop.

    Args:
      session: the benchmark call (its ``repeat`` and ``workers``).
      seed_counts: the engine's seed counts, one row each.
      horizon: rounds per engine run (and per seed of the seed-batched and numba peers).
      numpy_rounds: rounds of the per-seed numpy loop.
      peers: measure the two numpy peers.
      numba: measure the numba loop (where numba is installed).

    Returns:
      The rows, one per seed count (see :func:`_rows`).
    """
    from .numpy_peers import prefucb_batched
    from .reference.prefucb_numpy import run_prefucb_numpy

    means, W = _bench_means(), CUSTOMER_SERVICE_W
    np_rate = nb_rate = None
    if peers:
        np_rate = numpy_rounds / _timed(lambda: run_prefucb_numpy(means, W, numpy_rounds, seed=0), session.repeat)
    nb = numba_peers(session) if numba else None
    if nb is not None:
        nb_rate = _numba_rate(session, lambda T, S: nb.prefucb_seeds(means, W, T, S), horizon)
    # the engine's horizon, forced first rounds included as in the engine's timed runs
    batched = lambda s: _batched_rate(lambda T, S: prefucb_batched(means, W, T, S), s, horizon,  # noqa: E731
                                      session.repeat)
    return _rows(session, "PrefUCB (K=42, d=7, M=2)", seed_counts, (_prefucb_setup, ()), horizon, np_rate, batched,
                 nb_rate)


def bench_user_envs(session: Session, seed_counts, horizon: int):
    """PrefUCB (K = 42, d = 7, M = 2) on the same means as ``kind = "stochastic"``, ``"table"`` (a per-arm CSV)
    and ``"replay"`` (256 recorded Bernoulli instances per arm): the per-round cost of the user-data envs.

    Args:
      session: the benchmark call (its ``repeat`` and ``workers``).
      seed_counts: the engine's seed counts, one row each.
      horizon: rounds per engine run.

    Returns:
      The rows, one per environment kind and seed count (see :func:`_rows`).
    """
    import csv
    import tempfile

    rng = np.random.default_rng(0)
    means = rng.uniform(0.05, 0.95, size=(42, 7))
    names = [f"y{j}" for j in range(7)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/table.csv", "w", newline="") as fh:
            csv.writer(fh).writerows([["arm"] + names] + [[f"a{i}"] + list(m) for i, m in enumerate(means)])
        draws = rng.uniform(size=(42, 256, 7)) < means[:, None]
        with open(f"{tmp}/replay.csv", "w", newline="") as fh:
            csv.writer(fh).writerows([["arm", "instance"] + names] + [
                [f"a{i}", f"q{q}"] + draws[i, q].astype(int).tolist() for i in range(42) for q in range(256)])
        common = {"arm": "arm", "objectives": names}
        sections = {"stochastic": {"kind": "stochastic", "means": means.tolist(), "noise": "bernoulli"},
                    "table": {"kind": "table", "path": f"{tmp}/table.csv", "noise": "bernoulli", **common},
                    "replay": {"kind": "replay", "path": f"{tmp}/replay.csv", "instance": "instance", **common}}
        for kind, section in sections.items():
            rows += _rows(session, f"PrefUCB on kind={kind}", seed_counts, (_prefucb_setup, (section,)), horizon,
                          None, None)
    return rows


def _registry_run(env_section: dict, policy_key: str):
    """Environment, policy, metrics and params of a registered policy on a registered env."""
    from .. import metrics, policies, problems  # noqa: F401  (importing fills the registries)
    from ..registry import POLICIES, make_env, make_metrics, make_policy
    from ..runner.plans import make_context

    inst = make_env(env_section, {})
    family = POLICIES[POLICIES.resolve(policy_key)].family
    ctx = make_context(None, inst, inst.horizon or 1000, family)
    policy, pparams, _ = make_policy(policy_key, ctx)
    mset, mparams = make_metrics(family, ctx)
    return inst, ctx, policy, mset, RunParams(inst.params, pparams, mparams, jnp.inf)


def _registry_setup(env_section: dict, policy_key: str):
    """:func:`_registry_run` as the ``(env, policy, metrics, params)`` of :func:`engine_rate`."""
    inst, _, policy, mset, params = _registry_run(env_section, policy_key)
    return inst.env, policy, mset, params


def _numpy_rate(run_rounds, warm: int, rounds: int, repeat: int) -> float:
    """Rounds per second of a numpy loop ``run_rounds(n)``, excluding its first ``warm`` rounds (the best
    of ``repeat`` runs of each length)."""
    return rounds / max(_timed(lambda: run_rounds(warm + rounds), repeat) - _timed(lambda: run_rounds(warm), repeat),
                        1e-9)


def thv_section(d: int, n: int, k: int, sigma: float) -> dict:
    """The environment THV-UCB is benchmarked on: a concave DTLZ front.

    Args:
      d: objectives.
      n: arms.
      k: the slate's size.
      sigma: the Gaussian noise scale.

    Returns:
      Its ``[env]`` table.
    """
    return {"kind": "dtlz", "d": d, "n": n, "k": k, "sigma": sigma, "front": "concave", "instance_seed": 0}


THV_D5 = {"d": 5, "n": 150, "k": 6, "sigma": 0.02}  # the benchmark's THV-UCB at d = 5


def bench_thv_ucb(session: Session, seed_counts, horizon: int, numpy_rounds: int, d: int, n: int, k: int, sigma: float,
                  peers: bool = True, numba: bool = False):
    """THV-UCB (Gutowski et al.) on a concave DTLZ front against its numpy loop (rounds after the forced init), its
    seed-batched numpy peer and its numba loop (every round).

    Args:
      session: the benchmark call (its ``repeat`` and ``workers``).
      seed_counts: the engine's seed counts, one row each.
      horizon: rounds per engine run (and per seed of the numba loop).
      numpy_rounds: rounds of the per-seed numpy loop after its forced initialisation.
      d: objectives of the DTLZ front.
      n: arms.
      k: the slate's size.
      sigma: the Gaussian noise scale.
      peers: measure the two numpy peers.
      numba: measure the numba loop (where numba is installed).

    Returns:
      The rows, one per seed count (see :func:`_rows`).
    """
    from .numpy_peers import thv_ucb_batched
    from .reference.thv_ucb_numpy import thv_ucb_numpy

    section = thv_section(d, n, k, sigma)
    inst = _registry_run(section, "slate/thv_ucb")[0]
    warm = -(-2 * n // k)  # the forced round-robin initialisation (m0 = 2 pulls per arm)
    np_rate = _numpy_rate(lambda T: thv_ucb_numpy(inst.means, k, T, eta=0.01, delta=1 / 5000, sigma=sigma),
                          warm, numpy_rounds, session.repeat) if peers else None
    nb = numba_peers(session) if numba else None
    nb_rate = None if nb is None else _numba_rate(
        session, lambda T, S: nb.thv_ucb_seeds(inst.means, k, T, S, eta=0.01, delta=1 / 5000, sigma=sigma), horizon)

    def batched(s):  # each round is a few large numpy calls: a few rounds suffice at many seeds
        rounds = max(3, min(numpy_rounds, 8192 // s))
        return s * _numpy_rate(lambda T: thv_ucb_batched(inst.means, k, T, s, eta=0.01, delta=1 / 5000, sigma=sigma),
                               warm, rounds, session.repeat)

    return _rows(session, f"THV-UCB (d={d}, n={n}, k={k})", seed_counts,
                 (_registry_setup, (section, "slate/thv_ucb")), horizon, np_rate, batched, nb_rate)


def bench_cohv_ucb(session: Session, seed_counts, horizon: int, numpy_rounds: int, peers: bool = True):
    """CoHV-UCB (Xue et al.) on the simulated PIQA-like table (K = 132, D = 2) against its numpy loops.

    Args:
      session: the benchmark call (its ``repeat`` and ``workers``).
      seed_counts: the engine's seed counts, one row each.
      horizon: rounds per engine run.
      numpy_rounds: rounds of the per-seed numpy loop after its first pull of each arm.
      peers: measure the per-seed and seed-batched numpy loops.

    Returns:
      The rows, one per seed count (see :func:`_rows`).
    """
    from ..problems import llm_configs
    from .numpy_peers import cohv_ucb_batched
    from .reference.cohv_ucb_numpy import run_cohv_ucb

    section = {"kind": "llm_configs", "dataset": "piqa", "rho": 32.0}
    inst, ctx = _registry_run(section, "cohv_ucb")[:2]
    K = inst.env.num_arms
    vals = np.asarray(llm_configs.pull_values(jax.random.PRNGKey(0), inst.params, 64), np.float64)

    def loop(T):
        run_cohv_ucb(lambda a, j: (vals[a, j % 64, :2], vals[a, j % 64, 2]), K, 2, ctx.budget, ctx.cost_floor,
                     inst.alloc_costs, T)

    np_rate = _numpy_rate(loop, K, numpy_rounds, session.repeat) if peers else None

    def batched(s):
        shift = np.arange(s)  # seed s reads the pull table from its own offset

        def stream(arms, pulls):
            v = vals[arms, (pulls + shift) % 64]
            return v[:, :2], v[:, 2]

        return s * _numpy_rate(lambda T: cohv_ucb_batched(stream, K, 2, ctx.budget, ctx.cost_floor,
                                                          inst.alloc_costs, T, s), K,
                               max(20, min(numpy_rounds, 2**18 // s)), session.repeat)

    return _rows(session, f"CoHV-UCB (K={K}, D=2)", seed_counts, (_registry_setup, (section, "cohv_ucb")), horizon,
                 np_rate, batched)


def bench_hypervolume(num_sets: int, points: int = 6, d: int = 5):
    """Batched exact HV of ``num_sets`` sets of ``points`` points at ``d`` objectives vs ``moocore`` per call.

    Args:
      num_sets: sets in the batch (``moocore`` is timed on at most 2,000 of them).
      points: points per set.
      d: objectives.

    Returns:
      A row: ``kernel``, ``sets``, ``ours_us_per_set``, ``moocore_us_per_call`` and ``speedup`` (these two
      ``None`` where ``moocore`` is not installed).
    """
    from ..kernels import hypervolume

    rng = np.random.default_rng(1)
    P = rng.random((num_sets, points, d)).astype(np.float32)
    ref = np.zeros(d, np.float32)
    f = jax.jit(hypervolume)
    jax.block_until_ready(f(P, ref))
    ours = _timed(lambda: f(P, ref), repeat=3) / num_sets
    row = {"kernel": f"hypervolume, {points} points, d={d}, batch {num_sets}", "sets": num_sets,
           "ours_us_per_set": ours * 1e6, "moocore_us_per_call": None, "speedup": None}
    try:
        import moocore
    except ImportError:
        return row
    n_moo = min(num_sets, 2000)
    P64 = -P[:n_moo].astype(np.float64)
    t0 = time.perf_counter()
    for p in P64:
        moocore.hypervolume(p, ref=np.zeros(d))
    moo = (time.perf_counter() - t0) / n_moo
    return {**row, "moocore_us_per_call": moo * 1e6, "speedup": moo / ours}


def bench_klucb(n: int):
    """Nanoseconds per KL-UCB upper index over ``n`` random (p, level) pairs, float32.

    Args:
      n: the indices computed in one call.

    Returns:
      A row: ``kernel``, ``indices`` and ``ns_per_index`` (the best of 3 calls).
    """
    from ..kernels import klucb_upper

    rng = np.random.default_rng(2)
    p = jnp.asarray(rng.random(n), jnp.float32)
    level = jnp.asarray(np.exp(rng.uniform(np.log(1e-6), np.log(10), n)), jnp.float32)
    jax.block_until_ready(klucb_upper(p, level))
    return {"kernel": f"klucb_upper float32, {n} indices", "indices": n,
            "ns_per_index": _timed(lambda: klucb_upper(p, level), 3) / n * 1e9}


PARTS = ("engine", "peers", "numba", "kernels")
ALGORITHMS = {  # name -> (session, seed counts, horizon, numpy rounds, numpy peers, numba peer) -> rows
    "prefucb": bench_prefucb,
    "thv_d2": lambda session, seeds, T, r, peers, numba: bench_thv_ucb(session, seeds, T, r // 4, d=2, n=36, k=3,
                                                                       sigma=0.05, peers=peers, numba=numba),
    # d = 5: the first 50 rounds are the forced initialisation; half the rounds keep the run short.
    "thv_d5": lambda session, seeds, T, r, peers, numba: bench_thv_ucb(session, seeds, max(T // 2, 100), r // 20,
                                                                       **THV_D5, peers=peers, numba=numba),
    "cohv": lambda session, seeds, T, r, peers, numba: bench_cohv_ucb(session, seeds, T, r, peers),
    "user_envs": lambda session, seeds, T, r, peers, numba: bench_user_envs(session, seeds, T),
}
FIXED_CONFIDENCE = ("auer", "ape")  # seconds a seed, engine against the numba loop (bench.fixed_confidence)


def parser() -> argparse.ArgumentParser:
    """The options of ``mobandit bench`` (and ``python scripts/bench.py``).

    Returns:
      The parser.
    """
    parser = argparse.ArgumentParser(prog="mobandit bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short measurements")
    parser.add_argument("--seeds", default="1,256", help="comma-separated seed counts (e.g. 1,256,4096)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--rounds", type=int, default=300, help="rounds per timed engine run")
    parser.add_argument("--prefucb-only", action="store_true", help="skip THV-UCB and CoHV-UCB")
    parser.add_argument("--algorithms", default="prefucb,thv_d2,thv_d5,cohv", help="comma-separated subset to run")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per measurement, engine and numpy peers "
                        "alike; the fastest counts (default 3: a loaded machine slows single runs)")
    parser.add_argument("--devices", type=int, help="devices to split the seeds over (default: every core, on CPU "
                        "one single-device worker process per core; 1: this process on one core)")
    parser.add_argument("--peers", choices=("numpy", "vopy"), default="numpy",
                        help="numpy (default): the policy benchmarks above; vopy: the pac family beside VOPy's PaVeBa "
                             "and Naive Elimination (mobandit_jax.bench.vopy_peer; needs --vopy-python)")
    parser.add_argument("--vopy-python", help="with --peers vopy: an interpreter with `pip install vopy`")
    parser.add_argument("--work", default="runs/vopy_peer",
                        help="with --peers vopy: the folder of its outputs (a second call resumes)")
    parser.add_argument("--engine-only", action="store_true",
                        help="engine rates only (no numpy peers, no kernels; the same as --parts engine); a seed "
                             "count out of memory ends that algorithm's sweep (for GPU sweeps up to 1,048,576 seeds)")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated subset of engine (the policies' rates), peers (the numpy peers beside "
                             "them), numba (the numba per-seed loops beside them) and kernels (hypervolume and KL-UCB "
                             "per call); default all four")
    parser.add_argument("--kernel-batches", help="with kernels: comma-separated batch sizes, as many of each kernel's "
                        "batches as given, e.g. 20000,2000000 (hypervolume sets; KL-UCB indices are 50x as many); "
                        "default 20000 (2000 with --quick)")
    return parser


def main(argv=None) -> int:
    """Run the benchmarks and print a table (and optionally JSON).

    Args:
      argv: the options (default: ``sys.argv[1:]``), see :func:`parser`.

    Returns:
      The exit code: 0, or 2 for a bad option (one line on stderr).
    """
    args = parser().parse_args(argv)
    if args.peers == "vopy":
        return _vopy_peers(args)
    try:
        options = _options(args)
        session = Session(repeat=args.repeat, workers=devices.configure_run(args.devices))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from ..runner import runtime

    runtime.configure()  # the CPU settings the figures are taken with (MOBANDIT_XLA_DEFAULTS=1: JAX's own)
    info = _machine(session)
    if not options.parts & {"peers", "numba"}:
        session.path, session.info = args.json, info
    rows, fixed = _policies(session, options)
    _print_rates(rows)
    _print_fixed_confidence(fixed)
    for note in session.out_of_memory:
        print(f"out of memory: {note}")
    if "kernels" not in options.parts:
        return 0
    hv, kl = _kernels(options.batches)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"info": info, "policies": rows, "fixed_confidence": fixed, "hypervolume": hv, "klucb": kl,
                       "out_of_memory": session.out_of_memory}, f, indent=1)
    return 0


def _vopy_peers(args) -> int:
    """``--peers vopy``: the pac family beside VOPy (:func:`mobandit_jax.bench.vopy_peer.compare`); the exit code."""
    if not args.vopy_python:
        print("error: --peers vopy needs --vopy-python (an interpreter with `pip install vopy`)", file=sys.stderr)
        return 2
    from .vopy_peer import compare

    compare(args.vopy_python, args.work, *((50, 5, 200) if args.quick else ()))
    return 0


@dataclass(frozen=True)
class _Options:
    """The checked options of a benchmark call: what to measure, and how long."""

    algorithms: list  # names of ALGORITHMS and FIXED_CONFIDENCE, in the order given
    seeds: list  # seed counts
    horizon: int  # rounds per timed engine run
    numpy_rounds: int  # rounds per timed numpy loop
    parts: frozenset  # of PARTS
    batches: list  # the kernels' batch sizes


def _whole_numbers(option: str, text: str) -> list:
    """The comma-separated positive integers of ``text``; a ``ValueError`` naming ``option`` otherwise."""
    with contextlib.suppress(ValueError):
        numbers = [int(n) for n in text.split(",")]
        if min(numbers) >= 1:
            return numbers
    raise ValueError(f"{option} {text}: give comma-separated positive integers")


def _options(args) -> _Options:
    """The options of ``args`` checked (a ``ValueError`` in one line naming the option and what is allowed)."""
    chosen = ["prefucb"] if args.prefucb_only else args.algorithms.split(",")
    unknown = sorted(set(chosen) - set(ALGORITHMS) - set(FIXED_CONFIDENCE))
    if unknown:
        raise ValueError(f"--algorithms: unknown {', '.join(unknown)}; choose from "
                         f"{', '.join(list(ALGORITHMS) + list(FIXED_CONFIDENCE))}")
    parts = ["engine"] if args.engine_only else args.parts.split(",")
    if set(parts) - set(PARTS) or not parts:
        raise ValueError(f"--parts {args.parts}: choose a comma-separated subset of {', '.join(PARTS)}")
    batches = _whole_numbers("--kernel-batches", args.kernel_batches or ("2000" if args.quick else "20000"))
    if args.repeat < 1:
        raise ValueError(f"--repeat {args.repeat}: give at least 1 timed run")
    if args.rounds < 1:
        raise ValueError(f"--rounds {args.rounds}: give at least 1 round")
    return _Options(chosen, _whole_numbers("--seeds", args.seeds), 100 if args.quick else args.rounds,
                    200 if args.quick else 1000, frozenset(parts), batches)
def _machine(session: Session) -> dict:
    """The backend, devices, worker processes, processor and JAX version the figures are taken on, printed."""
    info = {"backend": jax.default_backend(), "devices": [str(d) for d in sharding.local_mesh().devices.flat],
            "worker_processes": session.workers,
            "machine": platform.processor() or platform.machine(), "jax": jax.__version__}
    print(f"backend {info['backend']}, devices {info['devices']}, worker processes {session.workers}, "
          f"jax {info['jax']}")
    return info


def _policies(session: Session, options: _Options) -> tuple:
    """``(rows, fixed-confidence rows)``: the chosen algorithms measured (none without the engine part)."""
    rows, fixed = [], []
    numba = "numba" in options.parts
    for name in options.algorithms if "engine" in options.parts else ():
        if name in FIXED_CONFIDENCE:
            from .fixed_confidence import bench_fixed_confidence

            fixed += bench_fixed_confidence(name, options.seeds, session.repeat,
                                            numba_peers(session) if numba else None)
        else:
            rows += ALGORITHMS[name](session, options.seeds, options.horizon, options.numpy_rounds,
                                     "peers" in options.parts, numba)
    return rows, fixed


def _kernels(batches) -> tuple:
    """``(hypervolume rows, KL-UCB rows)`` at each batch size (KL-UCB: 50 times as many indices), printed."""
    hv, kl = [bench_hypervolume(n) for n in batches], [bench_klucb(50 * n) for n in batches]
    print()
    for row in hv:
        versus = (f" vs moocore {row['moocore_us_per_call']:.2f} us/call -> {row['speedup']:.1f}x"
                  if row["speedup"] else " (moocore not installed)")
        print(f"{row['kernel']}: {row['ours_us_per_set']:.4f} us/set (batched){versus}")
    for row in kl:
        print(f"{row['kernel']}: {row['ns_per_index']:.3f} ns/index")
    return hv, kl


def _cell(value, fmt: str, width: int, unit: str = "") -> str:
    """``value`` formatted and right-aligned in ``width`` characters, ``-`` where it is ``None``."""
    return f"{'-' if value is None else format(value, fmt) + unit:>{width}s}"


def _print_rates(rows):
    """The policies' table: the engine's seed-rounds per second beside each peer's and the engine's ratio to it."""
    print(f"\n{'algorithm':34s} {'seeds':>8s} {'seed-rounds/s':>14s} {'numpy loop':>12s} {'ratio':>8s} "
          f"{'numpy batched':>14s} {'ratio':>8s} {'numba, one core':>16s} {'ratio':>8s} {'compile s':>10s}")
    for r in rows:
        peer = " ".join([_cell(r.get("numpy_seed_rounds_per_s"), ".0f", 12), _cell(r.get("speedup"), ".1f", 8, "x"),
                         _cell(r.get("numpy_batched_seed_rounds_per_s"), ".0f", 14),
                         _cell(r.get("speedup_batched"), ".1f", 8, "x"),
                         _cell(r.get("numba_seed_rounds_per_s"), ".0f", 16),
                         _cell(r.get("speedup_numba"), ".1f", 8, "x")])
        print(f"{r['algorithm']:34s} {r['seeds']:8d} {r['seed_rounds_per_s']:14.0f} {peer} {r['compile_s']:10.1f}")


def _print_fixed_confidence(rows):
    """The fixed-confidence table: microseconds a seed and mean samples, engine and numba loop."""
    if not rows:
        return
    print(f"\n{'fixed confidence':34s} {'seeds':>8s} {'us a seed':>12s} {'samples':>10s} {'numba, one core':>16s} "
          f"{'samples':>10s} {'ratio':>8s}")
    for r in rows:
        numba_us = None if r["numba_s_per_seed"] is None else r["numba_s_per_seed"] * 1e6
        print(f"{r['algorithm']:34s} {r['seeds']:8d} {r['s_per_seed'] * 1e6:12.1f} {r['samples']:10.0f} "
              f"{_cell(numba_us, '.1f', 16)} {_cell(r['numba_samples'], '.0f', 10)} "
              f"{_cell(r['speedup_numba'], '.2f', 8, 'x')}")


if __name__ == "__main__":
    raise SystemExit(main())
