"""Figures: cumulative curves with a band over seeds, one panel per grid setting, one PNG per metric.

The band is the 95% interval of the mean at each checkpoint by default (Student t over the seeds; rliable,
Agarwal et al., NeurIPS 2021: intervals, not point estimates); ``band="std"`` draws mean +- 1 std, and
``"median"`` / ``"iqm"`` the median or interquartile mean with a seeded bootstrap interval
(:mod:`mobandit_jax.analysis.stats`). Every figure names the band and the seeds in its title, and a band
of a metric with a lower bound (a regret, a count) stops at that bound.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from . import stats
from .files import column

MAX_PANELS = 16
DPI = 200  # PNG resolution: a 3.4-inch panel (a paper's column) is 680 pixels wide
PANEL = (3.4, 2.6)  # inches per panel: readable at a paper's column width without scaling the fonts down
BANDS = {"ci": "mean, 95% CI", "std": "mean ± 1 std", "median": "median, 95% bootstrap CI",
         "iqm": "IQM, 95% bootstrap CI"}  # --band: what the curves' line and band are


def setting_title(setting: dict) -> str:
    """A short panel title from a setting dict."""
    return ", ".join(f"{k}={v}" for k, v in setting.items()) or "default"


LEGEND_INSIDE = 6  # legend entries that still fit inside the first panel


def band_values(runs, band: str = "ci", seed: int = 0) -> tuple:
    """The line and band of ``runs (S, C)`` over seeds at each checkpoint.

    Args:
      runs: per-seed values, seeds first.
      band: a key of :data:`BANDS`: ``"ci"`` (mean, Student-t 95% CI), ``"std"`` (mean +- 1 std, ddof 1 as
        the records), ``"median"`` or ``"iqm"`` (a seeded bootstrap 95% CI).
      seed: the bootstrap's seed.

    Returns:
      ``(line, low, high)``, each ``(C,)``.
    """
    runs = np.asarray(runs, np.float64)
    if band not in BANDS:
        raise ValueError(f"--band {band!r}; allowed: {list(BANDS)}")
    if band in ("median", "iqm"):
        return stats.bootstrap_interval(runs, band, resamples=1000, seed=seed)
    n, mu = runs.shape[0], runs.mean(axis=0)
    sd = runs.std(axis=0, ddof=1) if n > 1 else np.zeros_like(mu)
    half = sd if band == "std" else (stats.t_quantile(stats.LEVEL, n - 1) * sd / np.sqrt(n) if n > 1 else 0 * sd)
    return mu, mu - half, mu + half


def draw_band(ax, x, runs, label, band: str = "ci", low=None, seed: int = 0) -> bool:
    """Plot ``runs (S, C)``'s line and band (:func:`band_values`), the band clipped at ``low`` (a metric's lower
    bound) where given; returns whether the clip cut the band."""
    mid, lo, hi = band_values(runs, band, seed)
    clipped = low is not None and bool(np.any(lo < low))
    if low is not None:
        lo = np.maximum(lo, low)
    line, = ax.plot(x, mid, label=label)
    ax.fill_between(x, lo, hi, alpha=0.2, color=line.get_color())
    return clipped


def band_caption(band: str, seeds: int, clipped: bool = False) -> str:
    """What a figure's band is, for its title: ``"mean, 95% CI over 200 seeds"``."""
    return f"{BANDS[band]} over {seeds} seed{'s' if seeds != 1 else ''}" + (" (band clipped at 0)" if clipped else "")


def wrap_title(lines, width_inches: float) -> str:
    """Title lines wrapped to a figure ``width_inches`` wide (about 15 characters an inch at 9 points)."""
    return "\n".join(textwrap.fill(str(line), max(20, int(15 * width_inches))) for line in lines)


def figure_title(plan) -> str:
    """The experiment's name, for figure titles."""
    return str(plan.spec.get("experiment", {}).get("name", "experiment")) if plan.spec else "experiment"


def last_round(curves: dict, keys) -> float | None:
    """The round at which the last seed of the budgeted grid points ``keys`` (``label|g``) stopped playing."""
    played = [np.max(curves[f"{k}|rounds"][..., -1]) for k in keys if f"{k}|rounds" in curves]
    return float(max(played)) if played else None


def varying(points) -> list:
    """The keys whose values differ between the parameter dicts ``points`` (sorted)."""
    points = list(points)
    keys = sorted({k for p in points for k in p if k != "name"})
    return [k for k in keys if len({repr(p.get(k)) for p in points}) > 1]


def paid(curves: dict, label: str, g: int) -> bool:
    """Whether the pulls of grid point ``g`` of ``label`` cost anything (its runs spent a budget)."""
    spent = curves.get(f"{label}|{g}|spent")
    return spent is not None and bool((spent[..., -1] > 0).any())


def metric_figure(plan, curves: dict, m: str, against: str = "round", band: str = "ci"):
    """A Figure of metric ``m``'s cumulative curves for every policy, one panel per setting (up to 16).

    ``against = "spent"`` draws them against the budget spent by each checkpoint (the mean over seeds).
    ``band``: what the line and band are (:data:`BANDS`; default the mean with its 95% CI), named in the
    title with the experiment and the seeds. Legend entries are the report's columns (``CoHV-UCB {'alpha':
    0.5}``). Where pulls cost, the round axis ends where the last seed's budget ran out."""
    labels = list(plan.grid)
    settings = [p["setting"] for p in plan.grid[labels[0]]] if labels else []
    # Group grid indices of each label by setting (a policy sweep gives several points per setting).
    panels = []
    for s in settings:
        if s not in panels:
            panels.append(s)
    panels = panels[:MAX_PANELS]
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(PANEL[0] * cols, PANEL[1] * rows + 0.5), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    low = None
    bounds = getattr(plan, "bounds", {}) or {}
    seeds, clipped = 0, False
    for ax, s in zip(axes.flat, panels, strict=False):
        ends = []
        for label in labels:
            if m not in plan.names[label]:
                continue
            low = (bounds.get(label, {}).get(m) or (None, None))[0]
            for g, point in enumerate(plan.grid[label]):
                if point["setting"] != s:
                    continue
                x = curves["checkpoints"] if against == "round" else curves[f"{label}|{g}|spent"].mean(axis=0)
                runs = curves[f"{label}|{g}|{m}"]
                seeds = max(seeds, runs.shape[0])
                clipped |= draw_band(ax, x, runs, column(label, point["params"]), band, low,
                                     getattr(plan, "base_seed", 0))
                if against == "round" and paid(curves, label, g):
                    ends.append(f"{label}|{g}")
        end = last_round(curves, ends)
        if end is not None:
            ax.set_xlim(right=end)
        ax.set_title(setting_title(s), fontsize=8)
        ax.set_xlabel("round" if against == "round" else "budget spent", fontsize=8)
        ax.set_ylabel(f"cumulative {m}", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(wrap_title([figure_title(plan), f"{m}: {band_caption(band, seeds, clipped and band == 'std')}"],
                            fig.get_figwidth()), fontsize=9)
    handles, names = axes.flat[0].get_legend_handles_labels()
    if len(handles) <= LEGEND_INSIDE:
        axes.flat[0].legend(fontsize=7, loc="best")
    else:  # a policy sweep: one entry per point, below the panels where it cannot cover the curves
        fig.legend(handles, names, fontsize=7, loc="outside lower center", ncols=min(3, len(handles)))
    return fig


def save(fig, path, **metadata):
    """Write ``fig`` as a PNG at :data:`DPI`, its title also in the PNG's ``Title`` text chunk (readable without
    looking at the pixels: ``PIL.Image.open(path).text["Title"]``)."""
    title = fig.get_suptitle() if hasattr(fig, "get_suptitle") else ""
    fig.savefig(path, format="png", dpi=DPI, metadata={"Title": " ".join(title.split()), **metadata})


def regret_figures(plan, curves: dict, out: Path, band: str = "ci") -> list:
    """One PNG per cumulative ("sum") metric: curves of every policy, one panel per setting; where pulls cost,
    a second PNG per metric, ``<metric>_by_budget.png``, draws the same curves against the budget spent.
    ``band``: the curves' band (:data:`BANDS`)."""
    labels = list(plan.grid)
    metrics = [m for m in plan.names[labels[0]] if plan.reduce[labels[0]][m] == "sum"] if labels else []
    costly = any(paid(curves, label, g) for label in labels for g in range(len(plan.grid[label])))
    files = []
    for m in metrics:
        for against, name in [("round", f"{m}.png")] + ([("spent", f"{m}_by_budget.png")] if costly else []):
            fig = metric_figure(plan, curves, m, against, band)
            save(fig, out / name)
            files.append(name)
    return files


def grid_figure(results, metric: str):
    """A Figure of ``metric``'s final mean (95% CI bars) against each swept option, a panel per option.

    A line per policy, setting and values of its other swept options (:meth:`Results.grid_winners`'s grid);
    None where no policy sweeps an option of numbers."""
    swept = {label: [k for k in varying(p["params"] for p in points)
                     if all(isinstance(p["params"].get(k), (int, float)) and not isinstance(p["params"].get(k), bool)
                            for p in points)]
             for label, points in results.grid.items() if metric in results.names.get(label, ())}
    options = list(dict.fromkeys(k for ks in swept.values() for k in ks))
    if not options:
        return None
    fig = Figure(figsize=(PANEL[0] * min(3, len(options)), PANEL[1] * math.ceil(len(options) / 3) + 0.6),
                 layout="constrained")
    axes = fig.subplots(math.ceil(len(options) / 3), min(3, len(options)), squeeze=False)
    seeds = 0
    for ax, option in zip(axes.flat, options, strict=False):
        for label, keys in swept.items():
            if option not in keys:
                continue
            lines: dict = {}
            for g, point in enumerate(results.grid[label]):
                rest = {k: point["params"][k] for k in keys if k != option}
                lines.setdefault((setting_title(point["setting"]), json_key(rest)), []).append(g)
            for (where, rest), members in lines.items():
                members.sort(key=lambda g, label=label: results.grid[label][g]["params"][option])
                x = [results.grid[label][g]["params"][option] for g in members]
                ci = [results.interval(label, metric, **results.grid[label][g]["params"],
                                       **results.grid[label][g]["setting"]) for g in members]
                mid, lo, hi = (np.array(c, float) for c in zip(*ci, strict=True))
                seeds = max(seeds, len(results.finals[f"{label}|{members[0]}|{metric}"]))
                name = " ".join(t for t in (label, rest, "" if where == "default" else where) if t)
                ax.errorbar(x, mid, yerr=np.stack([mid - lo, hi - mid]), marker="o", capsize=2, label=name)
        ax.set_xlabel(option, fontsize=8)
        ax.set_ylabel(f"final {metric}", fontsize=8)
        ax.set_title(f"{metric} against {option}", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(options):]:
        ax.axis("off")
    fig.suptitle(wrap_title([figure_title(results), f"{metric} over the grid: {band_caption('ci', seeds)}"],
                            fig.get_figwidth()), fontsize=9)
    handles, names = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="outside lower center", ncols=min(3, len(handles)))
    return fig


def json_key(params: dict) -> str:
    """``{'eta': 0.1}`` as a short label (empty for no options)."""
    return str(params) if params else ""


def grid_figures(results, out: Path) -> list:
    """One PNG per metric with a goal, ``grid_<metric>.png``, where a policy sweeps an option of numbers."""
    names = []
    metrics = dict.fromkeys(m for ms in results.names.values() for m in ms)
    for m in metrics:
        if not results.metric_goal(m):
            continue
        fig = grid_figure(results, m)
        if fig is not None:
            save(fig, out / f"grid_{m}.png")
            names.append(f"grid_{m}.png")
    return names
