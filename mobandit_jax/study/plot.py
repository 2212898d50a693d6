"""A study's figure: what a multi-objective identification study knows, at a glance.

Three panels, drawn from :meth:`Study.arms` (one row per arm: ``pulls``, each objective's mean and 95% interval
``NAME``, ``NAME_low``, ``NAME_high``, ``recommended``, ``state``) and :meth:`Study.history` (one row per ticket):

- the estimated means in objective space, each arm with its interval: two objectives as a scatter with error bars,
  more as parallel coordinates (one axis per objective, scaled to the arms' intervals); the recommended, accepted,
  active and rejected arms told apart by colour and marker, the never-evaluated ones named below;
- the budget spent over time against ``B`` (or, without a budget, the evaluations told against the horizon);
- the evaluations told per arm.

Colours are Okabe and Ito's colour-blind-safe palette, each category also has its own marker. :func:`save` writes
PNG (at :data:`DPI`), PDF or SVG by the file's suffix.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from .errors import StudyError

DPI = 200
SUFFIXES = (".png", ".pdf", ".svg")
LABEL_ARMS = 30  # above this many evaluated arms, only the recommended ones are named in objective space
# category: (legend label, colour (Okabe-Ito), marker)
CATEGORIES = {
    "recommended": ("recommended", "#009E73", "D"),
    "accepted": ("accepted", "#56B4E9", "s"),
    "active": ("still active", "#0072B2", "o"),
    "rejected": ("rejected", "#D55E00", "X"),
    "unevaluated": ("never evaluated", "#999999", "."),
}


def categories(arms) -> list:
    """Each arm's category: ``"recommended"`` where it is, else its ``state``.

    Args:
      arms: the frame of :meth:`Study.arms`.

    Returns:
      One key of :data:`CATEGORIES` per row.
    """
    return ["recommended" if bool(r) else str(s) for r, s in zip(arms["recommended"], arms["state"], strict=True)]


def _evaluated(arms):
    return arms[arms["pulls"] > 0]


def draw_front(ax, arms, objectives):
    """Draw the estimated means of the evaluated arms in objective space with their 95% intervals (two objectives: a
    scatter; more: parallel coordinates), the never-evaluated arms named above the axes.

    Args:
      ax: the matplotlib Axes.
      arms: the frame of :meth:`Study.arms`.
      objectives: the objectives' names, in order.

    Returns:
      None.
    """
    seen = _evaluated(arms)
    kinds = categories(seen)
    if len(objectives) == 2:
        _scatter(ax, seen, kinds, objectives)
    else:
        _parallel(ax, seen, kinds, objectives)
    never = [str(a) for a in arms["arm"][arms["pulls"] <= 0]]
    if never:
        text = "never evaluated: " + ", ".join(never)
        ax.set_title(textwrap.fill(text, 70), fontsize=8, loc="left", color=CATEGORIES["unevaluated"][1])


def _scatter(ax, seen, kinds, objectives):
    x, y = objectives
    label = len(seen) <= LABEL_ARMS
    for kind, (name, colour, marker) in CATEGORIES.items():
        rows = seen[[k == kind for k in kinds]]
        if not len(rows):
            continue
        xerr = [rows[x] - rows[f"{x}_low"], rows[f"{x}_high"] - rows[x]]
        yerr = [rows[y] - rows[f"{y}_low"], rows[f"{y}_high"] - rows[y]]
        ax.errorbar(rows[x], rows[y], xerr=np.abs(xerr), yerr=np.abs(yerr), fmt=marker, color=colour, ms=6,
                    elinewidth=0.8, capsize=2, alpha=0.9, label=name, zorder=3 if kind == "recommended" else 2)
        for _, r in rows.iterrows():
            if label or kind == "recommended":
                ax.annotate(str(r["arm"]), (r[x], r[y]), xytext=(4, 4), textcoords="offset points", fontsize=7,
                            color=colour)
    ax.set_xlabel(f"{x} (estimated mean, 95% interval)")
    ax.set_ylabel(f"{y} (estimated mean, 95% interval)")
    ax.grid(alpha=0.3)


def _parallel(ax, seen, kinds, objectives):
    def columns(suffix):
        return seen[[o + suffix for o in objectives]].to_numpy(float).reshape(-1, len(objectives))

    means, lows, highs = columns(""), columns("_low"), columns("_high")
    # an arm told once has a mean and no interval: the axes span the means and the intervals there are
    lo = np.nanmin(np.vstack([means, lows]), axis=0) if len(means) else np.zeros(len(objectives))
    hi = np.nanmax(np.vstack([means, highs]), axis=0) if len(means) else np.ones(len(objectives))
    span = np.where(hi > lo, hi - lo, 1.0)
    xs = np.arange(len(objectives))
    shown = set()
    for i, kind in enumerate(kinds):
        name, colour, marker = CATEGORIES[kind]
        scaled = (means[i] - lo) / span
        ax.plot(xs, scaled, marker=marker, color=colour, lw=1.2 if kind == "recommended" else 0.8, ms=5,
                label=None if kind in shown else name, zorder=3 if kind == "recommended" else 2)
        ax.vlines(xs + 0.12 * (i + 0.5 - len(kinds) / 2) / len(kinds), (lows[i] - lo) / span,
                  (highs[i] - lo) / span, color=colour, lw=0.8, alpha=0.7)
        shown.add(kind)
        if kind == "recommended" or len(kinds) <= LABEL_ARMS:
            ax.annotate(str(seen["arm"].iloc[i]), (xs[-1], scaled[-1]), xytext=(5, 0), textcoords="offset points",
                        fontsize=7, color=colour, va="center")
    for j in xs:
        ax.axvline(j, color="0.85", lw=0.6, zorder=0)
        ax.annotate(f"{lo[j]:.3g}", (j, 0), xytext=(0, -10), textcoords="offset points", ha="center", fontsize=7)
        ax.annotate(f"{hi[j]:.3g}", (j, 1), xytext=(0, 4), textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(xs, [str(o) for o in objectives])
    ax.set_yticks([])
    ax.set_xlim(-0.2, len(objectives) - 1 + 0.6)
    ax.set_ylim(-0.08, 1.08)
    ax.set_ylabel("estimated mean and 95% interval\n(each axis from its lowest to its highest value)")


def _clock(seconds: np.ndarray) -> tuple:
    span = float(seconds.max()) if len(seconds) else 0.0
    for unit, size in (("h", 3600.0), ("min", 60.0)):
        if span >= 2 * size:
            return seconds / size, unit
    return seconds, "s"


def draw_budget(ax, history, budget=None, horizon=None):
    """Draw the budget spent (told costs summed) over the time since the first ask, against ``budget``; without a
    budget, the evaluations told against ``horizon``.

    Args:
      ax: the matplotlib Axes.
      history: the frame of :meth:`Study.history`.
      budget: ``B``, or None.
      horizon: the evaluations planned, or None (then none is drawn).

    Returns:
      None.
    """
    told = history[history["state"] == "told"].sort_values("told")
    start = history["asked"].min() if len(history) else None
    seconds = np.array([(t - start).total_seconds() for t in told["told"]]) if len(told) else np.zeros(0)
    t, unit = _clock(seconds)
    if budget is not None:
        spent = np.cumsum(told["cost"].fillna(0.0).to_numpy(float))
        ax.step(np.r_[0.0, t], np.r_[0.0, spent], where="post", color="#0072B2", label="spent")
        ax.axhline(budget, color="#D55E00", ls="--", lw=1, label=f"budget B = {budget:g}")
        ax.set_ylabel("budget spent")
        ax.set_title(f"budget: {spent[-1] if len(spent) else 0.0:.4g} of {budget:g} spent", fontsize=9, loc="left")
    else:
        ax.step(np.r_[0.0, t], np.arange(len(t) + 1), where="post", color="#0072B2", label="told")
        if horizon:
            ax.axhline(horizon, color="#D55E00", ls="--", lw=1, label=f"horizon {horizon:g}")
        ax.set_ylabel("evaluations told")
        ax.set_title(f"{len(t)} evaluations told" + (f" of {horizon:g}" if horizon else ""), fontsize=9, loc="left")
    ax.set_xlabel(f"time since the first ask ({unit})")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)


def draw_pulls(ax, arms):
    """Draw the evaluations told per arm, one horizontal bar each, coloured by category.

    Args:
      ax: the matplotlib Axes.
      arms: the frame of :meth:`Study.arms`.

    Returns:
      None.
    """
    kinds = categories(arms)
    y = np.arange(len(arms))[::-1]
    ax.barh(y, arms["pulls"].to_numpy(float), color=[CATEGORIES[k][1] for k in kinds], height=0.7)
    ax.set_yticks(y, [str(a) for a in arms["arm"]], fontsize=7 if len(arms) > 12 else 8)
    ax.set_ylim(-0.6, len(arms) - 0.4)
    ax.set_xlim(left=0)
    ax.set_xlabel("evaluations told")
    ax.set_title("evaluations per arm", fontsize=9, loc="left")
    ax.grid(alpha=0.3, axis="x")


def clipped(arms, objectives, bounds=None):
    """``arms`` with each interval cut to the objective's bounds (a mean lies within them).

    Args:
      arms: the frame of :meth:`Study.arms`.
      objectives: the objectives' names, in order.
      bounds: ``(lower, upper)``, a value per objective, or None.

    Returns:
      A copy with the ``_low`` and ``_high`` columns clipped (``arms`` itself without bounds).
    """
    if bounds is None:
        return arms
    arms = arms.copy()
    for o, lo, hi in zip(objectives, *bounds, strict=True):
        for c in (f"{o}_low", f"{o}_high"):
            arms[c] = arms[c].clip(lo, hi)
    return arms


def figure(arms, history, objectives, budget=None, horizon=None, title: str = "", bounds=None) -> Figure:
    """The study's figure (module docstring) from its frames.

    Args:
      arms: one row per arm (:meth:`Study.arms`'s columns).
      history: one row per ticket (:meth:`Study.history`'s columns).
      objectives: the objectives' names, in order.
      budget: ``B``, or None.
      horizon: the evaluations planned, shown when there is no budget (None: none shown).
      title: the figure's title.
      bounds: ``(lower, upper)``, a value per objective, to cut the intervals to (None: as they are).

    Returns:
      A matplotlib Figure (not attached to pyplot).
    """
    arms = clipped(arms, objectives, bounds)
    rows = max(len(arms), 8)
    fig = Figure(figsize=(12, max(6.0, 0.2 * rows + 3.0)), layout="constrained")
    grid = fig.add_gridspec(2, 2, width_ratios=(1.5, 1), height_ratios=(1, max(1.0, rows / 16)))
    front = fig.add_subplot(grid[:, 0])
    draw_front(front, arms, list(objectives))
    handles, labels = front.get_legend_handles_labels()
    if handles:
        front.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(0, -0.08), ncols=len(handles),
                     frameon=False)
    draw_budget(fig.add_subplot(grid[0, 1]), history, budget, horizon)
    draw_pulls(fig.add_subplot(grid[1, 1]), arms)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def title(study, status: dict) -> str:
    """A one-line description of a study's state.

    Args:
      study: the :class:`~mobandit_jax.study.Study`.
      status: its ``status()``.

    Returns:
      Where it is, its policy, the evaluations told and pending, and why it ended.
    """
    ended = status.get("reason") if status.get("finished") else None
    return (f"study {study.path}: {study.spec.policy}, {status['told']} evaluations told"
            + (f", {status['pending']} pending" if status.get("pending") else "")
            + (f", ended ({ended})" if ended else ""))


def plot(study) -> Figure:
    """The figure of a study (module docstring), as it stands now.

    Args:
      study: a :class:`~mobandit_jax.study.Study`.

    Returns:
      A matplotlib Figure; write it with :func:`save` (or ``fig.savefig``).
    """
    return spec_figure(study.spec, study.arms(), study.history(), title(study, study.status()))


def bounds(spec):
    """The bounds of a study's objectives.

    Args:
      spec: the study's :class:`~.spec.StudySpec`.

    Returns:
      ``(lower, upper)``, or None where it has none (a noise scale instead).
    """
    return None if spec.lower is None else (spec.lower, spec.upper)


def spec_figure(spec, arms, history, title: str = "") -> Figure:
    """:func:`figure` of the frames of a study of ``spec``.

    Args:
      spec: the study's :class:`~.spec.StudySpec` (its objectives, budget, bounds and, without a budget, the horizon
        the user named).
      arms: the frame of :meth:`Study.arms`.
      history: the frame of :meth:`Study.history`.
      title: the figure's title.

    Returns:
      A matplotlib Figure.
    """
    horizon = spec.plain.get("study", {}).get("horizon") if spec.budget is None else None  # the user's, if any
    return figure(arms, history, spec.objectives, spec.budget, horizon, title, bounds(spec))


def figure_path(path) -> Path:
    """A figure's file, checked.

    Args:
      path: the file's path.

    Returns:
      It as a :class:`~pathlib.Path`; refused (:class:`StudyError`) unless it ends in one of :data:`SUFFIXES`.
    """
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise StudyError(f"{str(path)!r}: a figure's file must end in one of {', '.join(SUFFIXES)}")
    return path


def save(fig: Figure, path) -> Path:
    """Write ``fig`` to ``path``: PNG at :data:`DPI`, PDF or SVG, by the file's suffix.

    Args:
      fig: the figure.
      path: the file to write (its folder is made).

    Returns:
      The path written.
    """
    path = figure_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    return path
