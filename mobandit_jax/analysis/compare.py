"""``mobandit compare``: several run folders side by side, as markdown tables and one PNG figure.

One table per metric: a row per (setting, policy column), a column per run folder, cells
``mean ± std`` over seeds (from each folder's ``summary.json``; blank where a run has no such
record, so runs of other policies, settings, metrics, seeds or horizons sit side by side). The
figure has one panel per metric: grouped bars of the final mean with ±1 std error bars, a bar per
run in each row's group. Only ``summary.json`` and the ``run.json`` marker are read.

The figure is a PNG written atomically with the text chunk ``Software`` = :data:`SOFTWARE`: ``--out``
may name an existing file only if it is such a PNG (a figure compare wrote earlier); any other
existing file, a folder, a missing folder or a name not ending in ``.png`` is refused.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

from . import files
from .files import column
from .plots import setting_title
from .report import fmt_mean_std

SOFTWARE = "mobandit compare"  # the PNG text chunk that marks a figure written by compare
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_WIDTH = 160.0  # inches: the figure stays below Agg's 2**16 pixels at 110 dpi however many rows
def read_records(path) -> list:
    """The records of run folder ``path``'s ``summary.json``; a bad folder raises a one-line ``ValueError``."""
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"run folder {str(path)!r} " + ("is a file" if path.exists() else "does not exist"))
    try:
        marker = files.run_marker(path)
    except files.RunFolderError:
        marker = None
    if marker is None:
        raise ValueError(f"{path} is not a run folder (no {files.MARKER} of {files.TOOL}): give folders that "
                         "`mobandit run` wrote")
    summary = path / "summary.json"
    if not summary.is_file():
        raise ValueError(f"run folder {path} has no summary.json: its run has not finished (run the same "
                         "`mobandit run` command again to finish it)")
    try:
        records = json.loads(summary.read_text(encoding="utf-8"))["records"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{summary} cannot be read, truncated or not a summary of `mobandit run` "
                         f"({type(err).__name__}: {err})") from None
    if not isinstance(records, list) or not records:
        raise ValueError(f"{summary} has no records of `mobandit run`")
    for i, r in enumerate(records):
        problem = files.record_problem(r)
        if problem:
            raise ValueError(f"{summary}: record {i} {problem}")
    return records


def load_runs(dirs) -> dict:
    """``{run name: records}`` of each run folder (named by its folder name, else by its path)."""
    runs, seen = {}, set()
    for d in dirs:
        path = Path(d)
        records = read_records(path)
        if path.resolve() in seen:
            raise ValueError(f"run folder {path} is given twice")
        seen.add(path.resolve())
        name = path.resolve().name if path.resolve().name not in runs else str(path)
        runs[name] = records
    return runs


def _metrics(records) -> list:
    return list(dict.fromkeys(r["metric"] for r in records))


def pick_metrics(runs: dict, wanted) -> list:
    """The metrics to compare: ``wanted`` (each must be in some run), else every metric, in order."""
    known = list(dict.fromkeys(m for records in runs.values() for m in _metrics(records)))
    for m in wanted or ():
        if m not in known:
            raise ValueError(f"--metric {m!r} is in none of the runs; their metrics: {known}")
    return list(dict.fromkeys(wanted)) if wanted else known


def cells(runs: dict, metric: str) -> dict:
    """``{(setting title, policy column): {run name: (mean, std)}}`` in order of first appearance."""
    table: dict = {}
    for name, records in runs.items():
        for r in records:
            if r["metric"] == metric:
                row = (setting_title(r["setting"]), column(r["policy"], r["params"]))
                table.setdefault(row, {})[name] = (r["mean"], r["std"])
    return table


def tables(runs: dict, metrics: list) -> str:
    """Markdown tables, one per metric: rows (setting, policy), one column per run, blank where it has none."""
    lines = []
    for m in metrics:
        lines += [f"### {m}", "", "| setting | policy | " + " | ".join(runs) + " |", "|---" * (len(runs) + 2) + "|"]
        for (setting, policy), values in cells(runs, m).items():
            shown = [fmt_mean_std(*values[n]) if n in values else "" for n in runs]
            lines.append(f"| {setting} | {policy} | " + " | ".join(shown) + " |")
        lines.append("")
    return "\n".join(lines)


def figure(runs: dict, metrics: list):
    """A Figure with one panel per metric: grouped bars of final means (±1 std), a bar per run."""
    import numpy as np

    from .plots import Figure

    rows = max(len(cells(runs, m)) for m in metrics)
    fig = Figure(figsize=(min(MAX_WIDTH, max(6.0, 1.2 * rows)), 3.2 * len(metrics)))
    axes = fig.subplots(len(metrics), 1, squeeze=False)
    width = 0.8 / len(runs)
    for ax, m in zip(axes[:, 0], metrics, strict=False):
        table = cells(runs, m)
        x = np.arange(len(table))
        for i, name in enumerate(runs):
            mean = [v[name][0] if name in v else np.nan for v in table.values()]
            std = [v[name][1] if name in v else np.nan for v in table.values()]
            ax.bar(x + (i - (len(runs) - 1) / 2) * width, mean, width, yerr=std, capsize=2, label=name)
        ax.set_xticks(x, [f"{p}\n{s}" if len({s for s, _ in table}) > 1 else p for s, p in table],
                      fontsize=7, rotation=20, ha="right")
        ax.set_ylabel(m)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def written_by_compare(path) -> bool:
    """Whether ``path`` is a PNG whose ``Software`` text chunk is :data:`SOFTWARE` (a figure compare wrote)."""
    wanted = b"Software\0" + SOFTWARE.encode()
    with open(path, "rb") as f:
        if f.read(8) != PNG_SIGNATURE:
            return False
        while len(head := f.read(8)) == 8:
            length, kind = struct.unpack(">I4s", head)
            if kind == b"IEND":
                return False
            if kind == b"tEXt" and length == len(wanted):
                if f.read(length) == wanted:
                    return True
                length = 0
            f.seek(length + 4, 1)  # the chunk's data (unless read) and its CRC
    return False


def check_out(out) -> Path:
    """``out`` as a Path if compare may write its figure there; else a one-line ``ValueError`` saying why."""
    out = Path(out)
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder; give a PNG file name, e.g. {out / 'compare.png'}")
    if out.suffix.lower() != ".png":
        raise ValueError(f"--out {out}: the figure is a PNG; give a file name ending in .png, e.g. compare.png")
    if not out.parent.is_dir():
        raise ValueError(f"--out {out}: folder {out.parent} " + (
            "is a file" if out.parent.exists() else "does not exist; create it first"))
    if (out.exists() or out.is_symlink()) and not (out.is_file() and written_by_compare(out)):
        raise ValueError(f"--out {out} exists and is not a figure of mobandit compare; nothing was written: give "
                         "a new file name or move that file away")
    return out


def main(dirs, metrics=None, out="compare.png") -> str:
    """Print the tables of ``dirs`` and write the figure to ``out``; return the tables.

    Every argument is checked before anything is written (a one-line ``ValueError``).
    """
    runs = load_runs(dirs)
    chosen = pick_metrics(runs, metrics)
    out = check_out(out)
    text = tables(runs, chosen)
    fig = figure(runs, chosen)
    files.atomic_write(out, lambda f: fig.savefig(f, format="png", dpi=110, metadata={"Software": SOFTWARE}))
    print(text)
    print(f"wrote {out}")
    return text
