"""Figures of a run: curves over rounds where a curve means something, final values otherwise, and final values
against each swept option.

A metric's reducer says which (:class:`~mobandit_jax.types.Metric`): a ``"sum"`` is drawn as its cumulative
curve, a ``"lastN"`` as the mean of its last N rounds at each checkpoint (the value it is summarised by, read over
time), and a ``"mean"`` (an identifier's one answer, a rate over the rounds played) as each policy's final value
with its interval, a row per policy. The band is the 95% interval of the mean by default (Student t over the
seeds; Wilson's for a rate's final value; rliable, Agarwal et al., NeurIPS 2021: intervals, not point
estimates); ``band="std"`` draws mean +- 1 std, and ``"median"`` / ``"iqm"`` the median or interquartile mean
with a seeded bootstrap interval (:mod:`mobandit_jax.analysis.stats`). Every figure names the band and the seeds
in its title, and a band of a metric with a lower bound (a regret, a count) stops at that bound.

Against a swept option (:func:`grid_figure`) a grid of log-spaced values is drawn on a log axis; a confidence
level ``delta`` (a fixed-confidence identifier's) puts samples and their ratio to the lower bound against
``log(1/delta)`` and an error rate against ``delta`` beside the line ``error = delta``. Colours, legends and file
formats: :mod:`mobandit_jax.analysis.style`.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from ..errors import did_you_mean
from . import stats
from .files import GREEK, column, plain
from .style import CHAR_INCHES, DPI, place_legend, policy_styles, save, style, with_format
from .trailing import trailing_mean

__all__ = ["DPI", "save"]  # re-exported for the callers that draw and write figures

MAX_PANELS = 16
PANEL = (3.4, 2.6)  # inches per panel: readable at a paper's column width without scaling the fonts down
BANDS = {"ci": "mean, 95% CI", "std": "mean ± 1 std", "median": "median, 95% bootstrap CI",
         "iqm": "IQM, 95% bootstrap CI"}  # --band: what the curves' line and band are
CONFIDENCE = "delta"  # the option that is a fixed-confidence identifier's confidence level
MARKS = 6  # markers along a curve


def setting_title(setting: dict) -> str:
    """A short panel title from a setting dict."""
    return ", ".join(f"{k}={v}" for k, v in setting.items()) or "default"


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


def draw_band(ax, x, runs, label, band: str = "ci", low=None, seed: int = 0, look: dict | None = None) -> bool:
    """Plot ``runs (S, C)``'s line and band (:func:`band_values`), the band clipped at ``low`` (a metric's lower
    bound) where given, in the style ``look`` (:func:`~mobandit_jax.analysis.style.style`); returns whether the
    clip cut the band."""
    mid, lo, hi = band_values(runs, band, seed)
    clipped = low is not None and bool(np.any(lo < low))
    if low is not None:
        lo = np.maximum(lo, low)
    look = dict(look or {})
    line, = ax.plot(x, mid, label=label, linewidth=1.2, markersize=3.5, markevery=max(1, len(mid) // MARKS), **look)
    ax.fill_between(x, lo, hi, alpha=0.15, color=line.get_color(), linewidth=0)
    return clipped


def band_caption(band: str, seeds: int, clipped: bool = False) -> str:
    """What a figure's band is, for its title: ``"mean, 95% CI over 200 seeds"``."""
    return f"{BANDS[band]} over {seeds} seed{'s' if seeds != 1 else ''}" + (" (band clipped at 0)" if clipped else "")


def wrap_title(lines, width_inches: float) -> str:
    """Title lines wrapped to a figure ``width_inches`` wide (about 15 characters an inch at 9 points)."""
    return "\n".join(textwrap.fill(str(line), max(20, int(15 * width_inches))) for line in lines)


def figure_title(plan) -> str:
    """The experiment's name, for figure titles."""
    return str(plan.spec.experiment.name or "experiment") if plan.spec is not None else "experiment"


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


def reducer(results, metric: str):
    """``metric``'s reducer in ``results`` (the first policy's that has it; None where unknown)."""
    return next((results.reduce.get(label, {}).get(metric) for label, ms in results.names.items() if metric in ms),
                None)


def is_curve(reduce) -> bool:
    """Whether a metric with this reducer is drawn over rounds: a ``"sum"`` or a ``"lastN"``."""
    return bool(reduce) and (reduce == "sum" or reduce.startswith("last"))


def chosen(results, policies=None, settings=None):
    """``keep(label, point)``: whether a grid point is among ``policies`` (labels or columns) and ``settings``
    (dicts whose items the point's setting has, compared as text); a name or setting the run lacks raises one
    ``ValueError`` naming it and what the run has."""
    names = {c for label, ps in results.grid.items() for c in [label] + [column(label, p.params) for p in ps]}
    for name in policies or ():
        if name not in names:
            raise ValueError(f"policies: {name!r} is no policy of this run{did_you_mean(name, names)}; "
                             f"its policies: {list(results.grid)}")
    every = [p.setting for ps in results.grid.values() for p in ps]

    def has(setting, want) -> bool:
        return all(k in setting and plain(setting[k]) == plain(v) for k, v in want.items())

    for want in settings or ():
        if not isinstance(want, dict) or not any(has(s, want) for s in every):
            raise ValueError(f"settings: {want!r} matches no setting of this run; its settings: "
                             f"{list(dict.fromkeys(setting_title(s) for s in every))}")

    def keep(label, point) -> bool:
        ok = not policies or label in policies or column(label, point.params) in policies
        return ok and (not settings or any(has(point.setting, w) for w in settings))

    return keep


def _panels(results, keep) -> list:
    """The settings of the kept grid points, in order, at most :data:`MAX_PANELS`."""
    out: list = []
    for label, points in results.grid.items():
        for p in points:
            if keep(label, p) and p.setting not in out:
                out.append(p.setting)
    return out[:MAX_PANELS]


def _grid_axes(count: int, width: float = PANEL[0], height: float = PANEL[1], most: int = 4):
    cols = max(1, min(most, count))
    rows = math.ceil(max(count, 1) / cols)
    fig = Figure(figsize=(width * cols, height * rows + 0.5), layout="constrained")
    return fig, fig.subplots(rows, cols, squeeze=False)


def _finish(fig, axes, used: int, title: list, handles=(), names=()):
    """Blank the unused panels, title the figure and put the legend below the panels (unique names)."""
    for ax in list(axes.flat)[used:]:
        ax.axis("off")
    unique = dict(zip(names, handles, strict=True))
    place_legend(fig, list(unique.values()), list(unique))
    fig.suptitle(wrap_title(title, fig.get_figwidth()), fontsize=9)
    return fig


def _legend_of(axes) -> tuple:
    handles, names = [], []
    for ax in axes.flat:
        h, n = ax.get_legend_handles_labels()
        handles += h
        names += n
    return handles, names


def metric_figure(plan, curves: dict, m: str, against: str = "round", band: str = "ci", policies=None,
                  settings=None):
    """A Figure of metric ``m`` for every policy (or those named), one panel per setting (up to 16).

    A ``"sum"`` metric is drawn as its cumulative curves, a ``"lastN"`` one as the mean of its last N rounds at
    each checkpoint, any other as final values (:func:`finals_figure`). ``against = "spent"`` draws the curves
    against the budget spent by each checkpoint (the mean over seeds). ``band``: what the line and band are
    (:data:`BANDS`; default the mean with its 95% CI), named in the title with the experiment and the seeds.
    Legend entries are the report's columns (``THV-UCB (η = 0.003)``), a policy in the same colour in every
    figure of the run. Where pulls cost, the round axis ends where the last seed's budget ran out.

    Args:
      plan: the run's :class:`~mobandit_jax.analysis.results.Results`.
      curves: its curves (``curves.npz``).
      m: a metric name.
      against: ``"round"`` or ``"spent"``.
      band: a key of :data:`BANDS`.
      policies: labels or columns to draw (default all).
      settings: setting dicts to draw (default all).

    Returns:
      A matplotlib Figure.
    """
    reduce = reducer(plan, m)
    if not is_curve(reduce):
        return finals_figure(plan, m, band, policies, settings)
    keep = chosen(plan, policies, settings)
    panels = _panels(plan, keep)
    looks = policy_styles(plan.grid, column)
    fig, axes = _grid_axes(len(panels))
    bounds = getattr(plan, "bounds", {}) or {}
    seeds, clipped = 0, False
    window = None if reduce == "sum" else int(reduce[4:])
    for ax, s in zip(axes.flat, panels, strict=False):
        ends = []
        for label, points in plan.grid.items():
            if m not in plan.names[label]:
                continue
            low = (bounds.get(label, {}).get(m) or (None, None))[0] if window is None else None
            for g, point in enumerate(points):
                if point.setting != s or not keep(label, point):
                    continue
                x = curves["checkpoints"] if against == "round" else curves[f"{label}|{g}|spent"].mean(axis=0)
                runs = curves[f"{label}|{g}|{m}"]
                if window is not None:
                    runs = trailing_mean(runs, curves[f"{label}|{g}|rounds"], window)
                seeds = max(seeds, runs.shape[0])
                name = column(label, point.params)
                clipped |= draw_band(ax, x, runs, name, band, low, getattr(plan, "base_seed", 0), looks[name])
                if against == "round" and paid(curves, label, g):
                    ends.append(f"{label}|{g}")
        end = last_round(curves, ends)
        if end is not None:
            ax.set_xlim(right=end)
        ax.set_title(setting_title(s), fontsize=8)
        ax.set_xlabel("round" if against == "round" else "budget spent", fontsize=8)
        ax.set_ylabel(f"cumulative {m}" if window is None else f"{m}: mean of the last {window} rounds", fontsize=8)
        ax.tick_params(labelsize=7)
    what = band_caption(band, seeds, clipped and band == "std")
    return _finish(fig, axes, len(panels), [figure_title(plan), f"{m}: {what}"], *_legend_of(axes))


def final_interval(values, band: str, bounds=None, seed: int = 0) -> tuple:
    """``(point, low, high)`` of per-seed final ``values`` as the report's cells give them: the mean and its 95%
    interval (Wilson's for a rate, ``bounds == (0, 1)``), mean +- 1 std, or a median / IQM bootstrap interval."""
    values = np.asarray(values, np.float64)
    if band == "ci":
        f = stats.interval_fields(values, bounds)
        return float(np.mean(values)), f["ci_low"], f["ci_high"]
    mid, lo, hi = band_values(values[:, None], band, seed)
    return float(mid[0]), float(lo[0]), float(hi[0])


def finals_figure(results, m: str, band: str = "ci", policies=None, settings=None):
    """A Figure of ``m``'s final values: a panel per setting, a row per policy column, its point and interval
    (:func:`final_interval`), in the policy's colour; the rows named on the axis, so no legend.

    Args:
      results: a :class:`~mobandit_jax.analysis.results.Results` with per-seed finals.
      m: a metric name.
      band: a key of :data:`BANDS`.
      policies: labels or columns to draw (default all).
      settings: setting dicts to draw (default all).

    Returns:
      A matplotlib Figure.
    """
    keep = chosen(results, policies, settings)
    panels = _panels(results, keep)
    looks = policy_styles(results.grid, column)
    rows = [(label, g, column(label, p.params)) for label, ps in results.grid.items() if m in results.names[label]
            for g, p in enumerate(ps) if keep(label, p)]
    longest = max((len(name) for *_, name in rows), default=0)
    per_panel = max(len({n for *_, n in rows}), 1)
    fig, axes = _grid_axes(len(panels), PANEL[0] + CHAR_INCHES * longest, max(PANEL[1], 0.22 * per_panel + 1.0),
                           most=2)
    seeds = 0
    for ax, s in zip(axes.flat, panels, strict=False):
        mine = [(label, g, name) for label, g, name in rows if results.grid[label][g].setting == s]
        for y, (label, g, name) in enumerate(mine):
            values = results.finals[f"{label}|{g}|{m}"]
            seeds = max(seeds, len(values))
            mid, lo, hi = final_interval(values, band, results.bounds.get(label, {}).get(m), results.base_seed)
            look = looks[name]
            ax.errorbar([mid], [-y], xerr=[[mid - lo], [hi - mid]], color=look["color"], marker=look["marker"],
                        markersize=4, capsize=2, linestyle="none")
        ax.set_yticks([-y for y in range(len(mine))], [name for *_, name in mine], fontsize=7)
        ax.set_ylim(-len(mine) + 0.5, 0.5)
        ax.set_title(setting_title(s), fontsize=8)
        ax.set_xlabel(f"final {m}", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    return _finish(fig, axes, len(panels), [figure_title(results), f"{m}: {band_caption(band, seeds)}"])


def log_spaced(values) -> bool:
    """Whether a grid's numbers are spread evenly on a log scale rather than a linear one (all positive, spanning
    a factor of 10 or more: ``0.003, 0.01, 0.03, 0.1, 0.3`` or ``0.1, 0.01, 0.001``)."""
    v = np.unique(np.asarray(values, np.float64))
    if len(v) < 2 or v[0] <= 0 or v[-1] / v[0] < 10:
        return False
    spread = lambda d: float(np.std(d) / np.mean(d))  # noqa: E731 (how uneven the steps are)
    return spread(np.diff(np.log(v))) <= spread(np.diff(v))


def _axis(results, option: str, metric: str, values) -> tuple:
    """``(x of an option's value, x label, log scale)`` for a grid figure of ``metric`` against ``option``."""
    label = next(iter(results.grid), None)
    error = (tuple(results.bounds.get(label, {}).get(metric) or ()) == (0, 1) and results.metric_goal(metric) == "min")
    if option == CONFIDENCE and error:
        return (lambda d: d), GREEK[option], True
    if option == CONFIDENCE:
        return (lambda d: math.log(1 / d)), f"log(1/{GREEK[option]})", False
    return (lambda v: v), option, log_spaced(values)


def dodge(x, line: int, lines: int, log: bool, span: float) -> np.ndarray:
    """``x`` moved sideways for line ``line`` of ``lines`` (so that error bars at one x do not hide each other):
    by a factor on a log axis, by a share of the axis' ``span`` on a linear one."""
    step = line - (lines - 1) / 2
    x = np.asarray(x, np.float64)
    return x * math.exp(0.04 * step) if log else x + 0.012 * span * step


def _grid_lines(results, metric: str, option: str, keys: dict, keep) -> dict:
    """``{(label, other options, setting title): grid indices}``: the points of one line of a grid figure."""
    lines: dict = {}
    for label, swept in keys.items():
        if option not in swept:
            continue
        for g, point in enumerate(results.grid[label]):
            if keep(label, point):
                rest = {k: point.params[k] for k in swept if k != option}
                lines.setdefault((label, column(label, rest), setting_title(point.setting)), []).append(g)
    return lines


def grid_figure(results, metric: str, policies=None, settings=None):
    """A Figure of ``metric``'s final mean (95% CI bars) against each swept option, a panel per option.

    A line per policy, setting and values of its other swept options (:meth:`Results.grid_winners`'s grid), in
    the policy's colour; a log axis for a log-spaced grid, ``log(1/delta)`` for a confidence level (an error rate
    against ``delta`` itself, with the line ``error = delta``). None where no policy sweeps an option of numbers.

    Args:
      results: a :class:`~mobandit_jax.analysis.results.Results` with per-seed finals.
      metric: a metric name.
      policies: labels or columns to draw (default all).
      settings: setting dicts to draw (default all).

    Returns:
      A matplotlib Figure, or None.
    """
    keep = chosen(results, policies, settings)
    swept = {label: [k for k in varying(p.params for p in points)
                     if all(isinstance(p.params.get(k), (int, float)) and not isinstance(p.params.get(k), bool)
                            for p in points)]
             for label, points in results.grid.items() if metric in results.names.get(label, ())}
    options = list(dict.fromkeys(k for ks in swept.values() for k in ks))
    if not options:
        return None
    order = {label: i for i, label in enumerate(results.grid)}
    fig, axes = _grid_axes(len(options), most=3)
    seeds = 0
    for ax, option in zip(axes.flat, options, strict=False):
        lines = _grid_lines(results, metric, option, swept, keep)
        values = [results.grid[label][g].params[option] for (label, *_), gs in lines.items() for g in gs]
        to_x, xlabel, log = _axis(results, option, metric, values)
        span = float(np.ptp([to_x(v) for v in values])) if values else 0.0
        rests: dict = {}
        for j, ((label, rest, where), members) in enumerate(lines.items()):
            members.sort(key=lambda g, label=label: results.grid[label][g].params[option])
            x = dodge([to_x(results.grid[label][g].params[option]) for g in members], j, len(lines), log, span)
            ci = [results.interval(label, metric, **results.grid[label][g].params,
                                   **results.grid[label][g].setting) for g in members]
            mid, lo, hi = (np.array(c, float) for c in zip(*ci, strict=True))
            seeds = max(seeds, len(results.finals[f"{label}|{members[0]}|{metric}"]))
            name = " ".join(t for t in (rest, "" if where == "default" else f"[{where}]") if t)
            look = style(order[label], rests.setdefault(label, {}).setdefault(rest, len(rests[label])))
            ax.errorbar(x, mid, yerr=np.stack([mid - lo, hi - mid]), capsize=2, markersize=4, linewidth=1.2,
                        label=name, **look)
        if log:
            ticks = sorted(set(values))
            ax.set_xscale("log")
            ax.set_xticks(ticks, [plain(v) for v in ticks])
            ax.xaxis.set_minor_locator(NullLocator())
        if option == CONFIDENCE and log and values:
            ticks = np.array(sorted(set(values)))
            ax.plot(ticks, ticks, color="0.4", linestyle=":", linewidth=1, label=f"error = {GREEK[CONFIDENCE]}")
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(f"final {metric}", fontsize=8)
        ax.set_title(f"{metric} against {xlabel}", fontsize=8)
        ax.tick_params(labelsize=7)
    title = [figure_title(results), f"{metric} over the grid: {band_caption('ci', seeds)}"]
    return _finish(fig, axes, len(options), title, *_legend_of(axes))


def figures(results, out: Path, band: str = "ci", format: str = "png") -> list:
    """Write every figure of a run into ``out`` and return their file names.

    Per ``"sum"`` metric, ``<metric>.png`` (its cumulative curves; where pulls cost, also
    ``<metric>_by_budget.png`` against the budget spent); per ``"lastN"`` metric, ``<metric>.png`` (the mean of
    its last N rounds over time); per other metric with a goal, ``final_<metric>.png`` (final values); per metric
    with a goal where a policy sweeps an option of numbers, ``grid_<metric>.png``.

    Args:
      results: the run's :class:`~mobandit_jax.analysis.results.Results`.
      out: the run folder.
      band: the curves' band (:data:`BANDS`).
      format: ``"png"``, ``"pdf"`` or ``"svg"`` (:mod:`~mobandit_jax.analysis.style`).

    Returns:
      The names of the files written, in ``format``.
    """
    curves = results.arrays
    metrics = list(dict.fromkeys(m for ms in results.names.values() for m in ms))
    costly = any(paid(curves, label, g) for label in results.grid for g in range(len(results.grid[label])))
    drawn = []
    for m in metrics:
        reduce = reducer(results, m)
        if is_curve(reduce):
            kinds = [("round", f"{m}.png")] + ([("spent", f"{m}_by_budget.png")] if costly and reduce == "sum" else [])
            drawn += [(name, metric_figure(results, curves, m, against, band)) for against, name in kinds]
        elif results.metric_goal(m) and results.finals:
            drawn.append((f"final_{m}.png", finals_figure(results, m, band)))
    for m in metrics:
        if results.metric_goal(m) and results.finals:
            fig = grid_figure(results, m)
            drawn += [(f"grid_{m}.png", fig)] if fig is not None else []
    names = []
    for name, fig in drawn:
        names.append(with_format(name, format))
        save(fig, Path(out) / names[-1])
    return names
