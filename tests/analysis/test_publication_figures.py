"""Figures fit for a paper (issue 53): a hand-built run of 12 policies with long names, one sweeping eta over a
log-spaced grid, two settings, a cumulative, a trailing and a final metric.

Every PNG's outermost pixel rows and columns are the white background (nothing touches or crosses the edge); no
label anywhere (figures, report.md) holds Python dict text; the eta grid is drawn on a log axis (its tick positions
in the SVG file are linear in log10 of the values); ``hv_last100`` is drawn as the mean of its last 100 rounds, a
numpy trailing mean of the curves, never as a cumulative curve; a policy has one colour in every figure; ``plot``
draws a chosen subset; the formats are PNG at 200 dpi, PDF and SVG.
"""
import re
import xml.etree.ElementTree as ET

import matplotlib.image as mpimg
import numpy as np
import pytest
from matplotlib.text import Text
from PIL import Image

from mobandit_jax.analysis import files, plots, style
from mobandit_jax.analysis.results import Results
from mobandit_jax.experiment_spec import ExperimentSpec, GridPoint

ETA = [0.003, 0.01, 0.03, 0.1, 0.3]
LONG = [f"Policy {i} with a rather long descriptive name for a paper" for i in range(11)]
SETTINGS = [{"front": "concave"}, {"front": "convex"}]
SEEDS, EVERY, HORIZON = 4, 10, 200
METRICS = {"alpha_regret_pos": ("sum", (0, None), "min"), "hv_last100": ("last100", (0, None), "max"),
           "misidentification": ("mean", (0, 1), "min")}


def _grid() -> dict:
    grid = {"THV-UCB": [GridPoint(s, {"name": "thv_ucb", "eta": e}) for s in SETTINGS for e in ETA]}
    grid.update({name: [GridPoint(s, {"name": "thv_ucb"}) for s in SETTINGS] for name in LONG})
    return grid


@pytest.fixture(scope="module")
def run() -> Results:
    rng = np.random.default_rng(0)
    grid = _grid()
    ckpts = np.arange(EVERY, HORIZON + 1, EVERY)
    arrays, finals, records = {"checkpoints": ckpts, "seed_index": np.arange(SEEDS)}, {}, []
    for label, points in grid.items():
        for g, point in enumerate(points):
            rounds = np.tile(ckpts, (SEEDS, 1))
            arrays[f"{label}|{g}|rounds"] = rounds
            arrays[f"{label}|{g}|spent"] = np.zeros((SEEDS, len(ckpts)))
            for m, (reduce, bounds, _) in METRICS.items():
                per_round = rng.uniform(0, 1, (SEEDS, HORIZON)) if m != "misidentification" else (
                    np.repeat(rng.integers(0, 2, (SEEDS, 1)), HORIZON, axis=1))
                cum = np.cumsum(per_round, axis=1)[:, ckpts - 1]
                arrays[f"{label}|{g}|{m}"] = cum
                finals[f"{label}|{g}|{m}"] = files.final_values(cum, rounds, reduce)
                records.append(files.record(label, point.params, point.setting, m,
                                            finals[f"{label}|{g}|{m}"], bounds))
    names = {label: tuple(METRICS) for label in grid}
    spec = ExperimentSpec.from_dict({"experiment": {"name": "twelve policies with long names"},
                                     "env": {"kind": "dtlz"}})
    return Results(spec, grid, names,
                   {label: {m: v[0] for m, v in METRICS.items()} for label in grid}, HORIZON, EVERY, 0, arrays,
                   finals, records, bounds={label: {m: list(v[1]) for m, v in METRICS.items()} for label in grid},
                   goal={label: {m: v[2] for m, v in METRICS.items()} for label in grid})


@pytest.fixture(scope="module")
def folder(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("paper")
    run.write(out)
    return out


def test_the_run_writes_a_curve_a_trailing_curve_a_final_values_and_a_grid_figure_per_metric(folder):
    assert {p.name for p in folder.glob("*.png")} == {
        "alpha_regret_pos.png", "hv_last100.png", "final_misidentification.png", "grid_alpha_regret_pos.png",
        "grid_hv_last100.png", "grid_misidentification.png"}


def test_every_png_is_200_dpi_and_its_border_is_background(folder):
    for path in sorted(folder.glob("*.png")):
        with Image.open(path) as im:
            assert min(im.info["dpi"]) >= 199.9, path.name
        pixels = mpimg.imread(path)[..., :3]
        border = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
        assert np.all(border == 1.0), (path.name, int(np.sum(np.any(border != 1.0, axis=1))))


def _texts(fig) -> list:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_no_label_holds_dict_text_and_names_read_as_a_reader_writes_them(run, folder):
    figures = [run.plot(m) for m in METRICS] + [plots.grid_figure(run, m) for m in METRICS]
    texts = [t for fig in figures for t in _texts(fig)]
    assert not [t for t in texts if "{'" in t or "np.float" in t]
    assert "THV-UCB (η = 0.003)" in texts and LONG[3] in texts
    report = (folder / "report.md").read_text()
    assert "{'" not in report and "THV-UCB (η = 0.003) | THV-UCB (η = 0.01)" in report


def _xticks(svg_path) -> list:
    """``[(x position, label)]`` of the x-axis ticks of the first axes of an SVG matplotlib wrote (text as text)."""
    root = ET.parse(svg_path).getroot()
    ns = {"s": "http://www.w3.org/2000/svg", "x": "http://www.w3.org/1999/xlink"}
    ticks = []
    for group in root.iter("{http://www.w3.org/2000/svg}g"):
        if not re.fullmatch(r"xtick_\d+", group.get("id", "")):
            continue
        use = group.find(".//s:use", ns)
        text = "".join(group.find(".//s:text", ns).itertext()).strip()
        ticks.append((float(use.get("x")), text))
    return ticks


def test_the_log_spaced_eta_grid_is_drawn_on_a_log_axis_in_the_svg(run, tmp_path):
    names = run.figures(tmp_path, format="svg")
    assert "grid_hv_last100.svg" in names and not list(tmp_path.glob("*.png"))
    ticks = _xticks(tmp_path / "grid_hv_last100.svg")
    shown = [(x, float(t)) for x, t in ticks]
    assert [v for _, v in shown] == ETA
    x, v = np.array(shown).T
    fit = np.polyfit(np.log10(v), x, 1)  # positions linear in log10(eta): a log axis
    np.testing.assert_allclose(np.polyval(fit, np.log10(v)), x, atol=0.05)
    linear = np.polyfit(v, x, 1)  # and not linear in eta
    assert np.max(np.abs(np.polyval(linear, v) - x)) > 20


def test_hv_last100_is_its_trailing_mean_never_a_cumulative_curve(run):
    fig = run.plot("hv_last100")
    ax = fig.axes[0]
    assert not ax.get_ylabel().startswith("cumulative") and "last 100 rounds" in ax.get_ylabel()
    cum = run.arrays["THV-UCB|0|hv_last100"]
    window = 100 // EVERY
    want = np.concatenate([cum[:, :window] / (np.arange(1, window + 1) * EVERY),
                           (cum[:, window:] - cum[:, :-window]) / 100], axis=1).mean(axis=0)
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "THV-UCB (η = 0.003)")
    np.testing.assert_allclose(line.get_ydata(), want, rtol=1e-12)
    assert np.max(line.get_ydata()) <= 1.0  # a per-round HV in [0, 1], not a sum rising with the rounds
    np.testing.assert_allclose(line.get_ydata()[-1], run.finals["THV-UCB|0|hv_last100"].mean(), rtol=1e-12)


def test_a_mean_metric_is_drawn_as_final_values_with_their_interval(run):
    fig = run.plot("misidentification", settings=[{"front": "convex"}])
    [ax] = [a for a in fig.axes if a.get_visible() and a.axison]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "THV-UCB (η = 0.003)" and len(labels) == 5 + len(LONG)
    values = run.finals[f"THV-UCB|{len(ETA)}|misidentification"]  # front = convex, eta = 0.003
    point = ax.lines[0].get_xydata()[0]
    assert point[0] == pytest.approx(values.mean()) and point[1] == 0


def test_plot_draws_the_chosen_policies_and_settings_and_names_what_it_lacks(run):
    fig = run.plot("alpha_regret_pos", policies=["THV-UCB", LONG[0]], settings=[{"front": "concave"}])
    drawn = [a for a in fig.axes if a.get_visible() and a.axison]
    assert len(drawn) == 1 and drawn[0].get_title() == "front=concave"
    assert [ln.get_label() for ln in drawn[0].get_lines()] == [f"THV-UCB (η = {e:g})" for e in ETA] + [LONG[0]]
    with pytest.raises(ValueError, match="policies: 'THV-UCV' is no policy of this run \\(did you mean 'THV-UCB'"):
        run.plot("alpha_regret_pos", policies=["THV-UCV"])
    with pytest.raises(ValueError, match="settings: \\{'front': 'flat'\\} matches no setting"):
        run.plot("alpha_regret_pos", settings=[{"front": "flat"}])


def test_a_policy_has_one_colour_in_every_figure_from_a_colour_blind_safe_palette(run):
    colours: dict = {}
    for m in ("alpha_regret_pos", "hv_last100"):
        for ln in run.plot(m).axes[0].get_lines():
            colours.setdefault(ln.get_label(), set()).add(ln.get_color())
    assert all(len(c) == 1 for c in colours.values()) and len(colours) == len(ETA) + len(LONG)
    assert {c for cs in colours.values() for c in cs} <= set(style.PALETTE)
    looks = {(ln.get_color(), ln.get_linestyle(), ln.get_marker()) for ln in run.plot("hv_last100").axes[0].get_lines()}
    assert len(looks) == len(ETA) + len(LONG)  # 16 lines, no two alike
    grid = plots.grid_figure(run, "hv_last100")
    thv = [c.lines[0].get_color() for c in grid.axes[0].containers if c.get_label().startswith("THV-UCB [")]
    assert thv == [colours["THV-UCB (η = 0.003)"].pop()] * len(SETTINGS)  # a line per setting, the policy's colour


@pytest.mark.parametrize("fmt, head", [("pdf", b"%PDF"), ("svg", b"<?xml")])
def test_plot_writes_pdf_and_svg_on_request(run, tmp_path, fmt, head):
    run.plot("hv_last100", path=tmp_path / f"hv.{fmt}")
    assert (tmp_path / f"hv.{fmt}").read_bytes().startswith(head)
    with pytest.raises(ValueError, match="figure format 'jpg'"):
        run.plot("hv_last100", path=tmp_path / "hv.jpg")
