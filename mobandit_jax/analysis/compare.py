"""``mobandit compare``: several run folders side by side, as markdown tables and one figure (PNG, PDF or SVG).

One table per metric: a row per (setting, policy column), a column per run folder, cells
``mean [95% CI]`` over seeds (``band="std"``: ``mean ± std``; from each folder's ``summary.json``;
blank where a run has no such record, so runs of other policies, settings, metrics, seeds or horizons
sit side by side). Runs that differ in their seed count or environment are compared with a one-line
warning. The figure, titled, has one panel per metric the runs have: grouped bars of the final mean
with its 95% interval (or ±1 std, clipped to a rate's [0, 1] and a count's 0), a bar per run in each
row's group, the legend outside the bars.

``paired=True`` (``mobandit compare --paired``) adds, for every run after the first, the per-seed
differences to the first run of each (setting, policy, metric) both have, their mean, paired 95%
t-interval and win/tie/loss counts over the seeds (read from ``finals.npz``): runs on the same
seeds of the same environment face the same reward streams (common random numbers), so the paired
interval is the one to report. Runs whose seeds or environment differ are refused unless
``unpaired=True``, which gives the difference of the means with Welch's interval instead.

The figure is a PNG (or a PDF or SVG, by ``--out``'s suffix or ``--format``) written atomically with the
text chunk ``Software`` (a PDF's or SVG's creator) = :data:`SOFTWARE`: ``--out`` may name an existing file
only if it is such a figure (one compare wrote earlier); any other existing file, a folder, a missing folder
or a name not ending in the format's suffix is refused.
"""
from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from . import files, stats
from .files import column
from .plots import setting_title, wrap_title
from .report import fmt_cell
from .style import DPI, FORMATS, figure_format, place_legend, save, style

SOFTWARE = "mobandit compare"  # the PNG text chunk (PDF, SVG creator) that marks a figure written by compare
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_WIDTH = 160.0 * 110 / DPI  # inches: the figure stays below Agg's 2**16 pixels however many rows


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
    """``{(setting title, policy column): {run name: record}}`` in order of first appearance."""
    table: dict = {}
    for name, records in runs.items():
        for r in records:
            if r["metric"] == metric:
                row = (setting_title(r["setting"]), column(r["policy"], r["params"]))
                table.setdefault(row, {})[name] = r
    return table


def tables(runs: dict, metrics: list, band: str = "ci") -> str:
    """Markdown tables, one per metric: rows (setting, policy), one column per run, blank where it has none."""
    lines = []
    for m in metrics:
        lines += [f"### {m}", "", "| setting | policy | " + " | ".join(runs) + " |", "|---" * (len(runs) + 2) + "|"]
        for (setting, policy), values in cells(runs, m).items():
            shown = [fmt_cell(values[n], band) if n in values else "" for n in runs]
            lines.append(f"| {setting} | {policy} | " + " | ".join(shown) + " |")
        lines.append("")
    return "\n".join(lines)


def _bars(r: dict, band: str, bounds) -> tuple:
    """A record's bar height and its error bar ends: its 95% interval, or ± std clipped to ``bounds``."""
    if band != "std":
        lo, hi = stats.record_interval(r)
    else:
        lo, hi = r["mean"] - r["std"], r["mean"] + r["std"]
    low, high = bounds if bounds is not None else (None, None)
    if r.get("interval") == "wilson":
        low, high = 0.0, 1.0
    lo = max(lo, low) if low is not None else lo
    hi = min(hi, high) if high is not None else hi
    return r["mean"], lo, hi


def seeds_of(runs: dict) -> dict:
    """``{run name: its seed count}`` (the largest ``n`` of its records)."""
    return {name: max(r["n"] for r in records) for name, records in runs.items()}


def figure(runs: dict, metrics: list, band: str = "ci", bounds: dict | None = None):
    """A Figure with one panel per metric the runs have: grouped bars of final means with their 95% interval
    (``band="std"``: ±1 std clipped to the metric's bounds), a bar per run in the run's colour, each error bar at
    its bar's centre, a panel at least three groups wide (one bar does not fill it), titled and labelled."""
    import numpy as np
    from matplotlib.figure import Figure

    metrics = [m for m in metrics if cells(runs, m)]
    rows = max(len(cells(runs, m)) for m in metrics)
    cols = min(2 if rows <= 8 else 1, len(metrics))  # many bars: one panel a line
    lines = -(-len(metrics) // cols)
    width = min(MAX_WIDTH, max(3.4, 0.9 * rows) * cols)
    fig = Figure(figsize=(width, 2.8 * lines + 0.8), layout="constrained")
    axes = fig.subplots(lines, cols, squeeze=False)
    bar = 0.8 / len(runs)
    seeds = seeds_of(runs)
    for ax, m in zip(axes.flat, metrics, strict=False):
        table = cells(runs, m)
        x = np.arange(len(table))
        for i, name in enumerate(runs):
            drawn = [_bars(v[name], band, (bounds or {}).get(m)) if name in v else (np.nan,) * 3
                     for v in table.values()]
            mean, lo, hi = (np.array(c, float) for c in zip(*drawn, strict=True))
            at = x + (i - (len(runs) - 1) / 2) * bar
            colour = style(i)["color"]
            ax.bar(at, mean, bar * 0.9, color=colour, label=f"{name} ({seeds[name]} seeds)")
            ax.errorbar(at, mean, yerr=np.stack([mean - lo, hi - mean]), fmt="none", ecolor="0.15", capsize=2,
                        linewidth=0.8)
        span = max(len(table), 3)
        ax.set_xlim(-0.5 - (span - len(table)) / 2, len(table) - 0.5 + (span - len(table)) / 2)
        ax.set_xticks(x, [f"{p}\n{s}" if len({s for s, _ in table}) > 1 else p for s, p in table],
                      fontsize=7, rotation=20 if len(table) > 1 else 0, ha="right" if len(table) > 1 else "center")
        ax.set_ylabel(f"final {m}", fontsize=8)
        ax.set_xlabel("policy" + (" and setting" if len({s for s, _ in table}) > 1 else ""), fontsize=8)
        ax.set_title(m, fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    what = "mean ± 1 std (clipped to each metric's range)" if band == "std" else "mean, 95% CI"
    handles, names = axes.flat[0].get_legend_handles_labels()
    place_legend(fig, handles, names)
    fig.suptitle(wrap_title([f"compare {', '.join(runs)}", f"final values: {what} over seeds"],
                            fig.get_figwidth()), fontsize=9)
    return fig


def environment(path) -> dict:
    """What a run's reward streams depend on, from its ``run.json``: the environment table and the seeds."""
    spec = (files.run_marker(path) or {}).get("spec", {})
    exp = spec.get("experiment", {})
    return {"env": spec.get("env"), "seed": exp.get("seed", 0)}


def differences(dirs, runs: dict) -> list:
    """One line per way the runs differ that pairing needs equal: seed counts, base seeds, environments."""
    names = list(runs)
    seeds = seeds_of(runs)
    envs = {name: environment(d) for name, d in zip(names, dirs, strict=True)}
    found = []
    if len(set(seeds.values())) > 1:
        found.append("seed counts differ (" + ", ".join(f"{n}: {k}" for n, k in seeds.items()) + ")")
    if len({json.dumps(e["seed"]) for e in envs.values()}) > 1:
        found.append("base seeds differ (" + ", ".join(f"{n}: {e['seed']}" for n, e in envs.items()) + ")")
    if len({json.dumps(e["env"], sort_keys=True, default=str) for e in envs.values()}) > 1:
        found.append("environments ([env]) differ")
    return found


def paired_rows(dirs, runs: dict, metrics: list, unpaired: bool = False) -> list:
    """Per-seed differences of each later run to the first, per (metric, setting, policy) both have.

    Args:
      dirs: the run folders, in the order of ``runs``.
      runs: ``{run name: records}`` (:func:`load_runs`).
      metrics: the metrics compared.
      unpaired: the difference of the means with Welch's interval, for runs on different seeds.

    Returns:
      Rows ``{"metric", "setting", "policy", "run", "reference", "diff", "ci_low", "ci_high", "wins", "ties",
      "losses", "n"}`` (no win counts when unpaired, or when the metric has no goal).
    """
    from .results import Results

    loaded = [Results.load(d) for d in dirs]
    names = list(runs)
    ref = loaded[0]
    rows = []
    for m in metrics:
        for i, res in enumerate(loaded[1:], start=1):
            for r in res.records:
                if r["metric"] != m:
                    continue
                where = {**r["params"], **r["setting"]}
                base = ref.record(r["policy"], m, **where)
                if base is None:
                    continue
                a, b = res.final(r["policy"], m, **where), ref.final(r["policy"], m, **where)
                goal = (res.goal.get(r["policy"], {}) or {}).get(m) or ""
                if unpaired:
                    row = stats.unpaired_difference(a, b)
                    row.update(wins=None, ties=None, losses=None)
                else:
                    row = stats.paired_differences(a, b, goal=goal or "max")
                    if not goal:
                        row.update(wins=None, ties=None, losses=None)
                rows.append({"metric": m, "setting": setting_title(r["setting"]),
                             "policy": column(r["policy"], r["params"]), "run": names[i], "reference": names[0],
                             **row})
    return rows


def paired_tables(rows: list, unpaired: bool = False) -> str:
    """Markdown tables of :func:`paired_rows`, one per metric."""
    what = "difference of means [95% Welch CI]" if unpaired else "mean paired difference [95% CI]"
    lines = []
    for m in dict.fromkeys(r["metric"] for r in rows):
        lines += [f"### {m}: run minus {rows[0]['reference']}, {what}", "",
                  "| setting | policy | run | difference | wins / ties / losses |", "|---|---|---|---|---|"]
        for r in (r for r in rows if r["metric"] == m):
            wtl = f"{r['wins']} / {r['ties']} / {r['losses']}" if r["wins"] is not None else ""
            lines.append(f"| {r['setting']} | {r['policy']} | {r['run']} | "
                         f"{fmt_cell({'mean': r['diff'], 'ci_low': r['ci_low'], 'ci_high': r['ci_high']})} | {wtl} |")
        lines.append("")
    return "\n".join(lines)


def written_by_compare(path) -> bool:
    """Whether ``path`` is a figure compare wrote: a PNG whose ``Software`` text chunk is :data:`SOFTWARE`, or a
    PDF or SVG whose creator is :data:`SOFTWARE`."""
    with open(path, "rb") as f:
        start = f.read(8)
        if start.startswith(b"%PDF") or start.startswith(b"<?xml"):
            f.seek(0)
            text = f.read(1 << 20)
            mark = rb"/Creator \(" if start.startswith(b"%PDF") else rb"<dc:creator>\s*<cc:Agent>\s*<dc:title>"
            return re.search(mark + re.escape(SOFTWARE.encode()) + rb"[)<]", text) is not None
        if start != PNG_SIGNATURE:
            return False
        wanted = b"Software\0" + SOFTWARE.encode()
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


def check_out(out, format: str | None = None) -> Path:
    """``out`` as a Path if compare may write its figure there (in ``format``, default its suffix's); else a
    one-line ``ValueError`` saying why."""
    out = Path(out)
    if format is not None and format not in FORMATS:
        raise ValueError(f"--format {format!r}; allowed: {list(FORMATS)}")
    suffix = out.suffix.lower().lstrip(".")
    want = format or (suffix if suffix in FORMATS else "png")
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder; give a {want.upper()} file name, e.g. {out / f'compare.{want}'}")
    if suffix != want:
        raise ValueError(f"--out {out}: the figure is a {want.upper()}; give a file name ending in .{want}, e.g. "
                         f"compare.{want} (a .pdf or .svg name writes that format)")
    if not out.parent.is_dir():
        raise ValueError(f"--out {out}: folder {out.parent} " + (
            "is a file" if out.parent.exists() else "does not exist; create it first"))
    if (out.exists() or out.is_symlink()) and not (out.is_file() and written_by_compare(out)):
        raise ValueError(f"--out {out} exists and is not a figure of mobandit compare; nothing was written: give "
                         "a new file name or move that file away")
    return out


def main(dirs, metrics=None, out="compare.png", band: str = "ci", paired: bool = False,
         unpaired: bool = False, format: str | None = None) -> str:
    """Print the tables of ``dirs`` and write the figure to ``out`` (a PNG, PDF or SVG: ``format``, default
    ``out``'s suffix); return the tables.

    Every argument is checked before anything is written (a one-line ``ValueError``); runs that differ in
    seed count or environment get a one-line warning on stderr, and ``paired`` refuses them unless
    ``unpaired``.
    """
    import sys

    runs = load_runs(dirs)
    chosen = pick_metrics(runs, metrics)
    out = check_out(out, format)
    differ = differences(dirs, runs)
    if paired and differ and not unpaired:
        raise ValueError(f"--paired needs runs on the same seeds of the same environment: {'; '.join(differ)}; "
                         "give --unpaired to compare their means instead")
    if differ:
        print(f"warning: the runs are not paired: {'; '.join(differ)}", file=sys.stderr)
    text = tables(runs, chosen, band)
    if paired or unpaired:
        rows = paired_rows(dirs, runs, chosen, unpaired)
        text += "\n" + (paired_tables(rows, unpaired) if rows else "no (setting, policy, metric) is in two runs\n")
    fig = figure(runs, chosen, band, _bounds(dirs))
    files.atomic_write(out, lambda f: save(fig, f, figure_format(out, format), Software=SOFTWARE))
    print(text)
    print(f"wrote {out}")
    return text


def _bounds(dirs) -> dict:
    """``{metric: (low, high)}`` from the runs' ``metrics.json`` where they have it."""
    found: dict = {}
    for d in dirs:
        try:
            meta = json.loads((Path(d) / "metrics.json").read_text())
        except (OSError, ValueError):
            continue
        for per_label in (meta.get("bounds") or {}).values():
            for m, b in per_label.items():
                found.setdefault(m, tuple(b))
    return found
