"""How every figure looks: a colour-blind-safe palette, one style per policy, legends inside the canvas, and the
file formats (PNG at :data:`DPI`, PDF, SVG).

Colours are Okabe and Ito's eight (*Color Universal Design*, 2008), yellow last; beyond eight policies, and for
the grid points of one policy, line styles and markers tell the lines apart. A policy keeps its colour in every
figure of a run: its place among the run's labels picks it (:func:`policy_styles`). Legends go below the panels
(matplotlib's ``layout="constrained"`` with ``loc="outside lower center"``), in as many columns as the figure's
width holds, the figure grown to hold them (:func:`place_legend`).
"""
from __future__ import annotations

import math
from pathlib import Path

from matplotlib import rc_context

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
DPI = 200  # PNG resolution: a 3.4-inch panel (a paper's column) is 680 pixels wide
FORMATS = ("png", "pdf", "svg")
LEGEND_FONT = 7  # points
CHAR_INCHES = 0.5 * LEGEND_FONT / 72  # the mean width of a legend character
HANDLE_INCHES = 0.55  # a legend entry's line, marker and padding


def style(policy: int, point: int = 0) -> dict:
    """The line style of grid point ``point`` of the ``policy``-th policy of a run.

    Args:
      policy: the policy's place among the run's labels.
      point: the grid point's place among the policy's points (0 for a policy without options).

    Returns:
      ``{"color", "linestyle", "marker"}`` for ``Axes.plot`` and ``Axes.errorbar``.
    """
    lap = policy // len(PALETTE)  # beyond eight policies the colours come again, with other lines and markers
    return {"color": PALETTE[policy % len(PALETTE)], "linestyle": LINESTYLES[(lap + point) % len(LINESTYLES)],
            "marker": MARKERS[(3 * lap + point) % len(MARKERS)]}


def policy_styles(grid: dict, name) -> dict:
    """The style of every policy column of a run: a colour per label, a line and marker per grid point.

    Args:
      grid: ``{label: [GridPoint, ...]}`` (:attr:`~mobandit_jax.analysis.results.Results.grid`).
      name: ``name(label, params)``, the column's name (:func:`~mobandit_jax.analysis.files.column`).

    Returns:
      ``{column name: style}`` (:func:`style`).
    """
    out: dict = {}
    for i, (label, points) in enumerate(grid.items()):
        columns = list(dict.fromkeys(name(label, p.params) for p in points))
        out.update({c: style(i, j) for j, c in enumerate(columns)})
    return out


def entry_inches(text: str) -> float:
    """About how wide a legend entry showing ``text`` is, in inches."""
    longest = max((len(line) for line in str(text).splitlines()), default=0)
    return HANDLE_INCHES + CHAR_INCHES * longest


def place_legend(fig, handles, names, title: str | None = None):
    """A legend below the panels, every entry inside the canvas: as many columns as the figure's width holds
    (the figure widened for one entry wider than it) and the figure made taller by the legend's rows.

    Args:
      fig: a Figure made with ``layout="constrained"``.
      handles: the legend's artists.
      names: their labels.
      title: the legend's title, if any.

    Returns:
      The legend, or None for no entries.
    """
    if not handles:
        return None
    width, height = fig.get_size_inches()
    entry = max(entry_inches(n) for n in list(names) + ([title] if title else []))
    width = max(width, entry + 0.4)
    ncols = max(1, min(len(handles), int((width - 0.3) // entry)))
    rows = math.ceil(len(handles) / ncols) + (1 if title else 0)
    fig.set_size_inches(width, height + rows * 0.17 + 0.15)
    return fig.legend(handles, names, loc="outside lower center", ncols=ncols, fontsize=LEGEND_FONT,
                      title=title, title_fontsize=LEGEND_FONT, frameon=False)


def figure_format(path, format: str | None = None) -> str:
    """The file format of a figure: ``format`` if given, else ``path``'s suffix; one of :data:`FORMATS`."""
    fmt = (format or Path(path).suffix.lstrip(".") or "png").lower()
    if fmt not in FORMATS:
        raise ValueError(f"figure format {fmt!r} (of {str(path)!r}); allowed: {list(FORMATS)}")
    return fmt


def save(fig, path, format: str | None = None, **metadata):
    """Write ``fig`` as a PNG at :data:`DPI`, a PDF or an SVG (its text kept as text), its title also in the
    file's ``Title`` (readable without looking at the pixels: ``PIL.Image.open(path).text["Title"]``).

    Args:
      fig: the Figure.
      path: the file, or a binary file object (then ``format`` names the format; default PNG).
      format: ``"png"``, ``"pdf"`` or ``"svg"``; default ``path``'s suffix.
      **metadata: more text entries (a PNG's chunks; a PDF's or SVG's ``Creator``).
    """
    fmt = figure_format(path if isinstance(path, (str, Path)) else "", format)
    title = " ".join((fig.get_suptitle() if hasattr(fig, "get_suptitle") else "").split())
    meta = {"Title": title, **metadata}
    if fmt != "png":  # a PDF's or SVG's entries are fixed names; no date, so that the same figure gives the same file
        meta = {"Title": title, ("CreationDate" if fmt == "pdf" else "Date"): None}
        if metadata:  # one creator: the first entry given (compare's "Software")
            meta["Creator"] = next(iter(metadata.values()))
    with rc_context({"svg.fonttype": "none", "pdf.fonttype": 42, "svg.hashsalt": "mobandit"}):
        fig.savefig(path, format=fmt, dpi=DPI, metadata=meta, facecolor="white")


def with_format(name: str, format: str = "png") -> str:
    """A figure's file name ``name`` (``regret_gap.png``) in ``format`` (``regret_gap.pdf``)."""
    return str(Path(name).with_suffix("." + figure_format(name, format)))
