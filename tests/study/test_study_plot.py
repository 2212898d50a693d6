"""A study's figure (:mod:`mobandit_jax.study.plot`): a study of each family (online, fixed-budget with costs,
fixed-confidence) draws the means, pulls and budget that were told (checked against the loop's own record), tells
the arms' categories apart, cuts nothing off, and is written as PNG (200 dpi), PDF or SVG by ``plot`` and
``mobandit study plot``."""
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex

import mobandit_jax as mb
from mobandit_jax.cli import main
from mobandit_jax.study import plot as sp

NAMES = ["gpt-small", "gpt-medium", "llama-7b", "mistral-7b", "<img src=x onerror=alert(1)>", "qwen-1.5b"]
MEANS = np.array([[0.9, 0.1, 0.3], [0.1, 0.9, 0.5], [0.5, 0.5, 0.5], [0.4, 0.4, 0.9], [0.2, 0.2, 0.2],
                  [0.6, 0.3, 0.1]])
COSTS = [1.0, 2.0, 1.5, 0.5, 1.0, 0.8]
SPECS = {
    "online": {"study": {"arms": NAMES, "objectives": ["accuracy", "speed"], "horizon": 30},
               "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]},
    "budget": {"study": {"arms": NAMES, "objectives": ["accuracy", "speed"]},
               "budget": {"B": 30.0, "cost": COSTS}, "policies": [{"name": "psi_sr"}]},
    "confidence": {"study": {"arms": NAMES, "objectives": ["accuracy", "speed", "safety"]},
                   "preference": {"W": np.eye(3).tolist()}, "policies": [{"name": "naive_elimination", "L": 2}]},
}


def _drive(study, kind):
    """Ask and tell until the study ends; returns what was told of each arm (values, costs), kept here."""
    rng = np.random.default_rng(1)
    d = len(SPECS[kind]["study"]["objectives"])
    told = {a: ([], []) for a in NAMES}
    while batch := study.ask(3):
        for t in batch:
            values = np.clip(MEANS[t.index, :d] + 0.15 * rng.standard_normal(d), 0, 1).tolist()
            cost = COSTS[t.index] * rng.uniform(0.8, 1.2) if kind == "budget" else None
            study.tell(t, values, cost)
            told[t.arm][0].append(values)
            told[t.arm][1].append(cost or 0.0)
    return told


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    out = {}
    for kind, spec in SPECS.items():
        path = tmp_path_factory.mktemp(kind) / "study"
        study = mb.Study.create(path, spec, seed=0)
        out[kind] = (study, _drive(study, kind))
    return out


def _axes(fig):
    front, budget, pulls = fig.axes[:3]
    return front, budget, pulls


def _bars(ax) -> dict:
    """The pulls panel's bars by the name on their tick: ``{arm: (width, colour)}``."""
    names = {round(y, 6): t.get_text() for y, t in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)}
    return {names[round(p.get_y() + p.get_height() / 2, 6)]: (p.get_width(), to_hex(p.get_facecolor()))
            for p in ax.patches}


def _colour(artist):
    return to_hex(artist.get_color() if hasattr(artist, "get_color") else artist.get_facecolor())


@pytest.mark.parametrize("kind", list(SPECS))
def test_the_figure_draws_what_was_told(studies, kind):
    study, told = studies[kind]
    fig = study.plot()  # Study.plot is plot(study)
    front, budget, pulls = _axes(fig)
    counts = {a: len(v) for a, (v, _) in told.items()}
    bars = _bars(pulls)
    assert {a: width for a, (width, _) in bars.items()} == counts
    recommended = set(study.recommend())
    assert recommended  # every family here ends with a set
    green = to_hex(sp.CATEGORIES["recommended"][1])
    assert {a for a, (_, colour) in bars.items() if colour == green} == recommended
    means = {a: np.mean(v, axis=0) for a, (v, _) in told.items() if v}
    if kind == "confidence":  # parallel coordinates: each arm's line, its means ranked as the told means are
        lines = {t.get_text(): line for t in front.texts if t.get_text() in NAMES
                 for line in front.lines if line.get_marker() != "None" and np.isclose(
                     line.get_ydata()[-1], t.xy[1]) and _colour(line) == to_hex(t.get_color())}
        assert set(lines) == set(NAMES)
        for j in range(3):
            drawn = sorted(NAMES, key=lambda a: lines[a].get_ydata()[j])
            assert drawn == sorted(NAMES, key=lambda a: means[a][j])
        assert {a for a, line in lines.items() if _colour(line) == green} == recommended
    else:  # a scatter: the points are the told means, the recommended ones green
        drawn = {}
        for line in front.lines:
            for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True):
                drawn[(round(float(x), 9), round(float(y), 9))] = _colour(line)
        for a, m in means.items():
            colour = drawn[(round(float(m[0]), 9), round(float(m[1]), 9))]
            assert (colour == green) == (a in recommended), a
    step = budget.lines[0]
    if kind == "budget":
        assert np.isclose(step.get_ydata()[-1], sum(c for _, cs in told.values() for c in cs))
        assert budget.lines[1].get_ydata()[0] == 30.0  # the line at B
    else:
        assert step.get_ydata()[-1] == sum(counts.values())


@pytest.mark.parametrize("kind", list(SPECS))
def test_nothing_is_cut_off(studies, kind):
    fig = sp.plot(studies[kind][0])
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    drawn = fig.get_tightbbox(renderer)  # every artist drawn: tick labels, names, titles, legends (inches)
    page = fig.bbox_inches
    assert page.x0 - 0.01 <= drawn.x0 and drawn.x1 <= page.x1 + 0.01, (drawn, page)
    assert page.y0 - 0.01 <= drawn.y0 and drawn.y1 <= page.y1 + 0.01, (drawn, page)
    for ax in fig.axes:  # and no panel overlaps another
        for other in fig.axes:
            if other is not ax:
                assert not ax.get_window_extent(renderer).overlaps(other.get_window_extent(renderer))


@pytest.mark.parametrize(("kind", "suffix"), [("online", ".png"), ("budget", ".pdf"), ("confidence", ".svg")])
def test_plot_writes_the_file_its_suffix_names(studies, kind, suffix, tmp_path, capsys):
    from PIL import Image

    study = studies[kind][0]
    path = tmp_path / f"python{suffix}"
    sp.save(sp.plot(study), path)
    out = tmp_path / f"cli{suffix}"
    assert main(["study", "plot", study.path, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    for p in (path, out):
        head = p.read_bytes()[:400]
        if suffix == ".png":
            with Image.open(p) as im:
                assert min(im.info["dpi"]) >= 199.9 and im.size[0] >= 2000
        else:
            assert head.startswith(b"%PDF") if suffix == ".pdf" else b"<svg" in head


def test_a_figure_file_of_another_kind_is_refused_in_one_line(studies, tmp_path, capsys):
    out = tmp_path / "fig.jpg"
    assert main(["study", "plot", studies["online"][0].path, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fig.jpg" in err and ".png, .pdf, .svg" in err and not out.exists()


def test_each_category_has_its_colour_and_the_never_evaluated_are_named():
    """A hand-built frame of each state: the pulls bars take the category's colour, the never-evaluated arm has no
    point and is named above the front."""
    arms = pd.DataFrame({"arm": ["a", "b", "c", "d", "e"], "pulls": [4, 3, 5, 2, 0],
                         "x": [0.9, 0.5, 0.3, 0.2, np.nan], "y": [0.2, 0.6, 0.3, 0.1, np.nan],
                         "recommended": [True, False, False, False, False],
                         "state": ["accepted", "accepted", "active", "rejected", "unevaluated"]})
    for o in ("x", "y"):
        arms[f"{o}_low"], arms[f"{o}_high"] = arms[o] - 0.05, arms[o] + 0.05
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    history = pd.DataFrame({"ticket": ["t1", "t2"], "state": ["told", "told"], "arm": ["a", "b"],
                            "x": [0.9, 0.5], "y": [0.2, 0.6], "cost": [1.0, 2.5],
                            "asked": [t0, t0], "told": [t0 + pd.Timedelta(seconds=30), t0 + pd.Timedelta(minutes=3)]})
    fig = sp.figure(arms, history, ["x", "y"], budget=10.0)
    front, budget, pulls = _axes(fig)
    expected = [to_hex(sp.CATEGORIES[k][1]) for k in ("recommended", "accepted", "active", "rejected", "unevaluated")]
    assert [_bars(pulls)[a][1] for a in "abcde"] == expected
    assert front.get_title(loc="left") == "never evaluated: e"
    points = {(round(float(x), 6), round(float(y), 6)) for line in front.lines
              for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)}
    assert (0.9, 0.2) in points and not any(np.isnan(p).any() for p in points)
    assert budget.get_xlabel() == "time since the first ask (min)" and list(budget.lines[0].get_ydata()) == [0, 1, 3.5]
    assert [t.get_text() for t in front.get_legend().get_texts()] == ["recommended", "accepted", "still active",
                                                                      "rejected"]
