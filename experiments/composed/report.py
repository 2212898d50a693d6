"""Beyond the papers: the corners of one problem composed (cone x objective x budget).

``build({"topk": DIR, "identification": DIR, "pac": DIR}, out_dir)`` reads the run directories of
``configs/composed/{topk_cones,identification_cones,pac_cones}.toml`` and writes ``report.md``,
``summary.json`` (their records, each ``setting`` extended with ``experiment``) and the figures:

- top-k slates (Gutowski et al.) under PDMOB's seven cones (Table 3) on the LLM leaderboard: the
  projected HV_last100 and alpha-regret of THV-UCB and six baselines;
- fixed-budget, cost-aware Pareto set identification (CoPSI, PSI-SR, EGE-SH, uniform) under the
  same cones: misidentification and budget spent against the budget ratio rho;
- fixed-confidence (epsilon, delta)-PAC identification (PaVeBa, Naive Elimination) under the same
  cones: samples to the stop, epsilon-F1, misidentification;
- the comparison with VOPy's own PaVeBa and Naive Elimination, when ``vopy_bench.json`` (written by
  ``mobandit bench --peers vopy``) lies next to this file.

No library or paper reports these combinations: the numbers stand on their own, with the checks of
the docs page "Cones and budgets" computed from them. Missing run directories are skipped. Run:
``python experiments/composed/report.py runs/composed/ experiments/composed``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import mobandit_jax as mb

HERE = Path(__file__).resolve().parent
RUNS = {"topk": "topk_cones", "identification": "identification_cones", "pac": "pac_cones"}
SLATE_BEST_WITHIN = 0.05  # THV-UCB's HV_last100 within 5% of the best method's, under every cone
DPI = 130
PROSE_CONSTANTS = (SLATE_BEST_WITHIN, 0.1, 0.05)  # and the VOPy comparison's epsilon, delta (settings)


def _fmt(v, digits=4) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"


def _cell(r) -> str:
    se = r["std"] / math.sqrt(r["n"]) if r["n"] > 1 else 0.0
    return f"{r['mean']:.4g} ± {se:.2g}"


def _policies(run) -> list:
    return list(dict.fromkeys(r["policy"] for r in run.records))


def _scenarios(run) -> list:
    return list(dict.fromkeys(r["setting"].get("scenario") for r in run.records))


def _value(run, policy, metric, **setting):
    r = run.record(policy, metric, **setting)
    return None if r is None else r["mean"]


def _axis(run, key) -> list:
    return sorted({r["setting"][key] for r in run.records if key in r["setting"]}, key=float)


def slate_section(run: mb.Results, out: Path) -> tuple:
    pols, lines, checks = _policies(run), [], []
    n = run.records[0]["n"]
    lines += ["## Top-k slates under the seven cones", "",
              f"Run: `configs/composed/topk_cones.toml` ({n} seeds). HV_last100 is the mean hypervolume of the "
              "last 100 slates on the projected means (reference point at the origin of the projections); "
              "mean ± standard error over seeds.", ""]
    for metric, title in (("hv_last100", "HV_last100 (higher is better)"),
                          ("alpha_regret_pos", "alpha-regret, positive part (lower is better)")):
        lines += [f"### {title}", "", "| cone | " + " | ".join(pols) + " |", "|---" * (len(pols) + 1) + "|"]
        for sc in _scenarios(run):
            lines.append(f"| {sc} | " + " | ".join(_cell(run.record(p, metric, scenario=sc)) for p in pols) + " |")
        lines.append("")
    for sc in _scenarios(run):
        hv = {p: _value(run, p, "hv_last100", scenario=sc) for p in pols}
        best = max(hv, key=hv.get)
        reg = {p: _value(run, p, "alpha_regret_pos", scenario=sc) for p in ("THV-UCB", "RandomK")}
        within = hv["THV-UCB"] >= (1 - SLATE_BEST_WITHIN) * hv[best]
        beats = reg["THV-UCB"] < reg["RandomK"]
        checks.append((f"slates, {sc}: THV-UCB's projected alpha-regret {reg['THV-UCB']:.4g} < RandomK's "
                       f"{reg['RandomK']:.4g}; its HV_last100 {hv['THV-UCB']:.4g} is within "
                       f"{SLATE_BEST_WITHIN:.0%} of the best ({best}, {hv[best]:.4g})", within and beats))
    return lines, checks


def identification_figure(run: mb.Results, out: Path, metric: str, fname: str, ylabel: str) -> str:
    scen, pols, rhos = _scenarios(run), _policies(run), _axis(run, "rho")
    cols = 4
    fig, axes = plt.subplots(math.ceil(len(scen) / cols), cols, figsize=(4 * cols, 3 * math.ceil(len(scen) / cols)),
                             squeeze=False, layout="constrained")
    for ax, sc in zip(axes.flat, scen, strict=False):
        for p in pols:
            ax.plot(rhos, [_value(run, p, metric, scenario=sc, rho=r) for r in rhos], marker="o", label=p)
        ax.set_xscale("log")
        ax.set_title(sc, fontsize=9)
        ax.set_xlabel("budget ratio rho")
        ax.set_ylabel(ylabel)
    for ax in list(axes.flat)[len(scen):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.savefig(out / fname, dpi=DPI)
    plt.close(fig)
    return fname


def identification_section(run: mb.Results, out: Path) -> tuple:
    pols, rhos, lines, checks = _policies(run), _axis(run, "rho"), [], []
    n = run.records[0]["n"]
    lines += ["## Fixed-budget, cost-aware identification under the seven cones", "",
              f"Run: `configs/composed/identification_cones.toml` ({n} seeds; a pull costs the model's size over "
              "the largest size). Misidentification `Pr(P_hat != P*_C)` against the cone-optimal set, and the "
              "fraction of the budget spent, mean ± standard error over seeds.", ""]
    lines += ["| cone | rho | " + " | ".join(f"{p} error" for p in pols) + " | " + " | ".join(
        f"{p} spent" for p in pols) + " |", "|---" * (2 + 2 * len(pols)) + "|"]
    for sc in _scenarios(run):
        for rho in rhos:
            lines.append(f"| {sc} | {rho} | " + " | ".join(
                _cell(run.record(p, "misidentification", scenario=sc, rho=rho)) for p in pols) + " | " + " | ".join(
                _fmt(_value(run, p, "budget_spent", scenario=sc, rho=rho), 3) for p in pols) + " |")
    lines += ["", "![](" + identification_figure(run, out, "misidentification", "identification_error.png",
                                                  "misidentification") + ")", ""]
    for sc in _scenarios(run):
        for p in pols:
            err = [_value(run, p, "misidentification", scenario=sc, rho=r) for r in rhos]
            span = f"{_fmt(err[0], 3)} at rho = {rhos[0]}, {_fmt(err[-1], 3)} at rho = {rhos[-1]}"
            if max(err) == 0.0:
                checks.append((f"identification, {sc}: {p}'s error is 0 at every budget", True))
            else:
                checks.append((f"identification, {sc}: {p}'s error falls with the budget ({span})", err[-1] < err[0]))
        sr, un = (_value(run, p, "misidentification", scenario=sc, rho=rhos[-1]) for p in ("PSI-SR", "Uniform"))
        checks.append((f"identification, {sc}: at rho = {rhos[-1]} PSI-SR's error {_fmt(sr, 3)} <= uniform's "
                       f"{_fmt(un, 3)}", sr <= un))
    return lines, checks


def pac_section(run: mb.Results, out: Path) -> tuple:
    pols, lines = _policies(run), []
    n = run.records[0]["n"]
    metrics = ("samples", "eps_f1", "misidentification", "returned", "stopped", "tau_over_lower_bound")
    lines += ["## Fixed-confidence identification under the seven cones", "",
              f"Run: `configs/composed/pac_cones.toml` ({n} seeds). Samples to the stop, the epsilon-F1 of the "
              "returned set, misidentification against the cone-optimal set, the returned set's size, and the "
              "fraction of runs whose rule fired before the round cap, and the samples over the lower bound "
              "`T*(mu) log(1/delta)` of the projected means (— where `T*` is not computed: 7 objectives; or the "
              "method has no delta); mean ± standard error over seeds. PaVeBa's "
              "guarantee is an epsilon-cover of the cone-optimal set (its returned set may hold arms within epsilon "
              "of it), which the epsilon-F1 scores; misidentification asks for the exact set.", ""]
    for p in pols:
        lines += [f"### {p}", "", "| cone | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
        for sc in _scenarios(run):
            cells = (run.record(p, m, scenario=sc) for m in metrics)
            lines.append(f"| {sc} | " + " | ".join(_cell(r) if r and not math.isnan(r["mean"]) else "—"
                                                   for r in cells) + " |")
        lines.append("")
    return lines, []


def vopy_section(path: Path) -> list:
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    rows = data.get("rows", [])
    if not rows:
        return []
    keys = list(rows[0])
    return (["## Against VOPy", "", data.get("about", ""), "", "| " + " | ".join(keys) + " |",
             "|---" * len(keys) + "|"] + ["| " + " | ".join(_fmt(r[k]) if isinstance(r[k], float) else str(r[k])
                                                       for k in keys) + " |" for r in rows] + [""])


def build(run_dirs: dict, out_dir) -> Path:
    """Write the composed report, figures and records from the run directories."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = {k: mb.Results.load(v) for k, v in run_dirs.items() if v and (Path(v) / "summary.json").exists()}
    records = [{**r, "setting": {"experiment": name, **r["setting"]}}
               for name, run in runs.items() for r in run.records]
    (out / "summary.json").write_text(json.dumps({"records": records}, indent=1))
    md = ["# Composed: cones, objectives and budgets beyond the three papers", "",
          "Each run below puts one paper's objective under another paper's order or budget: the cones of "
          "PDMOB (Table 3) on its LLM leaderboard (K = 42 models, 7 capabilities), with top-k slates "
          "(Gutowski et al.), cost-aware fixed-budget identification (Xue et al., Kone et al.) and "
          "fixed-confidence identification (PaVeBa, Naive Elimination). How a family reads a cone is on the "
          "docs page *Cones and budgets*.", ""]
    checks = []
    for key, section in (("topk", slate_section), ("identification", identification_section), ("pac", pac_section)):
        if key in runs:
            lines, found = section(runs[key], out)
            md += lines
            checks += found
    md += vopy_section(HERE / "vopy_bench.json")
    if checks:
        md += ["## Checks", ""] + [f"- [{'x' if ok else ' '}] {text}" for text, ok in checks] + [""]
    (out / "report.md").write_text("\n".join(md) + "\n")
    return out / "report.md"


if __name__ == "__main__":  # python experiments/composed/report.py [runs prefix] [out dir]
    import sys

    prefix = sys.argv[1] if len(sys.argv) > 1 else "runs/composed/"
    target = sys.argv[2] if len(sys.argv) > 2 else "experiments/composed"
    print(build({k: f"{prefix}{v}" for k, v in RUNS.items()}, target))
