"""``mobandit compare``: runs of different shapes side by side, and every bad folder or --out is one line, exit 2."""
import json
import os

import numpy as np
import pytest

from mobandit_jax import cli
from mobandit_jax.analysis import compare


def _record(policy, metric, mean, setting=None, n=3, **params):
    return {"policy": policy, "params": {"name": policy.lower(), **params}, "setting": setting or {"d": 2},
            "metric": metric, "mean": mean, "std": 0.25, "n": n}


def _run_folder(path, records, marker=None):
    """A run folder as `mobandit run` leaves it, as far as compare reads it: run.json and summary.json."""
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps(marker or {"tool": "mobandit_jax", "fingerprint": "f"}))
    if records is not None:
        (path / "summary.json").write_text(records if isinstance(records, str) else json.dumps({"records": records}))
    return path


def _listing(root):
    return sorted((os.path.relpath(os.path.join(d, f), root), os.path.getsize(os.path.join(d, f)))
                  for d, _, fs in os.walk(root) for f in fs)


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A cwd holding run folders a (P, Q; d=2; metrics hv, regret; 3 seeds) and b (P, R; d=2, d=3; hv, cost; 5)."""
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))  # the CLI sets it; restored after
    monkeypatch.chdir(tmp_path)
    _run_folder(tmp_path / "a", [_record("P", "hv", 0.5), _record("Q", "hv", 0.75), _record("P", "regret", 4.0)])
    _run_folder(tmp_path / "b", [_record("P", "hv", 0.625, n=5), _record("R", "hv", 0.25, {"d": 3}, n=5, eta=0.1),
                                 _record("R", "cost", 2.0, {"d": 3}, n=5, eta=0.1)])
    return tmp_path


def _fails(argv, capsys, expected):
    """``mobandit compare ARGV`` exits 2 with one line on stderr holding ``expected``."""
    try:
        code = cli.main(["compare", *argv])
    except SystemExit as exit_:  # argparse usage errors
        code = exit_.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and expected in err[0], err
    assert "Traceback" not in err[0]


def test_runs_of_different_policies_settings_metrics_and_seeds_give_tables_with_blanks(work, capsys):
    assert cli.main(["compare", "a", "b", "--out", "cmp.png", "--band", "std"]) == 0
    out = capsys.readouterr().out
    assert out.count("### ") == 3  # hv, regret (only a), cost (only b)
    rows = [line for line in out.splitlines() if line.startswith("| d=")]
    assert "| d=2 | P | 0.5 ± 0.25 | 0.625 ± 0.25 |" in rows
    assert "| d=2 | Q | 0.75 ± 0.25 |  |" in rows  # b has no Q
    assert "| d=3 | R (η = 0.1) |  | 0.25 ± 0.25 |" in rows  # a has no R and no d=3
    assert "| d=2 | P | 4 ± 0.25 |  |" in rows  # regret: a only
    assert compare.written_by_compare(work / "cmp.png")
    assert cli.main(["compare", "b", "a", "--metric", "cost", "cost", "--out", "cmp.png", "--band", "std"]) == 0
    out = capsys.readouterr().out
    assert out.count("### ") == 1 and "| d=3 | R (η = 0.1) | 2 ± 0.25 |  |" in out


def test_two_folders_of_the_same_name_are_told_apart_and_the_same_folder_twice_is_refused(work, capsys):
    _run_folder(work / "other" / "a", [_record("P", "hv", 0.5)])
    assert cli.main(["compare", "a", "other/a", "--out", "cmp.png"]) == 0
    assert "| setting | policy | a | other/a |" in capsys.readouterr().out
    _fails(["a", "./a"], capsys, "run folder a is given twice")


@pytest.mark.parametrize("case, expected", [
    ("missing", "run folder 'missing' does not exist"),
    ("file", "run folder 'file' is a file"),
    ("empty", "empty is not a run folder (no run.json of mobandit_jax)"),
    ("foreign", "foreign is not a run folder"),
    ("bad_marker", "bad_marker is not a run folder"),
    ("unfinished", "run folder unfinished has no summary.json: its run has not finished"),
    ("truncated", "truncated/summary.json cannot be read, truncated or not a summary"),
    ("not_a_summary", "not_a_summary/summary.json cannot be read"),
    ("no_records", "no_records/summary.json has no records of `mobandit run`"),
    ("record_without_mean", "record_without_mean/summary.json: record 1 has no 'mean'"),
    ("record_with_text_mean", "record_with_text_mean/summary.json: record 0 has mean = 'x'; expected a number"),
    ("record_not_a_table", "record_not_a_table/summary.json: record 0 is 3, not a table"),
])
def test_a_bad_run_folder_is_one_line_exit_2_and_nothing_is_written(work, capsys, case, expected):
    good = [_record("P", "hv", 0.5)]
    if case == "file":
        (work / "file").write_text("x")
    elif case == "empty":
        (work / "empty").mkdir()
    elif case == "foreign":
        (work / "foreign").mkdir()
        (work / "foreign" / "notes.txt").write_text("mine")
    elif case == "bad_marker":
        _run_folder(work / case, good, marker=["not", "a", "marker"])
    elif case != "missing":
        summary = {"unfinished": None, "truncated": json.dumps({"records": good})[:30], "not_a_summary": "[1, 2]",
                   "no_records": [], "record_without_mean": good + [{k: v for k, v in good[0].items() if k != "mean"}],
                   "record_with_text_mean": [{**good[0], "mean": "x"}], "record_not_a_table": [3]}[case]
        _run_folder(work / case, summary)
    before = _listing(work)
    _fails(["a", case, "--out", "cmp.png"], capsys, expected)
    assert _listing(work) == before


def test_an_unknown_metric_is_named_with_the_metrics_there_are(work, capsys):
    _fails(["a", "b", "--metric", "hv", "nope"], capsys, "--metric 'nope' is in none of the runs; their metrics: "
           "['hv', 'regret', 'cost']")
    assert not (work / "compare.png").exists()


@pytest.mark.parametrize("out, expected", [
    ("notes.txt", "--out notes.txt: the figure is a PNG; give a file name ending in .png"),
    ("mine.png", "--out mine.png exists and is not a figure of mobandit compare; nothing was written"),
    ("text.png", "--out text.png exists and is not a figure of mobandit compare"),
    ("missing/cmp.png", "--out missing/cmp.png: folder missing does not exist; create it first"),
    ("notes.txt/cmp.png", "--out notes.txt/cmp.png: folder notes.txt is a file"),
    ("folder", "--out folder is a folder; give a PNG file name, e.g. folder/compare.png"),
    ("folder.png", "--out folder.png is a folder"),
])
def test_an_out_that_is_not_a_new_png_or_compares_own_is_refused_and_left_as_it_was(work, capsys, out, expected):
    from matplotlib.figure import Figure

    (work / "notes.txt").write_text("my notes")
    (work / "text.png").write_text("not a png")
    Figure().savefig(work / "mine.png")  # a PNG, but not one compare wrote
    (work / "folder").mkdir()
    (work / "folder.png").mkdir()
    before = _listing(work)
    _fails(["a", "b", "--out", out], capsys, expected)
    assert _listing(work) == before


def test_the_figure_is_written_atomically_with_compares_mark(work, capsys):
    compare.main(["a", "b"], out="cmp.png")
    assert compare.written_by_compare(work / "cmp.png")
    assert not [p for p in work.iterdir() if p.name.endswith(".tmp")]
    from PIL import Image

    with Image.open(work / "cmp.png") as image:
        assert image.text["Software"] == compare.SOFTWARE


def test_a_single_bar_is_centred_under_its_error_bar_and_does_not_fill_its_panel(work):
    runs = compare.load_runs(["a"])
    fig = compare.figure(runs, ["regret"])  # one policy, one run: one bar
    ax = fig.axes[0]
    [bar] = ax.patches
    centre = bar.get_x() + bar.get_width() / 2
    [caps] = [c for c in ax.containers if hasattr(c, "has_yerr") and c.has_yerr]
    seg = np.asarray(caps.lines[2][0].get_segments()[0])
    assert seg[0, 0] == pytest.approx(centre) and seg[1, 0] == pytest.approx(centre)
    left, right = ax.get_xlim()
    assert bar.get_width() / (right - left) < 0.35 and (left + right) / 2 == pytest.approx(centre)
    a, b, c = 4.0, *((4.0 + s * 0.25 / np.sqrt(3) * 4.302652729911275) for s in (-1, 1))  # t(0.975, 2)
    assert (seg[0, 1], seg[1, 1]) == pytest.approx((b, c), rel=1e-6) and bar.get_height() == a


@pytest.mark.parametrize("fmt, head", [("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_compare_writes_svg_or_pdf_with_its_mark_and_refuses_a_mismatched_name(work, capsys, fmt, head):
    assert cli.main(["compare", "a", "b", "--format", fmt]) == 0
    out = work / f"compare.{fmt}"
    assert out.read_bytes().startswith(head) and compare.written_by_compare(out)
    assert cli.main(["compare", "a", "b", "--out", str(out)]) == 0  # its own figure may be written again
    capsys.readouterr()
    _fails(["a", "b", "--out", "cmp.png", "--format", fmt], capsys,
           f"--out cmp.png: the figure is a {fmt.upper()}; give a file name ending in .{fmt}")
