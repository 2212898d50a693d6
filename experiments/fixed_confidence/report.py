"""Fixed-confidence Pareto set identification: sample complexity against log(1/delta), the error beside delta, and
the ratio to the lower bound.

``build({"random_gaussian": DIR, "cov_boost": DIR, "cone_costs": DIR}, out_dir)`` reads the run directories of
``configs/fixed_confidence/{random_gaussian,cov_boost,cone_costs}.toml`` and writes ``report.md``,
``summary.json`` (their records, each ``setting`` extended with ``experiment``) and ``sample_complexity.png``:

- Auer et al. (2016), APE (Kone et al. 2023), Track-and-Stop (Crepon et al. 2024) and PaVeBa (epsilon = 0) on
  three random Gaussian instances and on COV-BOOST, at delta in {0.1, 0.01, 0.001}: samples to the stop,
  misidentification beside delta, ``tau_over_lower_bound = samples / (T*(mu) log(1/delta))``;
- the methods under a three-row cone, with pulls that cost.

Checks: each method's error is at most delta plus three standard errors of a rate delta; APE needs fewer samples
than Auer et al. (the paper's comparison); every ratio is at least 1 (no method beats the lower bound; the
bound holds asymptotically, so this is a sanity check). Missing run directories are skipped. Run:
``python experiments/fixed_confidence/report.py runs/fixed_confidence/ experiments/fixed_confidence``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import mobandit_jax as mb

RUNS = {"random_gaussian": "random_gaussian", "cov_boost": "cov_boost", "cone_costs": "cone_costs"}
ERROR_SE = 3  # an error rate passes at delta + ERROR_SE standard errors of a rate delta
DPI = 130
METRICS = ("samples", "misidentification", "tau_over_lower_bound", "stopped", "cost")


def _cell(r) -> str:
    if r is None or r["mean"] is None or (isinstance(r["mean"], float) and math.isnan(r["mean"])):
        return "—"
    se = r["std"] / math.sqrt(r["n"]) if r["n"] > 1 else 0.0
    return f"{r['mean']:.4g} ± {se:.2g}"


class Run:
    """One ``mobandit run`` folder (:class:`mobandit_jax.Results`) read by policy, delta, metric and scenario."""

    def __init__(self, path):
        self.results = mb.Results.load(path)
        self.records = self.results.records

    def scenarios(self) -> list:
        return list(dict.fromkeys(r["setting"].get("scenario") for r in self.records))

    def policies(self) -> list:
        return list(dict.fromkeys(r["policy"] for r in self.records))

    def deltas(self) -> list:
        return sorted({r["params"]["delta"] for r in self.records if "delta" in r["params"]}, reverse=True)

    def get(self, policy, metric, delta, scenario):
        where = {"delta": delta} if scenario is None else {"delta": delta, "scenario": scenario}
        return self.results.record(policy, metric, **where)


def _figure(panels: list, out: Path) -> str:
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.2), squeeze=False, layout="constrained")
    for ax, (title, run, sc) in zip(axes.flat, panels, strict=False):
        ds = run.deltas()
        x = [math.log(1 / d) for d in ds]
        bound = None
        for p in run.policies():
            rows = [(run.get(p, "samples", d, sc), run.get(p, "tau_over_lower_bound", d, sc)) for d in ds]
            ax.plot(x, [s["mean"] for s, _ in rows], marker="o", label=p)
            if bound is None and rows[0][1] and rows[0][1]["mean"]:
                bound = [s["mean"] / (t["mean"] * xi) for (s, t), xi in zip(rows, x, strict=False)]  # T*(mu), any row
        if bound:
            ax.plot(x, [b * xi for b, xi in zip(bound, x, strict=False)], "k--", label="T*(mu) log(1/delta)")
        ax.set_yscale("log")
        ax.set_xlabel("log(1/delta)")
        ax.set_ylabel("samples to the stop")
        ax.set_title(title, fontsize=9)
    axes.flat[0].legend(fontsize=7)
    fig.savefig(out / "sample_complexity.png", dpi=DPI)
    plt.close(fig)
    return "sample_complexity.png"


def _section(name: str, run: Run) -> tuple:
    lines, checks = [], []
    n = run.records[0]["n"]
    lines += [f"## {name}", "", f"Run: `configs/fixed_confidence/{name}.toml` ({n} seeds); mean ± standard error "
              "over seeds. `misidentification` is the error rate `Pr(P_hat != P*)`, to read beside delta; "
              "`tau_over_lower_bound` is `samples / (T*(mu) log(1/delta))`; `stopped` the fraction of runs whose "
              "rule fired before the round cap.", ""]
    for sc in run.scenarios():
        if sc is not None:
            lines += [f"### {sc}", ""]
        lines += ["| method | delta | " + " | ".join(METRICS) + " |", "|---" * (len(METRICS) + 2) + "|"]
        for p in run.policies():
            for d in run.deltas():
                lines.append(f"| {p} | {d} | " + " | ".join(_cell(run.get(p, m, d, sc)) for m in METRICS) + " |")
        lines.append("")
        where = f"{name}{'' if sc is None else ', ' + sc}"
        for p in run.policies():
            for d in run.deltas():
                err = run.get(p, "misidentification", d, sc)["mean"]
                limit = d + ERROR_SE * math.sqrt(d * (1 - d) / n)
                checks.append((f"{where}: {p}'s error {err:.3g} <= delta = {d} (+ {ERROR_SE} se: {limit:.3g})",
                               err <= limit))
                ratio = run.get(p, "tau_over_lower_bound", d, sc)["mean"]
                if ratio is not None and not math.isnan(ratio):
                    checks.append((f"{where}: {p} at delta = {d} takes {ratio:.3g} times the lower bound (>= 1)",
                                   ratio >= 1))
        if {"APE", "Auer"} <= set(run.policies()):
            for d in run.deltas():
                ape, auer = (run.get(p, "samples", d, sc)["mean"] for p in ("APE", "Auer"))
                checks.append((f"{where}: at delta = {d} APE's samples {ape:.4g} < Auer et al.'s {auer:.4g}",
                               ape < auer))
    return lines, checks


def build(run_dirs: dict, out_dir) -> Path:
    """Write the fixed-confidence report, figure and records from the run directories."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = {k: Run(v) for k, v in run_dirs.items() if v and (Path(v) / "summary.json").exists()}
    records = [{**r, "setting": {"experiment": name, **r["setting"]}}
               for name, run in runs.items() for r in run.records]
    (out / "summary.json").write_text(json.dumps({"records": records}, indent=1))
    md = ["# Fixed-confidence Pareto set identification against log(1/delta)", "",
          "Auer et al. (AISTATS 2016, Algorithm 1), APE (Kone, Kaufmann & Richert, NeurIPS 2023), Track-and-Stop "
          "(Crepon, Garivier & Koolen, AISTATS 2024) and PaVeBa (Karagozlu et al. 2024, epsilon = 0), each with "
          "its authors' confidence radius (docs page *Fixed-confidence identification*). The lower bound is "
          "`T*(mu) log(1/delta)`, with the characteristic time `T*(mu)` of Gaussian objectives computed once per "
          "instance (within 1%). The papers plot these curves without tables of numbers, so the numbers below "
          "stand on their own.", ""]
    checks = []
    for name, run in runs.items():
        lines, found = _section(name, run)
        md += lines
        checks += found
    panels = [(f"{k}, {sc}" if sc else k, run, sc) for k, run in runs.items() if k != "cone_costs"
              for sc in run.scenarios()]
    if panels:
        md += ["![](" + _figure(panels, out) + ")", ""]
    if checks:
        md += ["## Checks", "", "| check | holds |", "|---|---|"]
        md += [f"| {text} | {'yes' if ok else 'NO'} |" for text, ok in checks] + [""]
    (out / "report.md").write_text("\n".join(md) + "\n")
    return out / "report.md"


if __name__ == "__main__":  # python experiments/fixed_confidence/report.py [runs prefix] [out dir]
    import sys

    prefix = sys.argv[1] if len(sys.argv) > 1 else "runs/fixed_confidence/"
    target = sys.argv[2] if len(sys.argv) > 2 else "experiments/fixed_confidence"
    print(build({k: f"{prefix}{v}" for k, v in RUNS.items()}, target))
