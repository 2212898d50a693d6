"""``report.md``: one table per summary metric (rows: settings, columns: policies, mean +- std)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..runner.run_folder import column
from .plots import paid, setting_title


def fmt_mean_std(mean: float, std: float) -> str:
    """A table cell: ``mean ± std``."""
    return f"{mean:.4g} ± {std:.2g}"


def tables(records: list, title=None, col=None) -> str:
    """Markdown tables of the records, one per metric (``title(r)``, ``col(r)``: a row's setting and column)."""
    title = title or (lambda r: setting_title(r["setting"]))
    col = col or _column
    metrics = list(dict.fromkeys(r["metric"] for r in records))
    lines = []
    for m in metrics:
        rows = [r for r in records if r["metric"] == m]
        cols = list(dict.fromkeys(col(r) for r in rows))
        settings = list(dict.fromkeys(title(r) for r in rows))
        cell = {(title(r), col(r)): fmt_mean_std(r["mean"], r["std"]) for r in rows}
        lines += [f"### {m}", "", "| setting | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for s in settings:
            lines.append(f"| {s} | " + " | ".join(cell.get((s, c), "") for c in cols) + " |")
        lines.append("")
    return "\n".join(lines)


def budget_tables(plan) -> str:
    """Where pulls cost: rounds played, budget spent and each cumulative metric per unit of budget spent
    (per seed, its final sum over its final spend), as mean ± std over seeds, one table each."""
    rows = []  # (setting title, column, name, per-seed values)
    for label, points in plan.grid.items():
        sums = [m for m in plan.names[label] if plan.reduce[label][m] == "sum"]
        for g, point in enumerate(points):
            if not paid(plan.arrays, label, g):
                continue
            key = (setting_title(point["setting"]), column(label, point["params"]))
            spent, rounds = plan.arrays[f"{label}|{g}|spent"][:, -1], plan.arrays[f"{label}|{g}|rounds"][:, -1]
            rows += [key + ("rounds played", rounds), key + ("budget spent", spent)]
            per_unit = lambda m: plan.arrays[f"{label}|{g}|{m}"][:, -1] / np.maximum(spent, 1e-300)
            rows += [key + (f"{m} per unit of budget", per_unit(m)) for m in sums]
    records = [{"metric": name, "policy": col, "params": {}, "setting": {"_": title},
                "mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0}
               for title, col, name, v in rows]
    return tables(records, title=lambda r: r["setting"]["_"], col=lambda r: r["policy"]) if records else ""


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
