"""``report.md``: one table per summary metric (rows: settings, columns: policies), each cell the mean and its
95% interval over seeds (Student t; Wilson's for rates) by default, or mean +- 1 std (``band="std"``), or the
median / interquartile mean with a bootstrap interval (``band="median"`` / ``"iqm"``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .files import column, option_text, plain, record
from .plots import BANDS, paid, setting_title
from .stats import interval_fields, record_interval


def fmt_mean_std(mean: float, std: float) -> str:
    """A table cell: ``mean ± std``."""
    return f"{mean:.4g} ± {std:.2g}"


def fmt_ci(mean: float, low: float, high: float) -> str:
    """A table cell: ``mean [low, high]``."""
    return f"{mean:.4g} [{low:.4g}, {high:.4g}]"


def fmt_cell(r: dict, band: str = "ci") -> str:
    """A record's table cell: ``mean [95% CI]`` (``band="ci"``, and ``"median"`` / ``"iqm"`` records of
    :func:`band_records`), or ``mean ± std`` (``band="std"``)."""
    if band == "std":
        return fmt_mean_std(r["mean"], r["std"])
    return fmt_ci(r["mean"], *record_interval(r))


def band_words(band: str, seeds: int) -> str:
    """The sentence that says what the table cells are."""
    if band == "std":
        return f"Values are mean ± 1 std over {seeds} seeds."
    if band == "ci":
        return (f"Values are mean [95% CI] over {seeds} seeds (Student t; Wilson's score interval for rates, "
                "which stays within [0, 1]).")
    return f"Values are {BANDS[band]} [low, high] over {seeds} seeds (percentile bootstrap, seeded)."


def band_records(plan, records: list, band: str) -> list:
    """``records`` with ``mean`` / ``ci_low`` / ``ci_high`` replaced by the median or IQM and its bootstrap
    interval from the per-seed finals (``band`` ``"median"`` / ``"iqm"``; otherwise ``records`` as they are)."""
    if band not in ("median", "iqm"):
        return records
    out = []
    for r in records:
        point, lo, hi = plan.interval(r["policy"], r["metric"], band, **r["params"], **r["setting"])
        out.append({**r, "mean": point, "ci_low": lo, "ci_high": hi})
    return out


def same_for_all(rows: list) -> bool:
    """Whether every setting's records of ``rows`` (one metric) hold the same values for every policy (a
    benchmark such as ``vstar``): then a table shows them once."""
    by_setting: dict = {}
    for r in rows:
        by_setting.setdefault(setting_title(r["setting"]), set()).add((r["mean"], r["std"], r["n"]))
    return len({_column(r) for r in rows}) > 1 and all(len(v) == 1 for v in by_setting.values())


def tables(records: list, band: str = "ci") -> str:
    """Markdown tables of the records, one per metric (cells: :func:`fmt_cell`); a metric whose values are the
    same for every policy (:func:`same_for_all`) is one column, ``every policy``."""
    metrics = list(dict.fromkeys(r["metric"] for r in records))
    lines = []
    for m in metrics:
        rows = [r for r in records if r["metric"] == m]
        once = same_for_all(rows)
        cols = ["every policy"] if once else list(dict.fromkeys(_column(r) for r in rows))
        settings = list(dict.fromkeys(setting_title(r["setting"]) for r in rows))
        cell = {(setting_title(r["setting"]), "every policy" if once else _column(r)): fmt_cell(r, band) for r in rows}
        lines += [f"### {m}", "", "| setting | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for s in settings:
            lines.append(f"| {s} | " + " | ".join(cell.get((s, c), "") for c in cols) + " |")
        lines.append("")
    return "\n".join(lines)


def budget_tables(plan, band: str = "ci") -> str:
    """Where pulls cost: rounds played, budget spent and each cumulative metric per unit of budget spent
    (per seed, its final sum over its final spend), as mean [95% CI] (or ± std) over seeds, one table each."""
    records = []
    for label, points in plan.grid.items():
        sums = [m for m in plan.names[label] if plan.reduce[label][m] == "sum"]
        for g, point in enumerate(points):
            if not paid(plan.arrays, label, g):
                continue
            final = lambda m, label=label, g=g: plan.arrays[f"{label}|{g}|{m}"][:, -1]
            spent = final("spent")
            values = [("rounds played", final("rounds")), ("budget spent", spent)]
            values += [(f"{m} per unit of budget", final(m) / np.maximum(spent, 1e-300)) for m in sums]
            records += [record(label, point.params, point.setting, name, v) for name, v in values]
    return tables(records, "std" if band == "std" else "ci") if records else ""


def _column(r) -> str:
    return column(r["policy"], r["params"])


def text(plan, summary: dict, figures: list, band: str = "ci", baseline: str | None = None) -> str:
    """The text of ``report.md``: the tables of ``summary``'s records, cells as ``band`` says, the paired
    differences to the best policy (or to ``baseline``), the grid winners, and ``figures``."""
    exp = plan.spec.experiment
    n = summary["records"][0]["n"] if summary["records"] else 0
    head = [
        f"# {exp.name or 'experiment'}",
        "",
        f"Environment `{plan.spec.env['kind']}`, horizon {plan.horizon}, {n} seeds (base seed {plan.base_seed}), "
        f"curves recorded every {plan.record_every} rounds. {band_words(band, n)}",
        "",
    ]
    notes = dict.fromkeys(n for entry in getattr(plan, "truths", ()) for n in entry.get("notes", ()))
    head += [f"Note: {n}." for n in notes] + ([""] if notes else [])
    figs = [f"![{f}]({f})" for f in figures]
    budget = budget_tables(plan, band)
    budget = ["## Against the budget spent", "", budget] if budget else []
    recommended = [recommended_sections(plan)] if getattr(plan, "recommendations", None) else []
    extra = paired_section(plan, baseline) + grid_section(plan)
    return "\n".join(head + [tables(band_records(plan, summary["records"], band), band)] + budget + recommended
                     + extra + figs) + "\n"


def write(plan, summary: dict, figures: list, out: Path, band: str = "ci"):
    """Write ``out/report.md`` (:func:`text`)."""
    (out / "report.md").write_text(text(plan, summary, figures, band))


GOAL_WORDS = {"min": "lower is better", "max": "higher is better"}


def _wtl(row: dict) -> str:
    return f"{row['wins']} / {row['ties']} / {row['losses']}" if row.get("wins") is not None else ""


def paired_section(plan, baseline: str | None = None) -> list:
    """``report.md`` lines: each policy's per-seed difference to the best policy of its setting (or to
    ``baseline``), mean [paired 95% CI] and wins / ties / losses over seeds, one table per metric with a goal
    (:meth:`~mobandit_jax.analysis.results.Results.compare`); no lines where no setting has two policies."""
    if not hasattr(plan, "compare") or not plan.finals:
        return []
    lines = []
    for m in plan.metrics():
        goal = plan.metric_goal(m)
        if not goal and baseline is None:
            continue
        try:
            rows = plan.compare(m, baseline)
        except (KeyError, ValueError):  # a folder without per-seed finals, or a baseline absent from a setting
            continue
        if not rows:
            continue
        lines += [f"### {m} ({GOAL_WORDS.get(goal, 'no direction')})", "",
                  "| setting | policy | mean | difference to " + ("best" if baseline is None else baseline)
                  + " [95% CI] | wins / ties / losses |", "|---|---|---|---|---|"]
        for where in dict.fromkeys(setting_title(r["setting"]) for r in rows):
            mine = [r for r in rows if setting_title(r["setting"]) == where]
            ref = mine[0]["reference"]
            lines.append(f"| {where} | {ref} | {mine[0]['reference_mean']:.4g} | "
                         f"{'best' if baseline is None else 'baseline'} | |")
            for r in mine:
                lines.append(f"| {where} | {r['policy']} | {r['mean']:.4g} | "
                             f"{fmt_ci(r['diff'], r['ci_low'], r['ci_high'])} | {_wtl(r)} |")
        lines.append("")
    if not lines:
        return []
    n = plan.records[0]["n"] if plan.records else 0
    to = "the best policy of its setting" if baseline is None else f"{baseline}"
    return ["## Paired differences", "",
            f"Per seed, each policy minus {to}: every policy of a seed faces the same reward streams (common "
            f"random numbers), so the differences are paired; mean [paired Student-t 95% CI] over {n} seeds, and "
            "the seeds on which the policy is better / equal / worse.", ""] + lines


def grid_section(plan) -> list:
    """``report.md`` lines: for each policy that sweeps options, the best grid point per setting and metric with
    its 95% CI, the runner-up's paired difference, and a flag where the best value is at the grid's edge
    (:meth:`~mobandit_jax.analysis.results.Results.grid_winners`)."""
    if not hasattr(plan, "grid_winners") or not plan.finals:
        return []
    lines = []
    for m in plan.metrics():
        if not plan.metric_goal(m):
            continue
        try:
            rows = plan.grid_winners(m)
        except KeyError:  # a folder without per-seed finals
            continue
        for r in rows:
            edge = {True: "**at the edge**: widen the grid", False: "inside", None: "(not numeric)"}[r["edge"]]
            runner = ", ".join(option_text(k, v) for k, v in r["runner_up"].items() if k != "name")
            lines.append(f"| {r['policy']} | {setting_title(r['setting'])} | {m} | {r['option']} | "
                         f"{plain(r['grid'])} | {plain(r['best'])} | {fmt_ci(r['mean'], r['ci_low'], r['ci_high'])} | "
                         f"{runner}: "
                         f"{fmt_ci(r['runner_up_diff'], r['runner_up_ci_low'], r['runner_up_ci_high'])} | {edge} |")
    if not lines:
        return []
    return ["## Grid winners", "",
            "For each swept option, the best setting per policy and metric (mean [95% CI]), the runner-up's paired "
            "difference to it (runner-up minus best [95% CI]), and whether the best value lies at the edge of the "
            "grid (the optimum may then lie outside it).", "",
            "| policy | setting | metric | option | grid | best | mean [95% CI] | runner-up: difference | edge |",
            "|---|---|---|---|---|---|---|---|---|"] + lines + [""]


def _names(names) -> str:
    """A set of arm names as a table cell (``|`` escaped)."""
    return "{" + ", ".join(str(n).replace("|", "\\|") for n in names) + "}"


SET_SCORES = {"misidentification": ("accuracy", lambda v: 1.0 - v), "f1": ("F1", lambda v: v),
              "eps_f1": ("ε-F1", lambda v: v)}  # per-seed scores of a recommended set against the seed's own truth


def redrawn_scores(results, pairs: list) -> list:
    """``report.md`` lines where each seed redraws its instance (``pairs``: ``(column, Recommendation, "label|grid")``
    per policy): per policy, the accuracy (the share of seeds whose
    set is their own instance's true set, Wilson's 95% interval) and the F1 of its recommended sets (mean [95% CI]
    over seeds), from the run's per-seed metrics (:data:`SET_SCORES`); none where the run has no such metric."""
    names = [n for n in SET_SCORES if any(n in results.names.get(r.policy, ()) for _, r, _ in pairs)]
    if not names or not results.finals:
        return []
    lines = ["Per seed, the recommended set is scored against that seed's own instance: the accuracy (the share of "
             "seeds that recommend their true set exactly) and the F1 score, mean [95% CI] over seeds.", "",
             "| policy | " + " | ".join(SET_SCORES[n][0] for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    for col, _, point in pairs:
        cells = []
        for n in names:
            key = f"{point}|{n}"
            if key not in results.finals:
                cells.append("")
                continue
            values = SET_SCORES[n][1](np.asarray(results.finals[key], np.float64))
            f = interval_fields(values, (0, 1))
            cells.append(fmt_ci(float(np.mean(values)), f["ci_low"], f["ci_high"]))
        lines.append(f"| {col} | " + " | ".join(cells) + " |")
    return lines + [""]


def _fixed_sets(pairs: list) -> list:
    """``report.md`` lines of a fixed instance (``pairs`` as :func:`redrawn_scores`'s): each policy's most frequent
    set and each arm's inclusion."""
    cols, recs = [c for c, _, _ in pairs], [r for _, r, _ in pairs]
    lines = ["By arm name: per policy the set recommended most often and the share of seeds that recommend it; per arm "
             "the share of seeds whose set holds it.", "", "| policy | most frequent recommended set | seeds |",
             "|---|---|---|"]
    lines += [f"| {c} | {_names(r.top)} | {r.top_count}/{len(r.masks)} ({r.top_frequency:.0%}) |" for c, r, _ in pairs]
    lines += ["", "| arm | in true set | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
    for i, arm in enumerate(recs[0].arms):
        true = sorted({"yes" if r.true_set[i] else "no" for r in recs if r.true_set is not None})
        cells = " | ".join(f"{r.inclusion[i]:.2f}" for r in recs)
        lines.append(f"| {_names([arm])[1:-1]} | {'/'.join(true) or '–'} | {cells} |")
    return lines + [""]


def recommended_sections(results) -> str:
    """The sets the runs recommend, by arm name (``recommended.npz``, :meth:`Results.recommended`): per grid
    setting, the budget ``B`` in the data's own cost units (where the run has one), the true set (once), each
    policy's most frequent recommended set with its share of seeds, and a table of arms: in the true set, and
    the share of seeds whose recommended set holds it, per policy. Where each seed redraws its instance there is
    no one true set: per policy, the accuracy and F1 of its sets against each seed's own (:func:`redrawn_scores`).
    Empty where the run recorded none."""
    by_setting: dict = {}
    for label, points in results.grid.items():
        for g, point in enumerate(points):
            if f"{label}|{g}" in results.recommendations:
                by_setting.setdefault(setting_title(point.setting), []).append(
                    (column(label, point.params), results.recommendation_at(label, g), f"{label}|{g}"))
    if not by_setting:
        return ""
    lines = ["## Recommended sets", "", "The set each run recommends at its end (its family's `recommended`).", ""]
    for title, pairs in by_setting.items():
        recs = [r for _, r, _ in pairs]
        if len(by_setting) > 1:
            lines += [f"### {title}", ""]
        budget = (results.truth(recs[0].setting) if results.truths else {}).get("budget")
        if budget:
            lines += [f"Budget B = {budget['B_own_units']:.6g} {budget['cost_name']} "
                      f"({budget['B']:.6g} in units of the largest cost, {budget['cost_scale']:.6g} "
                      f"{budget['cost_name']}).", ""]
        if any(r.redrawn for r in recs):
            lines += ["Each seed redraws its instance: there is no one true set.", ""]
            lines += redrawn_scores(results, pairs)
            continue
        truths = list(dict.fromkeys(r.true_names for r in recs if r.true_names is not None))
        if len(truths) == 1:
            lines += [f"True set: {_names(truths[0])}.", ""]
        lines += _fixed_sets(pairs)
    return "\n".join(lines)
