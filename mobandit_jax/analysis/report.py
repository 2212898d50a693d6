"""``report.md``: one table per summary metric (rows: settings, columns: policies, mean +- std)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .files import column, record
from .plots import paid, setting_title


def fmt_mean_std(mean: float, std: float) -> str:
    """A table cell: ``mean ± std``."""
    return f"{mean:.4g} ± {std:.2g}"


def tables(records: list) -> str:
    """Markdown tables of the records, one per metric."""
    metrics = list(dict.fromkeys(r["metric"] for r in records))
    lines = []
    for m in metrics:
        rows = [r for r in records if r["metric"] == m]
        cols = list(dict.fromkeys(_column(r) for r in rows))
        settings = list(dict.fromkeys(setting_title(r["setting"]) for r in rows))
        cell = {(setting_title(r["setting"]), _column(r)): fmt_mean_std(r["mean"], r["std"]) for r in rows}
        lines += [f"### {m}", "", "| setting | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for s in settings:
            lines.append(f"| {s} | " + " | ".join(cell.get((s, c), "") for c in cols) + " |")
        lines.append("")
    return "\n".join(lines)


def budget_tables(plan) -> str:
    """Where pulls cost: rounds played, budget spent and each cumulative metric per unit of budget spent
    (per seed, its final sum over its final spend), as mean ± std over seeds, one table each."""
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
            records += [record(label, point["params"], point["setting"], name, v) for name, v in values]
    return tables(records) if records else ""


def _column(r) -> str:
    return column(r["policy"], r["params"])


def write(plan, summary: dict, figures: list, out: Path):
    """Write ``out/report.md``."""
    exp = plan.spec["experiment"]
    n = summary["records"][0]["n"] if summary["records"] else 0
    head = [
        f"# {exp.get('name', 'experiment')}",
        "",
        f"Environment `{plan.spec['env']['kind']}`, horizon {plan.horizon}, {n} seeds (base seed {plan.base_seed}), "
        f"curves recorded every {plan.record_every} rounds. Values are mean ± std over seeds.",
        "",
    ]
    figs = [f"![{f}]({f})" for f in figures]
    budget = budget_tables(plan)
    budget = ["## Against the budget spent", "", budget] if budget else []
    recommended = [recommended_sections(plan)] if getattr(plan, "recommendations", None) else []
    (out / "report.md").write_text("\n".join(head + [tables(summary["records"])] + budget + recommended + figs) + "\n")



def _names(names) -> str:
    """A set of arm names as a table cell (``|`` escaped)."""
    return "{" + ", ".join(str(n).replace("|", "\\|") for n in names) + "}"


def recommended_sections(results) -> str:
    """The sets the runs recommend, by arm name (``recommended.npz``, :meth:`Results.recommended`): per grid
    setting, the budget ``B`` in the data's own cost units (where the run has one), the true set, each policy's
    most frequent recommended set with its share of seeds, and a table of arms: in the true set, and the share
    of seeds whose recommended set holds it, per policy. Empty where the run recorded none."""
    by_setting: dict = {}
    for label, points in results.grid.items():
        for g, point in enumerate(points):
            if f"{label}|{g}" in results.recommendations:
                by_setting.setdefault(setting_title(point["setting"]), []).append(
                    (column(label, point["params"]), results.recommendation_at(label, g)))
    if not by_setting:
        return ""
    lines = ["## Recommended sets", "",
             "The set each run recommends at its end (its family's `recommended`), by arm name: per policy the set "
             "recommended most often and the share of seeds that recommend it; per arm the share of seeds whose "
             "set holds it.", ""]
    for title, pairs in by_setting.items():
        cols, recs = [c for c, _ in pairs], [r for _, r in pairs]
        if len(by_setting) > 1:
            lines += [f"### {title}", ""]
        budget = (results.truth(recs[0].setting) if results.truths else {}).get("budget")
        if budget:
            lines += [f"Budget B = {budget['B_own_units']:.6g} {budget['cost_name']} "
                      f"({budget['B']:.6g} in units of the largest cost, {budget['cost_scale']:.6g} "
                      f"{budget['cost_name']}).", ""]
        truths = list(dict.fromkeys(r.true_names for r in recs if r.true_names is not None))
        if len(truths) == 1:
            lines += [f"True set: {_names(truths[0])}.", ""]
        elif any(r.redrawn for r in recs):
            lines += ["Each seed redraws its instance: there is no one true set.", ""]
        lines += ["| policy | most frequent recommended set | seeds |", "|---|---|---|"]
        lines += [f"| {c} | {_names(r.top)} | {r.top_count}/{len(r.masks)} ({r.top_frequency:.0%}) |"
                  for c, r in pairs]
        lines += ["", "| arm | in true set | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
        for i, arm in enumerate(recs[0].arms):
            true = sorted({"yes" if r.true_set[i] else "no" for r in recs if r.true_set is not None})
            cells = " | ".join(f"{r.inclusion[i]:.2f}" for r in recs)
            lines.append(f"| {_names([arm])[1:-1]} | {'/'.join(true) or '–'} | {cells} |")
        lines.append("")
    return "\n".join(lines)
