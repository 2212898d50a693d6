"""Bad input gets a clear error naming the offending key or value."""
import copy
import subprocess
import sys

import pytest

from mobandit_jax.cli import main
from mobandit_jax.runner import plans
from mobandit_jax.runner import spec as cfg


def _build(spec):
    return plans.build(cfg.validate(spec))


def test_misspelt_experiment_key(small_spec):
    small_spec["experiment"]["horizn"] = 10
    with pytest.raises(cfg.ConfigError,
                       match=r"unknown key\(s\) \['horizn'\] in \[experiment\] \(did you mean 'horizon'\?\); "
                             "allowed keys"):
        cfg.validate(small_spec)


def test_misspelt_top_level_and_env_key(small_spec):
    bad = copy.deepcopy(small_spec)
    bad["preferences"] = {}
    with pytest.raises(cfg.ConfigError, match="'preferences'"):
        cfg.validate(bad)
    small_spec["env"]["concentraton"] = 1.0
    with pytest.raises(KeyError, match="concentraton"):
        _build(small_spec)


def test_unknown_policy_and_option(small_spec):
    small_spec["policies"] = [{"name": "prefucbb"}]
    with pytest.raises(cfg.ConfigError, match="unknown policy 'prefucbb'"):
        _build(small_spec)
    small_spec["policies"] = [{"name": "prefucb", "alpha": 2.0}]
    with pytest.raises(KeyError, match=r"unknown option\(s\) \['alpha'\]"):
        _build(small_spec)


def test_zero_cone_row(small_spec):
    small_spec["preference"]["W"] = [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    with pytest.raises(ValueError, match="row 1 is all zeros"):
        _build(small_spec)


def test_means_outside_unit_interval_and_nan(small_spec):
    spec = copy.deepcopy(small_spec)
    spec["env"]["means"][2][1] = 1.3
    with pytest.raises(ValueError, match=r"means\[2\]\[1\] = 1.3 is outside \[0, 1\]"):
        _build(spec)
    small_spec["env"]["means"][0][0] = float("nan")
    with pytest.raises(cfg.ConfigError, match=r"^env.means\[0\]\[0\] = nan is not a finite number$"):
        _build(small_spec)


def test_horizon_and_arm_count(small_spec):
    spec = copy.deepcopy(small_spec)
    spec["experiment"]["horizon"] = 0
    with pytest.raises(cfg.ConfigError, match="experiment.horizon = 0"):
        cfg.validate(spec)
    small_spec["env"]["means"] = [[0.5, 0.5, 0.5]]
    with pytest.raises(ValueError, match="K >= 2 arms; got K = 1"):
        _build(small_spec)


def test_w_columns_must_match_dimension(small_spec):
    small_spec["preference"]["W"] = [[1.0, 0.0]]
    with pytest.raises(ValueError, match="2 columns but the arms have d = 3"):
        _build(small_spec)


def test_set_override_parses_toml_values(small_spec):
    spec = cfg.apply_overrides(small_spec, ["experiment.horizon=55", "env.noise=bernoulli"])
    assert spec.experiment.horizon == 55 and spec.env["noise"] == "bernoulli"
    assert spec.to_dict()["experiment"]["horizon"] == 55 and small_spec["experiment"]["horizon"] != 55
    with pytest.raises(cfg.ConfigError, match="expected key=value"):
        cfg.apply_overrides(small_spec, ["experiment.horizon"])


def test_set_replaces_a_sweep_axis(small_spec):
    small_spec["sweep"] = {"env.concentration": [0.5, 2.0]}
    spec = cfg.apply_overrides(small_spec, ["sweep.env.concentration=[1.0]"])
    assert spec.sweep == {"env.concentration": [1.0]} == spec.to_dict()["sweep"]


def test_scenarios_and_sweep_expand_with_settings(small_spec):
    small_spec["scenarios"] = [{"name": "a", "setting": {"group": "x"}, "preference.W": [[1.0, 0.0, 0.0]]},
                               {"name": "b", "preference.W": [[0.0, 1.0, 0.0]]}]
    small_spec["sweep"] = {"env.concentration": [0.5, 2.0]}
    points = cfg.validate(small_spec).settings()
    assert [p.setting for p in points] == [{"scenario": "a", "group": "x", "concentration": 0.5},
                                      {"scenario": "a", "group": "x", "concentration": 2.0},
                                      {"scenario": "b", "concentration": 0.5}, {"scenario": "b", "concentration": 2.0}]
    assert points[3].cone == [[0.0, 1.0, 0.0]] == points[3].tables["preference"]["W"]
    assert points[3].env["concentration"] == 2.0 and points[0].cone == [[1.0, 0.0, 0.0]]


def test_cli_reports_errors_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[experiment]\nhorizon = 10\nseedz = 3\n[env]\nkind = "stochastic"\n'
                   'means = [[0.1, 0.2], [0.3, 0.4]]\n'
                   '[[policies]]\nname = "gt_pf"\n')
    assert main(["run", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "seedz" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.toml")]) == 2


def test_cli_list_names_every_family():
    out = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "list"], capture_output=True, text=True,
                         check=True).stdout
    for name in ("prefucb", "pareto_ucb", "scalarized_ucb_rr", "gt_pf", "stochastic", "preference"):
        assert name in out


def _edit(old, new):
    return lambda text: text.replace(old, new, 1)


CLI_CASES = {  # id: (edit of the spec text, extra arguments, text the one error line must contain)
    "set_table": (None, ["--set", "experiment=5"], "--set experiment=5: 'experiment' is a table"),
    "set_text_for_number": (None, ["--set", "env.concentration=abc"], "env.concentration=abc: expected a number"),
    "label_not_text": (_edit('label = "PrefUCB"', "label = 7"), [], "label = 7 must be a non-empty string"),
    "empty_policy_sweep": (_edit('label = "PrefUCB"', 'label = "P"\nsweep = {iters = []}'), [],
                           "sweep.iters must be a non-empty list"),
    "max_memory": (None, ["--max-memory", "lots"], "--max-memory 'lots': expected a size"),
    "ragged_means": (_edit("[0.3, 0.3, 0.8]]", "[0.3, 0.8]]"), [], "env.means is ragged: row 3 has 2 values"),
    "text_in_means": (_edit("[0.3, 0.3, 0.8]]", '[0.3, "a", 0.8]]'), [], "env.means[3][1] = 'a' is not a number"),
    "text_in_W": (_edit("[0.0, -1.0, 1.0]]", "[0.0, -1.0, true]]"), [], "preference.W[1][2] = True is not a number"),
    "nan_in_W": (_edit("[0.0, -1.0, 1.0]]", "[0.0, -1.0, nan]]"), [],
                 "preference.W[1][2] = nan is not a finite number"),
    "family_mismatch": (_edit('label = "PrefUCB"', 'family = "slate"'), [],
                        "policy 'prefucb' is in family 'preference', not family = 'slate'"),
    "single_bracket_policies": (_edit("[[policies]]", "[policies]"), [],
                                "[policies] is a single table; write [[policies]]"),
    "option_type": (_edit('name = "prefucb"', 'name = "hv_ucb"\nalpha = "big"'), [],
                    "policy 'PrefUCB': option alpha = 'big' must be float like its default 2.0"),
    "unknown_option": (_edit('label = "PrefUCB"', "alpha = 2.0"), [],
                       "policy 'preference/prefucb' got unknown option(s) ['alpha']"),
    "seeds_not_integer": (None, ["--seeds", "x"], "argument --seeds: invalid int value: 'x'"),
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_cli_bad_input_gives_one_named_line_and_touches_nothing(case, tmp_path, capsys):
    from _tiny_spec import tiny_spec

    edit, extra, expected = CLI_CASES[case]
    spec = tiny_spec(tmp_path / "spec.toml")
    if edit:
        spec.write_text(edit(spec.read_text()))
    before = spec.read_bytes()
    try:
        code = main(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet", *extra])
    except SystemExit as exit_:  # argparse usage errors
        code = exit_.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and expected in err[0], err
    assert spec.read_bytes() == before and not (tmp_path / "out").exists()


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\x00", "name = 'caf\u00e9'".encode("latin-1")],
                         ids=["binary", "latin1"])
def test_cli_names_a_config_that_is_not_utf8_text(content, tmp_path, capsys):
    spec = tmp_path / "weird.toml"
    spec.write_bytes(content)
    assert main(["run", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(spec) in err[0] and "not a UTF-8 text file" in err[0]
    assert spec.read_bytes() == content


def test_cli_names_a_folder_given_as_the_config(tmp_path, capsys):
    assert main(["run", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"config {str(tmp_path)!r} is a folder" in err[0]


def test_a_cone_of_the_wrong_width_in_a_projected_family_is_one_line(tmp_path, capsys):
    """[preference] W applies to a slate spec by projection; a W whose columns are not the objectives is refused."""
    spec = tmp_path / "slate.toml"
    spec.write_text('[experiment]\nhorizon = 20\nseeds = 2\n\n[env]\nkind = "dtlz"\nd = 2\nn = 12\nk = 2\n\n'
                    '[preference]\nW = [[1.0, 0.0, 1.0]]\n\n[[policies]]\nname = "thv_ucb"\n')
    code = main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "W has 3 columns" in err[0] and "d = 2" in err[0], err
    assert not (tmp_path / "run").exists()
