"""``mobandit compare``: several run folders side by side, as markdown tables and one PNG figure.

One table per metric: a row per (setting, policy column), a column per run folder, cells
``mean ± std`` over seeds (from each folder's ``summary.json``). The figure has one panel per
metric: grouped bars of the final mean with ±1 std error bars, a bar per run in each row's group.
"""
from __future__ import annotations

from pathlib import Path

from ..runner.run_folder import column
from .results import Results
from .plots import setting_title
from .report import fmt_mean_std


def load_runs(dirs) -> dict:
    """``{run name: Results}`` of each run folder; a bad folder raises ``ValueError`` naming it."""
    runs = {}
    for d in dirs:
        path = Path(d)
        if not path.is_dir():
            raise ValueError(f"run folder {str(path)!r} does not exist or is not a folder")
        try:
            res = Results.load(path)
        except FileNotFoundError as err:
            raise ValueError(str(err)) from None
        except (ValueError, KeyError, TypeError) as err:  # unreadable JSON or records without their keys
            raise ValueError(f"run folder {path}: summary.json or grid.json cannot be read ({err})") from None
        if not res.records or not all(isinstance(r, dict) and {"policy", "params", "setting", "metric", "mean", "std"}
                                      <= set(r) for r in res.records):
            raise ValueError(f"run folder {path}: summary.json has no records of `mobandit run`")
        name = path.name if path.name not in runs else str(path)
        if name in runs:
            raise ValueError(f"run folder {path} is given twice")
        runs[name] = res
    return runs


def pick_metrics(runs: dict, wanted) -> list:
    """The metrics to compare: ``wanted`` (each must be in some run), else every metric, in order."""
    known = list(dict.fromkeys(m for res in runs.values() for m in res.metrics()))
    for m in wanted or ():
        if m not in known:
            raise ValueError(f"--metric {m!r} is in none of the runs; their metrics: {known}")
    return list(wanted) if wanted else known


def cells(runs: dict, metric: str) -> dict:
    """``{(setting title, policy column): {run name: (mean, std)}}`` in order of first appearance."""
    table: dict = {}
    for name, res in runs.items():
        for r in res.records:
            if r["metric"] == metric:
                row = (setting_title(r["setting"]), column(r["policy"], r["params"]))
                table.setdefault(row, {})[name] = (r["mean"], r["std"])
    return table


def tables(runs: dict, metrics: list) -> str:
    """Markdown tables, one per metric: rows (setting, policy), one column per run."""
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

    fig = Figure(figsize=(max(6.0, 1.2 * max(len(cells(runs, m)) for m in metrics)), 3.2 * len(metrics)))
    axes = fig.subplots(len(metrics), 1, squeeze=False)
    width = 0.8 / len(runs)
    for ax, m in zip(axes[:, 0], metrics):
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


def main(dirs, metrics=None, out="compare.png") -> str:
    """Print the tables of ``dirs`` and write the figure to ``out``; return the tables."""
    runs = load_runs(dirs)
    chosen = pick_metrics(runs, metrics)
    text = tables(runs, chosen)
    out = Path(out)
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder; give a PNG file name, e.g. compare.png")
    figure(runs, chosen).savefig(out, dpi=110)
    print(text)
    print(f"wrote {out}")
    return text
