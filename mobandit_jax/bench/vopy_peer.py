"""The pac family beside VOPy, the PaVeBa authors' library (``pip install vopy``): same data, cones and noise.

Two halves in two interpreters, since VOPy brings its own stack (cvxpy, torch) and needs no JAX:

- VOPy's half (``vopy``, ``export``) imports VOPy and numpy only. ``export`` writes one of VOPy's
  standardized datasets (``Test``, 32 designs; ``DiscBrake``, ``SNW``, ...) as a per-arm CSV for
  ``[env] kind = "table"``; ``vopy`` runs VOPy's ``PaVeBa`` or ``NaiveElimination`` ``--runs`` times on a
  2-D cone of opening ``--cone`` degrees (VOPy's ``ConeTheta2DOrder``), seeding VOPy's generators with
  ``--seed + run`` before each run, and writes one JSON line per run: samples, rounds, returned set,
  misidentification, VOPy's own epsilon-F1 and the seconds of the run (building the algorithm and
  stepping it to the end; the epsilon-F1 is computed after the clock stops).
- Our half (``spec``, ``ours``, ``table``) imports this package. ``spec`` writes the TOML of the same
  problem (``kind = "table"`` on the exported CSV, ``noise = "gaussian"``, ``sigma = sqrt(noise_var)``,
  ``clip = false``, ``[preference] W`` the same cone); ``ours`` runs the whole ``mobandit run`` command on
  it twice (the second finds the compilation cache warm) and records the second's wall time;
  ``table`` prints both sides per setting: mean samples, epsilon-F1 and misidentification with
  standard errors, seconds per run (ours: the command's wall time over the seeds), and our epsilon-F1
  recomputed on VOPy's returned sets (it must equal VOPy's own score run by run).

The noise: VOPy draws ``N(0, noise_var I)`` per pull; the pac family reads ``sigma = sqrt(noise_var)``
and PaVeBa's radius ``sqrt(8 sigma^2 / t ...)`` equals VOPy's ``sqrt(8 noise_var / t ...)``. Naive
Elimination is compared at a given ``L`` (VOPy's default ``L`` puts the variance where the paper's
formula has ``sigma``). :func:`compare` (``scripts/vopy_compare.py``) runs the whole comparison: Naive
Elimination at a given ``L`` and PaVeBa at VOPy's ``conf_contraction = 32`` on VOPy's ``Test`` dataset,
2-D cones of 45, 90 and 135 degrees, ``epsilon = 0.1``, ``delta = 0.05``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def theta_cone(deg: float) -> np.ndarray:
    """The 2-D cone of opening ``deg`` degrees symmetric about ``y = x`` (the cone of VOPy's ``ConeTheta2D``).

    Args:
      deg: the opening angle in degrees.

    Returns:
      ``W (2, 2)``: the unit inward normals of the cone's boundary rays at ``45 -+ deg / 2`` degrees.
    """
    a = math.radians(deg)
    lo, hi = math.pi / 4 - a / 2, math.pi / 4 + a / 2
    return np.array([[math.cos(lo + math.pi / 2), math.sin(lo + math.pi / 2)],
                     [math.cos(hi - math.pi / 2), math.sin(hi - math.pi / 2)]])


# --------------------------------------------------------------------------------------------
# VOPy's half (VOPy and numpy only)
# --------------------------------------------------------------------------------------------

def export_dataset(name: str, folder) -> Path:
    """Write VOPy's standardized dataset ``name`` as ``folder/<name>.csv`` (columns ``design, f1 .. fd``).

    Args:
      name: a VOPy dataset (``"Test"``, ``"DiscBrake"``, ``"SNW"``, ...).
      folder: the output folder (made if missing).

    Returns:
      The CSV's path.
    """
    from vopy.datasets import get_dataset_instance

    out = get_dataset_instance(name).out_data
    path = Path(folder) / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = [f"f{k + 1}" for k in range(out.shape[1])]
    lines = [",".join(["design"] + cols)] + [",".join([f"x{i}"] + [repr(float(v)) for v in row])
                                              for i, row in enumerate(out)]
    path.write_text("\n".join(lines) + "\n")
    return path


def run_vopy(algorithm: str, dataset: str, cone: float, epsilon: float, delta: float, noise_var: float, runs: int,
             seed: int, out, L: int | None = None, conf_contraction: float = 32.0, csv=None,
             record: bool = False) -> list:
    """Run VOPy's ``algorithm`` ``runs`` times, one JSON line per run appended to ``out``.

    Args:
      algorithm: ``"paveba"`` or ``"naive_elimination"``.
      dataset: a VOPy dataset.
      cone: the cone's opening in degrees (:func:`theta_cone`).
      epsilon: the accuracy.
      delta: the confidence.
      noise_var: VOPy's noise variance per pull.
      runs: the runs.
      seed: VOPy's generators are seeded with ``seed + run`` before each run.
      out: the JSON lines file.
      L: Naive Elimination's samples per arm (default VOPy's).
      conf_contraction: PaVeBa's radius divisor.
      csv: the exported table of ``dataset``, recorded in each line so that :func:`summarize_vopy` can rescore
        VOPy's returned sets with our metric.
      record: with PaVeBa, also keep every observation VOPy drew, per arm in draw order (``"draws"``), for
        :func:`replay_paveba`.

    Returns:
      The rows written: samples, rounds, returned set, truth, misidentification, VOPy's epsilon-F1, seconds.
    """
    import logging

    from vopy.algorithms import NaiveElimination, PaVeBa
    from vopy.datasets import get_dataset_instance
    from vopy.order import ConeTheta2DOrder
    from vopy.utils import set_seed
    from vopy.utils.evaluate import calculate_epsilonF1_score

    logging.disable(logging.INFO)
    order = ConeTheta2DOrder(cone)
    if not np.allclose(order.ordering_cone.W, theta_cone(cone), atol=1e-12):
        raise AssertionError(f"VOPy's {cone}-degree cone {order.ordering_cone.W.tolist()} differs from theta_cone")
    data = get_dataset_instance(dataset)
    truth = sorted(int(i) for i in order.get_pareto_set(data.out_data))
    rows = []
    with open(out, "a") as f:
        for k in range(runs):
            set_seed(seed + k)
            t0 = time.perf_counter()
            if algorithm == "paveba":
                alg = PaVeBa(epsilon, delta, dataset, order, noise_var, conf_contraction=conf_contraction)
            else:
                alg = NaiveElimination(epsilon, delta, dataset, order, noise_var, L=L)
            draws = {}
            if record and algorithm == "paveba":
                add = alg.model.add_sample

                def logged(indices, Y, add=add, draws=draws):
                    for i, y in zip(indices, Y, strict=False):
                        draws.setdefault(int(i), []).append([float(v) for v in y])
                    return add(indices, Y)

                alg.model.add_sample = logged
            t1 = time.perf_counter()
            while not alg.run_one_step():
                pass
            t2 = time.perf_counter()
            found = sorted(int(i) for i in alg.P)
            row = {"algorithm": algorithm, "dataset": dataset, "cone": cone, "epsilon": epsilon, "delta": delta,
                   "noise_var": noise_var, "L": None if L is None else int(L), "conf_contraction": conf_contraction,
                   "run": k, "seed": seed + k, "samples": int(alg.sample_count), "rounds": int(alg.round),
                   "returned": found, "truth": truth, "misidentification": float(found != truth),
                   "eps_f1": float(calculate_epsilonF1_score(data, order, truth, found, epsilon)),
                   "seconds": t2 - t0, "loop_seconds": t2 - t1, "csv": None if csv is None else os.path.abspath(csv)}
            if record and algorithm == "paveba":
                row["draws"] = {str(i): v for i, v in sorted(draws.items())}
            f.write(json.dumps(row) + "\n")
            f.flush()
            rows.append(row)
    return rows


# --------------------------------------------------------------------------------------------
# Our half
# --------------------------------------------------------------------------------------------

def spec_toml(csv: str, cone: float, noise_var: float, policy: dict, seeds: int, horizon: int, name: str) -> str:
    """The spec of one setting: the exported table, Gaussian noise of variance ``noise_var``, the cone, one policy.

    Args:
      csv: the exported table's path.
      cone: the cone's opening in degrees.
      noise_var: the noise variance (``sigma = sqrt(noise_var)``, unclipped).
      policy: the ``[[policies]]`` entry.
      seeds: seeds.
      horizon: the round cap.
      name: the experiment's name.

    Returns:
      The TOML text.
    """
    W = theta_cone(cone)
    opts = "\n".join(f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in policy.items())
    return (f'[experiment]\nname = "{name}"\nhorizon = {horizon}\nseeds = {seeds}\n\n'
            f'[env]\nkind = "table"\npath = "{csv}"\narm = "design"\nobjectives = ["f1", "f2"]\n'
            f'noise = "gaussian"\nsigma = {math.sqrt(noise_var)!r}\nclip = false\n\n'
            f"[preference]\nW = {json.dumps(W.tolist())}\n\n[[policies]]\n{opts}\n")


def run_ours(spec, out, command=None) -> dict:
    """Run ``mobandit run spec`` twice, into ``out/cold`` and ``out/warm``, and write ``out/timing.json``.

    Args:
      spec: the spec's path.
      out: a folder without ``cold`` or ``warm`` in it.
      command: the ``mobandit`` command as a list (default the one beside this interpreter).

    Returns:
      ``{"spec", "cold_s", "warm_s"}``: the two wall times in seconds.

    Raises:
      FileExistsError: ``out/cold`` or ``out/warm`` exists.
    """
    command = command or [str(Path(sys.executable).with_name("mobandit"))]
    walls = []
    for leg in ("cold", "warm"):
        folder = Path(out) / leg
        if folder.exists():
            raise FileExistsError(f"{folder} exists: give a fresh --out")
        t0 = time.perf_counter()
        subprocess.run(command + ["run", str(spec), "--out", str(folder), "--quiet"], check=True)
        walls.append(time.perf_counter() - t0)
    info = {"spec": str(spec), "cold_s": walls[0], "warm_s": walls[1]}
    (Path(out) / "timing.json").write_text(json.dumps(info))
    return info


def _mean_se(x):
    x = np.asarray(x, float)
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else float("nan")


def summarize_ours(out) -> dict:
    """Per-seed figures of a run folder written by :func:`run_ours` (its warm leg).

    Args:
      out: the folder of :func:`run_ours`.

    Returns:
      ``(mean, standard error)`` of samples, epsilon-F1, misidentification and stopped, with ``seeds``,
      ``seconds_per_seed`` (the warm wall time over the seeds), ``warm_s`` and ``cold_s``.
    """
    from ..analysis.results import Results

    res = Results.load(Path(out) / "warm")
    timing = json.loads((Path(out) / "timing.json").read_text())
    label = next(iter(res.grid))
    seeds = res.finals[f"{label}|0|samples"].size
    row = {m: _mean_se(res.finals[f"{label}|0|{m}"].ravel())
           for m in ("samples", "eps_f1", "misidentification", "stopped")}
    row.update(seeds=seeds, seconds_per_seed=timing["warm_s"] / seeds, warm_s=timing["warm_s"],
               cold_s=timing["cold_s"])
    return row


def summarize_vopy(rows: list) -> dict:
    """Per-run figures of VOPy's JSON lines, plus our epsilon-F1 of VOPy's returned sets.

    Args:
      rows: the lines of :func:`run_vopy` of one setting.

    Returns:
      ``(mean, standard error)`` of samples, epsilon-F1, misidentification and seconds per run, with ``runs``;
      where the lines name their CSV, ``eps_f1_ours_on_vopy_sets_max_gap`` (the largest gap between our
      epsilon-F1 and VOPy's, run by run) and ``truth_agrees`` (both sides' Pareto set).
    """
    from ..metrics.pac import eps_f1_score, pac_truth

    first = rows[0]
    out = {m: _mean_se([r[m] for r in rows]) for m in ("samples", "eps_f1", "misidentification")}
    out.update(runs=len(rows), seconds_per_run=_mean_se([r["seconds"] for r in rows]),
               loop_seconds_per_run=_mean_se([r["loop_seconds"] for r in rows]))
    data = np.loadtxt(first["csv"], delimiter=",", skiprows=1, usecols=(1, 2)) if first.get("csv") else None
    if data is not None:
        truth = pac_truth(data, theta_cone(first["cone"]))
        ours = [float(eps_f1_score(np.isin(np.arange(len(data)), r["returned"]), truth, r["epsilon"])) for r in rows]
        out["eps_f1_ours_on_vopy_sets_max_gap"] = float(np.max(np.abs(np.subtract(ours, [r["eps_f1"] for r in rows]))))
        out["truth_agrees"] = bool(sorted(np.flatnonzero(np.asarray(truth.optimal))) == first["truth"])
    return out


def replay_paveba(rows: list, radius: str = "pulls", x64: bool = True) -> dict:
    """Our ``paveba`` on the very observations VOPy drew, run by run.

    A table environment serves arm ``i``'s ``j``-th pull as the ``j``-th observation VOPy drew for it, so both
    implementations see the same numbers.

    Args:
      rows: lines of ``run_vopy(..., record=True)`` (lines without ``"draws"`` are skipped).
      radius: our option (``"round"`` is VOPy's reading).
      x64: compute in float64.

    Returns:
      ``{"runs", "same_set", "same_samples", "differ"}``: how many runs agree on the returned set and on the
      samples, and the runs that do not (both sides' set and samples).
    """
    import jax
    import jax.numpy as jnp

    from ..policies.pac import _configure_paveba
    from ..policies.pac import paveba as make_paveba
    from ..types import Context, Env, EnvInstance

    rows = [r for r in rows if "draws" in r]
    first = rows[0]
    data = np.loadtxt(first["csv"], delimiter=",", skiprows=1, usecols=(1, 2))
    K, d = data.shape
    n = max(len(v) for r in rows for v in r["draws"].values())
    tables = np.zeros((len(rows), K, n, d))
    for k, r in enumerate(rows):
        for i, v in r["draws"].items():
            tables[k, int(i), :len(v)] = v

    def sample(key, arm, j, t, table):
        return table[arm, jnp.minimum(j, table.shape[1] - 1)], jnp.zeros((), table.dtype)

    with jax.enable_x64(x64):
        env = Env(sample=sample, num_arms=K, dim=d)
        inst = EnvInstance(env=env, params=None, means=data, noise_sigma=math.sqrt(first["noise_var"]),
                           bounded=False)
        ctx = Context.of(inst, max(r["rounds"] for r in rows) + 1, W=theta_cone(first["cone"]))
        kwargs, params = _configure_paveba(ctx, first["epsilon"], first["delta"], first["conf_contraction"], radius)
        ident = make_paveba(**kwargs).identify
        key = jax.random.PRNGKey(0)
        out = jax.jit(jax.vmap(lambda tb: ident(key, key, tb, params)))(jnp.asarray(tables))
        rec, pulls = np.asarray(out.recommended), np.asarray(out.pulls).sum(1)
    same_set = [sorted(np.flatnonzero(rec[k]).tolist()) == r["returned"] for k, r in enumerate(rows)]
    same_samples = [int(pulls[k]) == r["samples"] for k, r in enumerate(rows)]
    return {"runs": len(rows), "same_set": int(np.sum(same_set)), "same_samples": int(np.sum(same_samples)),
            "differ": [{"run": r["run"], "vopy": [r["returned"], r["samples"]],
                        "ours": [np.flatnonzero(rec[k]).tolist(), int(pulls[k])]}
                       for k, r in enumerate(rows) if not (same_set[k] and same_samples[k])]}


def _load_jsonl(path) -> list:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _two_sample_z(a, b) -> float:
    """``(mean_a - mean_b) / sqrt(se_a^2 + se_b^2)`` of two ``(mean, se)`` pairs."""
    return (a[0] - b[0]) / math.sqrt(a[1] ** 2 + b[1] ** 2) if (a[1] > 0 or b[1] > 0) else 0.0


NAIVE = ((45, 400), (90, 60), (135, 5))  # (cone degrees, L) of the Naive Elimination settings, at NAIVE_VAR
NAIVE_VAR, PAVEBA_VAR = 0.1, 1.0  # VOPy's noise_var of each algorithm's settings
PAVEBA_CONES = (45, 90, 135)


def _settings(epsilon: float = 0.1, delta: float = 0.05):
    """``(name, algorithm, cone, noise_var, VOPy options, our policy entry, horizon)`` of the compared settings."""
    for cone, L in NAIVE:
        yield (f"ne_{cone}", "naive_elimination", cone, NAIVE_VAR, {"L": L},
               {"name": "naive_elimination", "epsilon": epsilon, "delta": delta, "L": L}, L)
    for cone in PAVEBA_CONES:
        yield (f"paveba_{cone}", "paveba", cone, PAVEBA_VAR, {"conf_contraction": 32.0},
               {"name": "paveba", "epsilon": epsilon, "delta": delta, "conf_contraction": 32.0}, 5000)


def compare(vopy_python: str, work, naive_runs: int = 500, paveba_runs: int = 30, seeds: int = 2000) -> list:
    """Every compared setting on both sides, resuming from what ``work`` holds; prints the table and writes
    ``work/vopy_bench.json``.

    Args:
      vopy_python: an interpreter with vopy installed, where VOPy's half runs (ours runs in this one).
      work: the folder of every output.
      naive_runs: VOPy's runs of each Naive Elimination setting.
      paveba_runs: VOPy's runs of each PaVeBa setting.
      seeds: our seeds of each setting.

    Returns:
      ``[(setting, VOPy's figures, ours)]`` (:func:`summarize_vopy`, :func:`summarize_ours`).
    """
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PYTHONWARNINGS": "ignore"}
    peer = [vopy_python, "-m", "mobandit_jax.bench.vopy_peer"]
    csv = work / "Test.csv"
    if not csv.exists():
        subprocess.run(peer + ["export", "--dataset", "Test", "--out", str(work)], check=True, env=env)
    rows = []
    for name, algorithm, cone, noise_var, options, policy, horizon in _settings():
        runs = naive_runs if algorithm == "naive_elimination" else paveba_runs
        jsonl = work / f"vopy_{name}.jsonl"
        done = len(_load_jsonl(jsonl)) if jsonl.exists() else 0
        if done < runs:
            extra = ["--L", str(options["L"])] if "L" in options else ["--conf-contraction", "32"]
            subprocess.run(peer + ["vopy", "--algorithm", algorithm, "--dataset", "Test", "--csv", str(csv),
                                   "--cone", str(cone), "--epsilon", str(policy["epsilon"]),
                                   "--delta", str(policy["delta"]), "--noise-var", str(noise_var),
                                   "--runs", str(runs - done), "--seed", str(done), "--out", str(jsonl)] + extra,
                           check=True, env=env)
        spec = work / f"ours_{name}.toml"
        spec.write_text(spec_toml(str(csv.resolve()), cone, noise_var, policy, seeds, horizon, f"vopy_peer/{name}"))
        out = work / f"ours_{name}"
        if not (out / "timing.json").exists():
            run_ours(spec, out)
        rows.append((name, summarize_vopy(_load_jsonl(jsonl)), summarize_ours(out)))
    _print_table(rows)
    (work / "vopy_bench.json").write_text(json.dumps(_table_json(rows), indent=1))
    return rows


def _table_json(rows) -> dict:
    """The side-by-side table as data (``vopy_bench.json``, read by ``experiments/composed/report.py``)."""
    out = []
    for name, theirs, ours in rows:
        for side, r, n, secs in (("VOPy", theirs, theirs["runs"], theirs["seconds_per_run"][0]),
                                 ("ours", ours, ours["seeds"], ours["seconds_per_seed"])):
            out.append({"setting": name, "side": side, "runs or seeds": int(n),
                        **{m: round(float(r[m][0]), 4) for m in ("samples", "eps_f1", "misidentification")},
                        "seconds per run or seed": float(f"{secs:.4g}")})
        out[-1]["VOPy seconds / our seconds"] = round(theirs["seconds_per_run"][0] / ours["seconds_per_seed"])
        out[-2]["VOPy seconds / our seconds"] = ""
    about = ("VOPy's Test dataset (32 designs), 2-D cones of 45, 90 and 135 degrees, epsilon = 0.1, delta = 0.05; "
             "Naive Elimination at a given L; PaVeBa at conf_contraction = 32 (VOPy's default). Ours: the whole "
             "`mobandit run` command's wall time (warm compilation cache) over its seeds; VOPy: seconds per run. "
             "Written by `mobandit bench --peers vopy`.")
    return {"about": about, "rows": out}


def _print_table(rows):
    """Both sides of each setting: mean +- standard error of samples, epsilon-F1, misidentification; seconds."""
    metrics = ("samples", "eps_f1", "misidentification")
    print(f"{'setting':12s} {'side':5s} {'n':>5s} {'samples':>17s} {'eps-F1':>17s} {'misident.':>17s} {'s/run':>10s}")
    for name, theirs, ours in rows:
        for side, r, n, secs in (("VOPy", theirs, theirs["runs"], theirs["seconds_per_run"][0]),
                                 ("ours", ours, ours["seeds"], ours["seconds_per_seed"])):
            cells = " ".join(f"{r[m][0]:10.3f}+-{r[m][1]:5.3f}" for m in metrics)
            print(f"{name:12s} {side:5s} {n:5d} {cells} {secs:10.4g}")
        z = {m: round(_two_sample_z(ours[m], theirs[m]), 2) for m in metrics}
        ratio = ours["samples"][0] / theirs["samples"][0]
        print(f"{'':12s} z(ours - VOPy) {json.dumps(z)}; samples ours / VOPy {ratio:.3f}; seconds VOPy run / our "
              f"seed {theirs['seconds_per_run'][0] / ours['seconds_per_seed']:.0f}x; our eps-F1 of VOPy's sets: "
              f"largest gap {theirs.get('eps_f1_ours_on_vopy_sets_max_gap', math.nan):.2g}")


def main(argv=None) -> int:
    """``python -m mobandit_jax.bench.vopy_peer {export,vopy,spec,ours,summary,compare,replay} ...`` (module docstring).

    Args:
      argv: the subcommand and its options (default: ``sys.argv[1:]``).

    Returns:
      The exit code, 0 (argparse exits with 2 on a bad option).
    """
    p = argparse.ArgumentParser(prog="python -m mobandit_jax.bench.vopy_peer", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="write a VOPy dataset as a per-arm CSV (needs vopy)")
    e.add_argument("--dataset", default="Test")
    e.add_argument("--out", required=True, help="folder")
    v = sub.add_parser("vopy", help="run VOPy's PaVeBa or NaiveElimination (needs vopy)")
    v.add_argument("--algorithm", choices=("paveba", "naive_elimination"), required=True)
    v.add_argument("--dataset", default="Test")
    v.add_argument("--csv", help="the exported CSV (recorded, for `summary`)")
    v.add_argument("--cone", type=float, required=True, help="opening angle in degrees")
    v.add_argument("--epsilon", type=float, default=0.1)
    v.add_argument("--delta", type=float, default=0.05)
    v.add_argument("--noise-var", type=float, required=True)
    v.add_argument("--runs", type=int, default=10)
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--L", type=int)
    v.add_argument("--conf-contraction", type=float, default=32.0)
    v.add_argument("--out", required=True, help="JSON lines file (appended)")
    v.add_argument("--record", action="store_true", help="PaVeBa: keep every observation (for `replay`)")
    s = sub.add_parser("spec", help="write our spec of one setting")
    s.add_argument("--csv", required=True)
    s.add_argument("--cone", type=float, required=True)
    s.add_argument("--noise-var", type=float, required=True)
    s.add_argument("--policy", required=True, help='JSON, e.g. {"name": "paveba", "conf_contraction": 32.0}')
    s.add_argument("--seeds", type=int, default=2000)
    s.add_argument("--horizon", type=int, default=5000)
    s.add_argument("--out", required=True, help="TOML file")
    o = sub.add_parser("ours", help="run `mobandit run` twice on a spec; time the second")
    o.add_argument("--spec", required=True)
    o.add_argument("--out", required=True, help="fresh folder")
    m = sub.add_parser("summary", help="both sides of one setting side by side")
    m.add_argument("--vopy", required=True, help="VOPy's JSON lines")
    m.add_argument("--ours", required=True, help="the folder of `ours`")
    c = sub.add_parser("compare", help="every setting on both sides (scripts/vopy_compare.py)")
    c.add_argument("--vopy-python", required=True, help="an interpreter with vopy installed")
    c.add_argument("--work", default="runs/vopy_peer", help="folder of every output (a second call resumes)")
    c.add_argument("--naive-runs", type=int, default=500)
    c.add_argument("--paveba-runs", type=int, default=30)
    c.add_argument("--seeds", type=int, default=2000)
    r = sub.add_parser("replay", help="our paveba on the observations of VOPy runs made with --record")
    r.add_argument("--vopy", required=True, help="VOPy's JSON lines")
    r.add_argument("--radius", choices=("pulls", "round"), default="pulls", help="our paveba's radius option")
    args = p.parse_args(argv)
    if args.cmd == "replay":
        print(json.dumps(replay_paveba(_load_jsonl(args.vopy), args.radius), indent=1))
    elif args.cmd == "compare":
        compare(args.vopy_python, args.work, args.naive_runs, args.paveba_runs, args.seeds)
    elif args.cmd == "export":
        print(export_dataset(args.dataset, args.out))
    elif args.cmd == "vopy":
        rows = run_vopy(args.algorithm, args.dataset, args.cone, args.epsilon, args.delta, args.noise_var, args.runs,
                        args.seed, args.out, args.L, args.conf_contraction, args.csv, args.record)
        print(f"{len(rows)} runs: mean samples {np.mean([r['samples'] for r in rows]):.1f}, "
              f"mean seconds {np.mean([r['seconds'] for r in rows]):.2f}")
    elif args.cmd == "spec":
        name = f"vopy_peer/{Path(args.out).stem}"
        Path(args.out).write_text(spec_toml(os.path.abspath(args.csv), args.cone, args.noise_var,
                                            json.loads(args.policy), args.seeds, args.horizon, name))
        print(args.out)
    elif args.cmd == "ours":
        print(json.dumps(run_ours(args.spec, args.out)))
    else:
        print(json.dumps({"vopy": summarize_vopy(_load_jsonl(args.vopy)), "ours": summarize_ours(args.ours)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
