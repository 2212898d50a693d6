"""Reproduction report of PDMOB (preference-directed MO bandits), Section 4 and Appendix B.

``build({"llm": RUN_DIR, "assets": RUN_DIR}, out_dir)`` reads the run directories written by
``mobandit run configs/pdmob/llm.toml`` and ``configs/pdmob/assets.toml`` and writes
``report.md``, ``summary.json`` (the engine records of both runs plus the derived per-round
regret records) and the figures:

- Figure 3: cumulative gap-weighted regret ``R^gap_t`` (mean +- 1 std over seeds), seven LLM settings;
- Table 1: main objective (up), relaxable objective (down), optimal-selection ratio (up) for the
  four real-world LLM scenarios, mean +- std over seeds, beside the paper's values;
- Figure 4: 100-round moving averages of the played arm's true reward per objective, averaged
  within the preferred / moderate / relaxable groups of each scenario's ``W``;
- Table 2: averaged gap-weighted regret ``R^gap_T / T`` per mandate (mean +- std over seeds),
  ranks, average rank, Welch and paired t-tests of each baseline against PrefUCB;
- Figure 5: cumulative gap-weighted regret for the eight mandates; Figures 6-7: mandate trends.

The engine records cumulative sums at checkpoints, so a moving average over ``w`` rounds is a
difference of cumulative values divided by the rounds between checkpoints (:func:`moving_average`, the
package's :func:`~mobandit_jax.analysis.trailing.trailing_mean`).
"""
from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np

import mobandit_jax as mb
from mobandit_jax.analysis.trailing import trailing_mean
from mobandit_jax.kernels import cone_optimal_mask, pareto_front_mask, preference_gaps
from mobandit_jax.problems import llm_leaderboard as llm
from mobandit_jax.problems import nyse

POLICIES = ("PrefUCB", "ScalarizedUCB_r.r.", "ParetoUCB", "GT-PF")
# Significance level of the t-tests against PrefUCB (Table 2 marks and the count in the differences).
P_LEVEL = 0.05
# Numbers the prose may state that are settings of the readings, not results (tests/papers/test_report_prose.py).
PROSE_CONSTANTS = (P_LEVEL,)

# The paper's numbers (Tables 1, 2, 3 and 5 as printed) live in paper_tables.json next to this file.
PAPER = json.loads((Path(__file__).resolve().parent / "paper_tables.json").read_text())
REAL_WORLD = tuple(PAPER["table1"]["scenarios"])
# Table 1: {metric: {policy: [(mean, std) per REAL_WORLD scenario]}}.
PAPER_TABLE1 = {m: {p: [tuple(x) for x in v] for p, v in d.items()} for m, d in PAPER["table1"]["values"].items()}
# Table 2: mandate -> (PrefUCB, ScalarizedUCB_r.r., ParetoUCB, GT-PF) as (mean, std).
PAPER_TABLE2 = {k: [tuple(x) for x in v] for k, v in PAPER["table2"]["values"].items()}
PAPER_AVG_RANK = tuple(PAPER["table2"]["average_rank"])
# Main (prioritised) and relaxable objective per real-world scenario (Table 3 descriptions).
SCENARIO_ROLES = PAPER["table3"]["roles"]


def scenario_matrices() -> dict:
    """The seven preference matrices W of Table 3, as printed (rows over the 7 capabilities)."""
    return {k: np.array(W, float) for k, W in PAPER["table3"]["scenarios"].items()}


def mandate_matrices() -> dict:
    """The eight mandates' ``W in R^{3x7}`` of Table 5, as printed (columns: CWG SR MDD Sortino Alpha TO CR)."""
    return {k: np.array(W, float) for k, W in PAPER["table5"]["mandates"].items()}


# ---------------------------------------------------------------------------- objective groups


def preference_levels(W) -> dict:
    """Group objectives into preferred / moderate / relaxable by their weights in ``W`` (Fig. 4).

    Relaxable: some row gives a negative weight. Preferred: not relaxable and holding the largest
    positive weight of some row (or the positive weight of a row that also relaxes something).
    Moderate: every other objective with a positive weight. Objectives with zero weight everywhere
    are left out.
    """
    W = np.asarray(W, float)
    relax = set(np.flatnonzero((W < 0).any(0)).tolist())
    pref = set()
    for row in W:
        pos = row > 0
        if not pos.any():
            continue
        if (row < 0).any():
            pref |= set(np.flatnonzero(pos).tolist())
        else:
            pref |= set(np.flatnonzero(row == row.max()).tolist())
    pref -= relax
    used = set(np.flatnonzero((W != 0).any(0)).tolist())
    moderate = used - pref - relax
    return {k: sorted(v) for k, v in (("preferred", pref), ("moderate", moderate), ("relaxable", relax))}


def mandate_levels(W) -> dict:
    """Group objectives for Figures 6-7 by their total weight ``s_j = sum_k W[k, j]`` over the rows.

    Relaxable: ``s_j < 0``; preferred: ``s_j >= max(s) / 2``; moderate: ``0 < s_j < max(s) / 2``;
    objectives with ``s_j = 0`` are left out. (The paper does not state its grouping.)
    """
    total = np.asarray(W, float).sum(0)
    top = total.max()
    return {
        "preferred": np.flatnonzero(total >= top / 2).tolist() if top > 0 else [],
        "moderate": np.flatnonzero((total > 0) & (total < top / 2)).tolist(),
        "relaxable": np.flatnonzero(total < 0).tolist(),
    }


# --------------------------------------------------------------------- data-driven W (App. B.3)


def data_driven_W(rewards, pattern, cap: float = 0.3) -> np.ndarray:
    """Appendix B.3 steps 2-3: build ``W`` from training rewards ``(N, 7)`` and a sign ``pattern (M, 7)``.

    Step 2: the positive entries of row ``k`` are proportional to the training variance of those
    objectives and sum to 1. Step 3: each negative entry ``j`` is ``-min(cap, |beta_j|)``, with
    ``beta_j`` the least-squares slope of the row's positive composite ``sum_i w_i r_i`` on ``r_j``
    (how strongly the mandate's primary score co-moves with the penalised objective).
    """
    R = np.asarray(rewards, float)
    pattern = np.sign(np.asarray(pattern, float))
    if R.ndim != 2 or R.shape[1] != pattern.shape[1]:
        raise ValueError(f"rewards shape {R.shape} does not match pattern shape {pattern.shape}")
    var = R.var(0)
    W = np.zeros_like(pattern)
    for k, row in enumerate(pattern):
        pos = row > 0
        if not pos.any():
            raise ValueError(f"pattern row {k} has no positive entry: {row.tolist()}")
        tot = var[pos].sum()
        W[k, pos] = var[pos] / tot if tot > 0 else 1.0 / pos.sum()
        composite = R[:, pos] @ W[k, pos]
        for j in np.flatnonzero(row < 0):
            vj = R[:, j].var()
            beta = np.mean((R[:, j] - R[:, j].mean()) * (composite - composite.mean())) / vj if vj > 0 else 0.0
            W[k, j] = -min(cap, abs(beta))
    return W


def data_driven_mandates(table, cap: float = 0.3) -> dict:
    """Appendix B.3 applied to every mandate on the training partition of ``table`` (sign patterns from Table 5)."""
    R = table.rewards[: table.train_days].reshape(-1, table.rewards.shape[-1])
    return {k: data_driven_W(R, W, cap) for k, W in mandate_matrices().items()}


# ----------------------------------------------------------------------------------- run files


def curve(run, label: str, scenario: str, metric: str) -> np.ndarray:
    """Cumulative curve ``(seeds, checkpoints)`` of ``metric`` for policy ``label`` at ``scenario``, in float64."""
    return np.asarray(run.curve(label, metric, scenario=scenario), float)


def scenario_names(run) -> list:
    """Scenario names in config order."""
    return [s.name for s in run.spec.scenarios] if run.spec is not None else []


def load_run(run_dir) -> mb.Results:
    """A run folder read back (:meth:`mobandit_jax.Results.load`); it must hold its curves."""
    if not (Path(run_dir) / "curves.npz").is_file():
        raise FileNotFoundError(f"run directory {run_dir} has no curves.npz; run `mobandit run` first")
    return mb.Results.load(run_dir)


# ----------------------------------------------------------------------------------- statistics


def moving_average(cum, checkpoints, window: int) -> np.ndarray:
    """Trailing ``window``-round average at each checkpoint from cumulative sums ``(S, C)``: at checkpoint ``c_i``,
    ``(S_i - S_j) / (c_i - c_j)`` with ``c_j`` the latest checkpoint (or round 0) at or before ``c_i - window``
    (:func:`mobandit_jax.analysis.trailing.trailing_mean`, ``start="checkpoint"``)."""
    return trailing_mean(cum, checkpoints, window, start="checkpoint")


def welch_test(a, b) -> float:
    """Two-sided Welch t-test p-value (scipy.stats.ttest_ind, unequal variances); 1.0 if degenerate."""
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    if np.ptp(a) == 0 and np.ptp(b) == 0:  # no variance in either sample
        return 0.0 if a.mean() != b.mean() else 1.0
    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def paired_test(a, b) -> float:
    """Two-sided paired t-test p-value over common seeds (scipy.stats.ttest_rel); 1.0 if degenerate."""
    from scipy import stats

    d = np.asarray(a, float) - np.asarray(b, float)
    if np.ptp(d) <= 1e-12 * max(1.0, float(np.abs(d).max())):  # constant difference: no variance
        return 0.0 if abs(d.mean()) > 1e-12 else 1.0
    return float(stats.ttest_rel(a, b).pvalue)


def ranks(values, decimals: int = 3) -> np.ndarray:
    """Competition ranks (1 = lowest) of values rounded to ``decimals`` (ties share the best rank)."""
    from scipy import stats

    return stats.rankdata(np.round(np.asarray(values, float), decimals), method="min").astype(int)


def _ms(x, digits: int = 3) -> str:
    x = np.asarray(x, float)
    return f"{x.mean():.{digits}f} ± {x.std(ddof=1) if x.size > 1 else 0.0:.{digits}f}"


def _pair(ms) -> str:
    return f"{ms[0]:.3f} ± {ms[1]:.3f}"


def per_seed_final(run: mb.Results, label: str, scenario: str, metric: str, per_round: bool = False) -> np.ndarray:
    """Per-seed value at the horizon: the cumulative sum, or divided by the rounds (``per_round``)."""
    cum = curve(run, label, scenario, metric)[:, -1]
    return cum / run.checkpoints[-1] if per_round else cum


# ------------------------------------------------------------------------------------- tables


def table1(run: mb.Results) -> dict:
    """Per (metric, policy, scenario): per-seed averages of the main/relaxable reward and ratio."""
    out = {"main": {}, "relaxable": {}, "ratio": {}}
    for label in POLICIES:
        for m in out:
            out[m][label] = []
        for sc in REAL_WORLD:
            roles = SCENARIO_ROLES[sc]
            jm, jr = llm.CAPABILITIES.index(roles["main"]), llm.CAPABILITIES.index(roles["relaxable"])
            out["main"][label].append(per_seed_final(run, label, sc, f"reward_{jm}", True))
            out["relaxable"][label].append(per_seed_final(run, label, sc, f"reward_{jr}", True))
            out["ratio"][label].append(per_seed_final(run, label, sc, "optimal_selection_ratio", True))
    return out


def table2(run: mb.Results, scenarios=None) -> list:
    """Rows of Table 2: per mandate, per policy ``R^gap_T / T`` per seed, ranks and t-test p-values."""
    rows = []
    for sc in scenarios or scenario_names(run):
        vals = [per_seed_final(run, lab, sc, "regret_gap", True) for lab in POLICIES]
        means = [v.mean() for v in vals]
        rows.append({
            "scenario": sc,
            "values": vals,
            "rank": ranks(means),
            "welch": [None] + [welch_test(v, vals[0]) for v in vals[1:]],
            "paired": [None] + [paired_test(v, vals[0]) for v in vals[1:]],
        })
    return rows


def _mark(p, worse: bool) -> str:
    return "•" if (p is not None and p < P_LEVEL and worse) else "∘"


def _table2_md(rows, paper: dict | None) -> str:
    head = "| Scenario | " + " | ".join(POLICIES) + " |\n|---|" + "---|" * len(POLICIES) + "\n"
    body = ""
    for r in rows:
        cells = []
        for i, _lab in enumerate(POLICIES):
            c = f"{_ms(r['values'][i])} ({r['rank'][i]})"
            if i:
                worse = r["values"][i].mean() > r["values"][0].mean()
                c += f" {_mark(r['welch'][i], worse)}/{_mark(r['paired'][i], worse)}"
            if r["rank"][i] == 1:
                c = f"**{c}**"
            cells.append(c)
        body += f"| {r['scenario']} | " + " | ".join(cells) + " |\n"
        if paper and r["scenario"] in paper:
            pr = paper[r["scenario"]]
            prk = ranks([m for m, _ in pr])
            body += "| *paper* | " + " | ".join(f"*{_pair(pr[i])} ({prk[i]})*" for i in range(4)) + " |\n"
    avg = np.mean([r["rank"] for r in rows], axis=0)
    body += "| Avg. rank (ours) | " + " | ".join(f"{a:.2f}" for a in avg) + " |\n"
    if paper:
        body += "| *Avg. rank (paper)* | " + " | ".join(f"*{a:.2f}*" for a in PAPER_AVG_RANK) + " |\n"
    return head + body


# ------------------------------------------------------------------------------------- figures


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


COLORS = {"PrefUCB": "tab:red", "ScalarizedUCB_r.r.": "tab:blue", "ParetoUCB": "tab:green", "GT-PF": "tab:gray"}
DPI = 150  # print quality; every font at least 9 pt
FONT = 10
REGRET_LABEL = {"regret_gap": "cumulative gap-weighted regret\nR^gap_t (normalised reward units)"}


def _image(alt: str, path) -> str:
    """The markdown of a drawn figure ``path``, a paragraph; nothing for an undrawn one (``None``)."""
    return "" if path is None else f"![{alt}]({Path(path).name})\n\n"


def regret_figure(run: mb.Results, scenarios, path, metric: str = "regret_gap", ncols: int = 4,
                  draw: bool = True) -> Path | None:
    """Cumulative ``metric`` curves, mean +- 1 std over seeds, one panel per scenario (``draw=False``: nothing is
    drawn, ``None`` returned)."""
    if not draw:
        return None
    plt = _plt()
    n = len(scenarios)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 3.2 * nrows), squeeze=False)
    x = run.checkpoints
    for ax, sc in zip(axes.flat, scenarios, strict=False):
        for lab in POLICIES:
            y = curve(run, lab, sc, metric)
            m, s = y.mean(0), y.std(0)
            ax.plot(x, m, color=COLORS[lab], label=lab)
            ax.fill_between(x, m - s, m + s, color=COLORS[lab], alpha=0.2)
        ax.set_title(sc, fontsize=FONT)
        ax.set_xlabel("round t", fontsize=FONT)
        ax.set_ylabel(REGRET_LABEL.get(metric, metric), fontsize=FONT)
        ax.tick_params(labelsize=9)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def trend_figure(run: mb.Results, scenarios, matrices: dict, path, names=None, window: int = 100,
                 levels=preference_levels, draw: bool = True) -> Path | None:
    """Figure 4/6/7: ``window``-round moving average of the played arm's true reward, per group (``draw=False``:
    nothing is drawn, ``None`` returned)."""
    if not draw:
        return None
    plt = _plt()
    groups = ("preferred", "moderate", "relaxable")
    fig, axes = plt.subplots(len(scenarios), 3, figsize=(15, 3.4 * len(scenarios)), squeeze=False)
    x = run.checkpoints
    for row, sc in zip(axes, scenarios, strict=False):
        groups_of = levels(matrices[sc])
        for ax, g in zip(row, groups, strict=False):
            objs = groups_of[g]
            if not objs:
                ax.set_title(f"{sc}: no {g} objective", fontsize=FONT)
                ax.axis("off")
                continue
            for lab in POLICIES:
                ma = np.mean([moving_average(curve(run, lab, sc, f"reward_{j}"), x, window) for j in objs], axis=0)
                m, s = ma.mean(0), ma.std(0)
                ax.plot(x, m, color=COLORS[lab], label=lab, lw=1.2)
                ax.fill_between(x, m - s, m + s, color=COLORS[lab], alpha=0.15)
            label = ", ".join(names[j] for j in objs) if names else str(objs)
            ax.set_title(textwrap.fill(f"{sc} — {g}: {label}", 52), fontsize=FONT)
            ax.set_xlabel("round t", fontsize=FONT)
            mean_of = "mean of the " if len(objs) > 1 else ""
            ax.set_ylabel(f"{mean_of}true reward,\n{window}-round avg. (0-1)", fontsize=FONT)
            ax.tick_params(labelsize=9)
    axes[0, 0].legend(fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


# -------------------------------------------------------------------------------------- report


def derived_records(run: mb.Results, experiment: str) -> list:
    """Engine-format records of ``regret_gap / T`` (averaged gap-weighted regret) per policy and scenario."""
    out = []
    for lab in POLICIES:
        for _i, g in enumerate(run.grid[lab]):
            sc = g.setting.get("scenario")
            v = per_seed_final(run, lab, sc, "regret_gap", True)
            out.append({"policy": lab, "params": g.params, "setting": {**g.setting, "experiment": experiment},
                        "metric": "regret_gap_per_round", "mean": float(v.mean()),
                        "std": float(v.std(ddof=1)) if v.size > 1 else 0.0, "n": int(v.size)})
    return out


def optimal_sets(run: mb.Results) -> list:
    """Per LLM setting: ``(name, C-optimal models, of them Pareto-optimal, share of the Pareto set that is
    C-optimal, GT-PF's per-seed optimal-selection ratio)``; the share is GT-PF's expected ratio."""
    _, table, _ = llm.arm_table()
    pareto = np.asarray(pareto_front_mask(table))
    rows = []
    for sc, W in scenario_matrices().items():
        c = np.asarray(cone_optimal_mask(table, W))
        rows.append((sc, int(c.sum()), int(c[pareto].sum()), float(c[pareto].mean()),
                     per_seed_final(run, "GT-PF", sc, "optimal_selection_ratio", True)))
    return rows


def _llm_section(run: mb.Results, out: Path, draw: bool = True) -> str:
    scen = scenario_names(run)
    f3 = regret_figure(run, scen, out / "figure3_llm_regret.png", draw=draw)
    f4 = trend_figure(run, list(REAL_WORLD), scenario_matrices(), out / "figure4_llm_trends.png",
                      names=llm.CAPABILITIES, draw=draw)
    names, table, sizes = llm.arm_table()
    s = "## 1. LLM selective ensemble (Section 4.1)\n\n"
    s += (f"K = {table.shape[0]} models x d = 7 capabilities, Beta feedback (c = 1), "
          f"T = {int(run.checkpoints[-1])}, {curve(run, POLICIES[0], scen[0], 'regret_gap').shape[0]} seeds. "
          "Arm table: `mobandit_jax/problems/llm_leaderboard.py` (MMLU-PRO, MATH Lvl 5, BBH, GPQA, IFEval, "
          "MUSR and -log size, min-max normalised over the 42 models with the highest mean v2 score).\n\n")
    s += (f"Optimal sets on our table: the standard Pareto set has {int(np.asarray(pareto_front_mask(table)).sum())} "
          f"of {table.shape[0]} models. GT-PF plays uniformly on it, so its expected optimal-selection ratio is "
          "the share of the Pareto set that is C-optimal:\n\n")
    s += ("| Setting | Pareto C-optimal models | of them Pareto-optimal | share of the Pareto set "
          "(GT-PF's expected ratio) | GT-PF's measured ratio (mean ± std over seeds) |\n|---|---|---|---|---|\n")
    for sc, n_c, n_cp, share, measured in optimal_sets(run):
        s += f"| {sc} | {n_c} | {n_cp} | {share:.3f} | {_ms(measured)} |\n"
    s += "\n"
    s += "### Figure 3 — cumulative gap-weighted regret\n\n" + _image("Figure 3", f3)
    s += "Final cumulative gap-weighted regret R^gap_T (mean ± std over seeds; lower is better):\n\n"
    s += "| Setting | " + " | ".join(POLICIES) + " |\n|---|" + "---|" * 4 + "\n"
    all_ranks = []
    for sc in scen:
        vals = [per_seed_final(run, lab, sc, "regret_gap") for lab in POLICIES]
        rk = ranks([v.mean() for v in vals], 1)
        all_ranks.append(rk)
        cells = (f"**{_ms(v, 1)} ({r})**" if r == 1 else f"{_ms(v, 1)} ({r})" for v, r in zip(vals, rk, strict=True))
        s += f"| {sc} | " + " | ".join(cells) + " |\n"
    s += "| Avg. rank | " + " | ".join(f"{a:.2f}" for a in np.mean(all_ranks, axis=0)) + " |\n"
    t1 = table1(run)
    s += "\n### Table 1 — real-world scenarios (ours, mean ± std over seeds; *paper* in italics)\n\n"
    s += "| Performance | Method | " + " | ".join(REAL_WORLD) + " |\n|---|---|" + "---|" * 4 + "\n"
    titles = {"main": "Main objective (↑)", "relaxable": "Relaxable objective (↓)",
              "ratio": "Optimal selection ratio (↑)"}
    for m, title in titles.items():
        best = []
        for j in range(4):
            means = [t1[m][lab][j].mean() for lab in POLICIES]
            best.append(POLICIES[int(np.argmin(means) if m == "relaxable" else np.argmax(means))])
        for lab in ("ScalarizedUCB_r.r.", "ParetoUCB", "GT-PF", "PrefUCB"):
            cells = [(f"**{_ms(t1[m][lab][j])}**" if best[j] == lab else _ms(t1[m][lab][j])) +
                     f" *({_pair(PAPER_TABLE1[m][lab][j])})*" for j in range(4)]
            s += f"| {title} | {lab} | " + " | ".join(cells) + " |\n"
    s += ("\nMain / relaxable objectives (Table 3 descriptions): " + "; ".join(
        f"{k}: {v['main']} / {v['relaxable']}" for k, v in SCENARIO_ROLES.items()) + ".\n")
    s += "\n"
    s += ("### Figure 4 — sub-objective trends (100-round moving average; band: ±1 std over seeds)\n\n"
          + _image("Figure 4", f4) +
          "Groups per scenario (from W): relaxable = some row puts a negative weight on it; preferred = "
          "the largest weight of a row (or positive in a row that relaxes something); moderate = the rest "
          "with a positive weight.\n\n")
    return s


def _assets_section(run: mb.Results, out: Path, draw: bool = True) -> str:
    scen = scenario_names(run)
    f5 = regret_figure(run, scen, out / "figure5_assets_regret.png", draw=draw)
    Ws = mandate_matrices()
    f6 = trend_figure(run, scen[:4], Ws, out / "figure6_assets_trends.png", names=nyse.OBJECTIVES, window=100,
                      levels=mandate_levels, draw=draw)
    f7 = trend_figure(run, scen[4:], Ws, out / "figure7_assets_trends.png", names=nyse.OBJECTIVES, window=100,
                      levels=mandate_levels, draw=draw)
    rows = table2(run, scen)
    tab = nyse.reward_table()
    bt = nyse.strategies_backtest()
    wealth = np.prod(1 + bt.returns, 0)
    s = "## 2. Online asset allocation on NYSE(O) (Section 4.2)\n\n"
    s += (f"K = 10 strategies, 7 objectives, T = {int(run.checkpoints[-1])} days, "
          f"{rows[0]['values'][0].size} seeds (random cyclic start day per seed). "
          "Environment: `mobandit_jax/problems/nyse.py`.\n\n")
    s += "Final wealth of each base strategy over the 5,651 days (no transaction costs):\n\n"
    s += "| " + " | ".join(tab.names) + " |\n|" + "---|" * len(tab.names) + "\n"
    s += "| " + " | ".join(f"{w:.3g}" for w in wealth) + " |\n\n"
    s += "Mean normalised reward per strategy (the regret reference, average over all days):\n\n"
    s += "| strategy | " + " | ".join(nyse.OBJECTIVES) + " |\n|---|" + "---|" * 7 + "\n"
    for name, row in zip(tab.names, tab.rewards.mean(0), strict=False):
        s += f"| {name} | " + " | ".join(f"{v:.3f}" for v in row) + " |\n"
    means = tab.rewards.mean(0)
    s += "\nPareto C-optimal strategies per mandate: " + "; ".join(
        f"{k}: {', '.join(n for n, o in zip(tab.names, np.asarray(cone_optimal_mask(means, W)), strict=False) if o)}"
        for k, W in Ws.items()) + ".\n\n"
    s += ("Preference gaps of the strategies per mandate on these means (a strategy's gap is its per-round "
          "gap-weighted regret): a policy's averaged regret R^gap_T / T lies between 0 and the mandate's largest "
          "gap, and uniform play's is the mean gap over the ten strategies. The paper's averaged regrets (Table 2) "
          "beside them:\n\n")
    s += ("| Mandate | largest gap (strategy) | mean gap (uniform play) | paper's averaged regrets "
          "(lowest–highest of the four policies) |\n|---|---|---|---|\n")
    for k, g in mandate_gaps(means).items():
        paper = [m for m, _ in PAPER_TABLE2[k]]
        s += (f"| {k} | {g.max():.3f} ({tab.names[int(np.argmax(g))]}) | {g.mean():.3f} | "
              f"{min(paper):.3f}–{max(paper):.3f} |\n")
    s += "\n"
    s += "### Table 2 — averaged gap-weighted regret R^gap_T / T (mean ± std over seeds, rank)\n\n"
    s += ("Marks after each baseline: Welch t-test / paired t-test against PrefUCB over the seeds "
          f"(• significantly worse than PrefUCB at p < {P_LEVEL}, ∘ otherwise). *Paper* rows in italics.\n\n")
    s += _table2_md(rows, PAPER_TABLE2)
    wins = sum(int(r["rank"][0] == 1) for r in rows)
    s += f"\nPrefUCB ranks first (ties included) in {wins} of {len(rows)} mandates.\n\n"
    s += "### Figure 5 — cumulative gap-weighted regret\n\n" + _image("Figure 5", f5)
    s += ("### Figures 6-7 — sub-objective trends (100-round moving average)\n\n" + _image("Figure 6", f6)
          + _image("Figure 7", f7) +
          "Groups per mandate (`mandate_levels` in `experiments/pdmob/report.py`, total weight s_j over the three "
          "rows): relaxable "
          "s_j < 0, preferred s_j >= max(s)/2, moderate in between.\n\n")
    dd = data_driven_mandates(tab)
    s += "### Data-driven W (Appendix B.3) versus Table 5\n\n"
    s += ("`data_driven_W` (`experiments/pdmob/report.py`): positive weights proportional to the training variance "
          "of the row's "
          "primary objectives (summing to 1), penalties `-min(0.3, |beta|)` from the slope of the row's "
          "primary composite on the penalised objective; sign pattern per row taken from Table 5.\n\n")
    s += "| Mandate | max abs diff | mean abs diff (non-zero entries) |\n|---|---|---|\n"
    for k, W in Ws.items():
        nz = W != 0
        s += f"| {k} | {np.abs(dd[k] - W).max():.3f} | {np.abs(dd[k] - W)[nz].mean():.3f} |\n"
    s += "\n"
    return s


def _avg_ranks(run: mb.Results, scenarios) -> np.ndarray:
    vals = [[per_seed_final(run, lab, sc, "regret_gap").mean() for lab in POLICIES] for sc in scenarios]
    return np.mean([ranks(v, 6) for v in vals], axis=0)


def _llm_differences(run: mb.Results) -> str:
    names, table, _ = llm.arm_table()
    pareto = np.asarray(pareto_front_mask(table))
    real = [row for row in optimal_sets(run) if row[0] in REAL_WORLD]
    t1 = table1(run)
    relax_wins = [sc for j, sc in enumerate(REAL_WORLD)
                  if np.argmin([t1["relaxable"][lab][j].mean() for lab in POLICIES]) != 0]
    std_scen = "Standard" if "Standard" in scenario_names(run) else None
    avg = _avg_ranks(run, scenario_names(run))
    s = "### What differs from the paper (LLM), and why\n\n"
    s += ("- **Data.** The paper's 42 x 7 table is not public; ours maps six real Open LLM Leaderboard v2 "
          "benchmarks and a size-based speed proxy onto the seven capabilities (module docstring of "
          "`llm_leaderboard.py`). Capabilities are strongly correlated on real models (larger models are "
          "better on every benchmark and slower).\n")
    s += (f"- **Optimal sets.** {int(pareto.sum())} of {len(names)} models are Pareto-optimal; the real-world cones "
          f"keep {', '.join(str(r[1]) for r in real)} C-optimal models ({', '.join(r[0] for r in real)}). With "
          "negative weights the cone does not contain the positive orthant, so a C-optimal model need not be "
          "Pareto-optimal. GT-PF plays uniformly on the Pareto set, so its optimal-selection ratio is the share "
          "of the Pareto set that is C-optimal (optimal-set table above: "
          f"{', '.join(f'{r[3]:.3f}' for r in real)}; measured {', '.join(f'{r[4].mean():.3f}' for r in real)}), "
          "far below the paper's ~.6: its table evidently had most Pareto-optimal models C-optimal.\n")
    if relax_wins:
        s += (f"- **Relaxable objective.** In {', '.join(relax_wins)} a baseline plays a lower relaxable "
              "objective than PrefUCB: on our table the C-optimal models are strong overall, so a cone that "
              "allows trading the relaxable objective does not force it low.\n")
    s += ("- **Spread in Table 1.** The paper's ± on rewards (.14-.24) looks like the spread of per-round "
          "rewards; ours is the spread over seeds of each seed's T-round average (the engine records "
          "cumulative sums at checkpoints, not per-round values).\n")
    if std_scen:
        g = [per_seed_final(run, lab, std_scen, "regret_gap").mean() for lab in POLICIES]
        s += (f"- **Standard (W = I7).** GT-PF samples the Pareto set, which is P*_C for W = I, so its regret is "
              f"{g[3]:.1f}. The paper says PrefUCB matches ParetoUCB here; we measure {g[0]:.1f} (PrefUCB) vs "
              f"{g[2]:.1f} (ParetoUCB); section 3 isolates the cause.\n")
    s += ("- **Average rank over the settings above** (gap-weighted regret): " +
          ", ".join(f"{lab} {a:.2f}" for lab, a in zip(POLICIES, avg, strict=False)) + ".\n\n")
    return s


def mandate_gaps(means) -> dict:
    """``{mandate: preference gap of each strategy}`` on the mean rewards ``means (K, 7)`` (the regret reference)."""
    return {k: np.asarray(preference_gaps(means, W)) for k, W in mandate_matrices().items()}


def _assets_differences(run: mb.Results) -> str:
    tab = nyse.reward_table()
    means = tab.rewards.mean(0)
    gaps = mandate_gaps(means)
    worst = max(gaps, key=lambda k: gaps[k].max())
    paper = {k: np.array([m for m, _ in PAPER_TABLE2[k]]) for k in gaps}
    out_of_reach = sum(int((paper[k] > gaps[k].max()).sum()) for k in gaps)
    rows = table2(run, scenario_names(run))
    avg = np.mean([r["rank"] for r in rows], axis=0)
    sig = sum(int(p is not None and p < P_LEVEL and r["values"][i].mean() > r["values"][0].mean())
              for r in rows for i, p in enumerate(r["welch"]) if i)
    n_pareto = int(np.asarray(pareto_front_mask(means)).sum())
    s = "### What differs from the paper (assets), and why\n\n"
    s += ("- **Strategies and rewards.** The paper names only Uniform Buy-and-Hold and Risk Parity among its ten "
          "strategies and gives neither the reward window nor the normalisation. Ours: UBAH, UCRP, "
          "inverse-volatility risk parity, best-so-far, momentum, long-only minimum variance, EG, Anticor, "
          f"OLMAR, PAMR; a {nyse.WINDOW}-day trailing window; 1 %/99 % quantile min-max on the training "
          f"partition (first {tab.train_days} days); MDD and TO inverted. UBAH, UCRP, EG and PAMR final "
          "wealths agree with the values usually reported for NYSE(O); Anticor and OLMAR depend on "
          "implementation details (portfolio drift, warm-up).\n")
    lo, hi = min(v.min() for v in paper.values()), max(v.max() for v in paper.values())
    s += (f"- **Scale of Table 2.** The paper's averaged regrets ({lo:.2f}-{hi:.1f}) mostly cannot arise on our "
          "instance: a policy's averaged regret is at most the largest preference gap under its mandate, and "
          f"{out_of_reach} of the paper's {sum(v.size for v in paper.values())} values exceed it (preference-gap "
          f"table above; the largest gap under any mandate is {gaps[worst].max():.3f}, {worst}). The mean "
          f"gap over the ten strategies, the averaged regret of uniform play, is "
          f"{min(g.mean() for g in gaps.values()):.3f}-{max(g.mean() for g in gaps.values()):.3f}. The comparison "
          "is by rank.\n")
    s += ("- **Ranks.** Average rank: " + ", ".join(f"{lab} {a:.2f}" for lab, a in zip(POLICIES, avg, strict=False)) +
          f" (paper: {', '.join(f'{lab} {a:.2f}' for lab, a in zip(POLICIES, PAPER_AVG_RANK, strict=False))}). "
          f"{n_pareto} of the 10 strategies are Pareto-optimal, so GT-PF, uniform on that set, is close to "
          "uniform play" + ("; here ParetoUCB ranks below GT-PF, the reverse of the paper" if avg[2] > avg[3] else "")
          + f". Baselines significantly worse than PrefUCB (Welch, p < {P_LEVEL}): {sig} of {3 * len(rows)} "
          "comparisons.\n")
    s += ("- **Trials.** A pure replay would make the deterministic index policies identical across trials; each "
          "trial starts the day sequence at a random day (cyclic wrap-around), so with T = 5,651 every trial "
          "sees every day once. The paper does not say how its trials differ.\n")
    s += ("- **Mandates.** Table 5 is used exactly as printed. Appendix B.3 (`data_driven_W`) needs to know "
          "which objectives each row treats as primary or penalised, which the paper does not list; we take "
          "the sign pattern from Table 5 and compute the magnitudes from the training data (data-driven W table "
          "above): the signs and the single-objective rows (weight 1) match, the variance ratios do not.\n")
    s += ("- **Figures 4, 6, 7.** Bands are ±1 std over seeds of the moving average, not the per-round true "
          "rewards shaded in the paper; the paper gives no grouping rule for the mandates.\n\n")
    return s


# The identity ablation: (label in configs/pdmob/identity_ablation.toml, index, selection rule).
ABLATION = (("PrefUCB", "KL-UCB", "max-min"), ("PrefUCB (Pareto UCB1 radius)", "Pareto UCB1", "max-min"),
            ("ParetoUCB", "Pareto UCB1", "uniform on optimistic front"),
            ("ParetoUCB (KL-UCB bounds)", "KL-UCB", "uniform on optimistic front"),
            ("GT-PF", "oracle", "uniform on true Pareto set"))


def ablation_finals(run: mb.Results) -> dict:
    """``{label: per-seed R^gap_T}`` of the identity ablation (W = I7)."""
    sc = scenario_names(run)[0]
    return {lab: per_seed_final(run, lab, sc, "regret_gap") for lab, _, _ in ABLATION if lab in run.grid}


def _ablation_section(run: mb.Results) -> str:
    f = ablation_finals(run)
    m = {k: float(v.mean()) for k, v in f.items()}
    n = next(iter(f.values())).size
    s = "## 3. Why PrefUCB and ParetoUCB differ when W = I (ablation)\n\n"
    s += (f"The paper says PrefUCB and ParetoUCB behave alike in the Standard setting (W = I7). They differ in two "
          f"ways: the index (PrefUCB: KL-UCB bounds with beta_t = log t; ParetoUCB: Hoeffding radius "
          f"sqrt(2 log(t (d |F|)^(1/4)) / n)) and the selection rule (PrefUCB: argmax of the worst direction's "
          f"bound; ParetoUCB: uniform over arms whose UCB vectors are not Pareto-dominated). "
          f"`configs/pdmob/identity_ablation.toml` swaps each ingredient (options `index` of `prefucb` and "
          f"`pareto_ucb`), same environment, T = {int(run.checkpoints[-1])}, {n} seeds. Final cumulative gap-weighted "
          f"regret R^gap_T (mean ± std over seeds):\n\n")
    s += "| Policy | index | selection rule | R^gap_T |\n|---|---|---|---|\n"
    for lab, idx, rule in ABLATION:
        if lab in f:
            s += f"| {lab} | {idx} | {rule} | {_ms(f[lab], 1)} |\n"
    need = ("PrefUCB", "PrefUCB (Pareto UCB1 radius)", "ParetoUCB", "ParetoUCB (KL-UCB bounds)")
    if all(k in m for k in need):
        pk, ph, qh, qk = (m[k] for k in need)
        gap = qh - pk
        idx_pareto, idx_pref = qh - qk, ph - pk  # effect of the index at a fixed rule
        rule_h, rule_k = qh - ph, qk - pk  # effect of the rule at a fixed index
        idx_sum, rule_sum = abs(idx_pareto) + abs(idx_pref), abs(rule_h) + abs(rule_k)
        s += ("\nChange in the mean R^gap_T when one ingredient is swapped and the other held fixed:\n\n"
              "| ingredient swapped | held fixed | from | to | change |\n|---|---|---|---|---|\n"
              f"| index | max-min rule | {need[0]} | {need[1]} | {idx_pref:+.1f} |\n"
              f"| index | uniform rule | {need[2]} | {need[3]} | {-idx_pareto:+.1f} |\n"
              f"| index, summed | both rules (absolute changes) | | | {idx_sum:.1f} |\n"
              f"| selection rule | Pareto UCB1 index | {need[1]} | {need[2]} | {rule_h:+.1f} |\n"
              f"| selection rule | KL-UCB index | {need[0]} | {need[3]} | {rule_k:+.1f} |\n"
              f"| selection rule, summed | both indexes (absolute changes) | | | {rule_sum:.1f} |\n"
              f"| both | — | {need[0]} | {need[2]} | {gap:+.1f} |\n")
        s += (f"\nThe gap to explain is {gap:.1f} (ParetoUCB {qh:.1f} against PrefUCB {pk:.1f}). "
              f"Changing only the index moves ParetoUCB by {-idx_pareto:+.1f} and PrefUCB by {idx_pref:+.1f}; "
              f"changing only the selection rule moves the Hoeffding pair by {rule_h:+.1f} "
              f"(PrefUCB rule {ph:.1f} against ParetoUCB rule {qh:.1f}) and the KL-UCB pair by {rule_k:+.1f} "
              f"({pk:.1f} against {qk:.1f}). ")
        main = "index" if idx_sum > rule_sum else "selection rule"
        s += (f"Summed over both pairs, the {main} accounts for more of the difference "
              f"(index {idx_sum:.1f}, selection rule {rule_sum:.1f}).\n\n")
    return s


def _run_row(key: str, run: mb.Results) -> str:
    """The run table's row of ``run``: key, directory, seeds and engine wall seconds (``timing.json``)."""
    return f"| `{key}` | {run.folder} | {run.records[0]['n']} | {run.wall} |"


def build(run_dirs: dict, out_dir, figures: bool = True) -> Path:
    """Write ``report.md``, ``summary.json`` and the figures of PDMOB from run directories (``figures=False``: no
    figure is drawn and ``report.md`` links none; the rest of it and the numbers are the same)."""
    unknown = sorted(set(run_dirs) - {"llm", "assets", "identity_ablation"})
    if unknown:
        raise KeyError(f"run_dirs has unknown key(s) {unknown}; allowed: 'llm', 'assets', 'identity_ablation'")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    records, parts, timing = [], [], []
    for key, section in (("llm", _llm_section), ("assets", _assets_section)):
        if key not in run_dirs:
            continue
        run = load_run(run_dirs[key])
        parts.append(section(run, out, figures) + (_llm_differences(run) if key == "llm" else _assets_differences(run)))
        records += [{**r, "setting": {**r["setting"], "experiment": key}} for r in run.records]
        records += derived_records(run, key)
        timing.append(_run_row(key, run))
    if "identity_ablation" in run_dirs:
        run = load_run(run_dirs["identity_ablation"])
        parts.append(_ablation_section(run))
        records += [{**r, "setting": {**r["setting"], "experiment": "identity_ablation"}} for r in run.records]
        timing.append(_run_row("identity_ablation", run))
    (out / "summary.json").write_text(json.dumps({"records": records}, indent=1))
    head = ("# PDMOB reproduction: preference-directed MO bandits (PrefUCB)\n\n"
            "Generated by `build` in `experiments/pdmob/report.py` from the run directories below (engine wall "
            "time of each run's last invocation).\n\n"
            "| run | directory | seeds | engine wall time (s) |\n|---|---|---|---|\n" + "\n".join(timing) + "\n\n")
    cmds = ("## How this was produced\n\n```\n"
            "mobandit run configs/pdmob/llm.toml --out runs/pdmob/llm\n"
            "mobandit run configs/pdmob/assets.toml --out runs/pdmob/assets\n"
            "mobandit run configs/pdmob/identity_ablation.toml --out runs/pdmob/identity_ablation\n"
            "python experiments/pdmob/report.py llm=runs/pdmob/llm assets=runs/pdmob/assets "
            "identity_ablation=runs/pdmob/identity_ablation experiments/pdmob\n"
            "```\n\n(or `mobandit reproduce --only pdmob`).\n")
    path = out / "report.md"
    path.write_text(head + "".join(parts) + cmds)
    return path


if __name__ == "__main__":
    import sys

    args = dict(a.split("=", 1) for a in sys.argv[1:-1])
    print(build(args, sys.argv[-1]))
