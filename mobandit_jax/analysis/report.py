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
    (out / "report.md").write_text("\n".join(head + [tables(summary["records"])] + budget + figs) + "\n")
