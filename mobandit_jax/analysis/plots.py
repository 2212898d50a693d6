"""Figures: cumulative curves with +-1 std bands, one panel per grid setting, one PNG per metric."""
from __future__ import annotations

import math
from pathlib import Path

from matplotlib.figure import Figure

MAX_PANELS = 16


def setting_title(setting: dict) -> str:
    """A short panel title from a setting dict."""
    return ", ".join(f"{k}={v}" for k, v in setting.items()) or "default"


LEGEND_INSIDE = 6  # legend entries that still fit inside the first panel


def mean_std_band(ax, x, runs, label):
    """Plot the mean of ``runs (S, C)`` over seeds with a +-1 std band."""
    mu, sd = runs.mean(axis=0), runs.std(axis=0)
    line, = ax.plot(x, mu, label=label)
    ax.fill_between(x, mu - sd, mu + sd, alpha=0.2, color=line.get_color())


def _varying(points) -> list:
    """The keys whose values differ between the parameter dicts ``points`` (sorted)."""
    points = list(points)
    keys = sorted({k for p in points for k in p if k != "name"})
    return [k for k in keys if len({repr(p.get(k)) for p in points}) > 1]


def paid(curves: dict, label: str, g: int) -> bool:
    """Whether the pulls of grid point ``g`` of ``label`` cost anything (its runs spent a budget)."""
    spent = curves.get(f"{label}|{g}|spent")
    return spent is not None and bool((spent[..., -1] > 0).any())


def metric_figure(plan, curves: dict, m: str, against: str = "round"):
    """A Figure of metric ``m``'s cumulative curves for every policy, one panel per setting (up to 16).

    ``against = "spent"`` draws them against the budget spent by each checkpoint (the mean over seeds)."""
    labels = list(plan.grid)
    settings = [p["setting"] for p in plan.grid[labels[0]]] if labels else []
    # Group grid indices of each label by setting (a policy sweep gives several points per setting).
    panels = []
    for s in settings:
        if s not in panels:
            panels.append(s)
    swept = {label: _varying(p["params"] for p in plan.grid[label]) for label in labels}  # a policy sweep's keys
    panels = panels[:MAX_PANELS]
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(4 * cols, 3 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, s in zip(axes.flat, panels, strict=False):
        for label in labels:
            if m not in plan.names[label]:
                continue
            for g, point in enumerate(plan.grid[label]):
                if point["setting"] != s:
                    continue
                name = " ".join([label] + [f"{k}={point['params'][k]}" for k in swept[label]])
                x = curves["checkpoints"] if against == "round" else curves[f"{label}|{g}|spent"].mean(axis=0)
                mean_std_band(ax, x, curves[f"{label}|{g}|{m}"], name)
        ax.set_title(setting_title(s), fontsize=9)
        ax.set_xlabel("round" if against == "round" else "budget spent")
        ax.set_ylabel(f"cumulative {m}")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles, names = axes.flat[0].get_legend_handles_labels()
    if len(handles) <= LEGEND_INSIDE:
        axes.flat[0].legend(fontsize=7)
    else:  # a policy sweep: one entry per point, below the panels where it cannot cover the curves
        fig.legend(handles, names, fontsize=7, loc="outside lower center", ncols=min(3, len(handles)))
    return fig


def regret_figures(plan, curves: dict, out: Path) -> list:
    """One PNG per cumulative ("sum") metric: curves of every policy, one panel per setting; where pulls cost,
    a second PNG per metric, ``<metric>_by_budget.png``, draws the same curves against the budget spent."""
    labels = list(plan.grid)
    metrics = [m for m in plan.names[labels[0]] if plan.reduce[labels[0]][m] == "sum"] if labels else []
    costly = any(paid(curves, label, g) for label in labels for g in range(len(plan.grid[label])))
    files = []
    for m in metrics:
        for against, name in [("round", f"{m}.png")] + ([("spent", f"{m}_by_budget.png")] if costly else []):
            fig = metric_figure(plan, curves, m, against)
            fig.savefig(out / name, dpi=110)
            files.append(name)
    return files
