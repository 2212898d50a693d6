"""The spec tables a run's spec and a study's spec share (``mobandit_jax.spec_tables``, ``plugins.validate``): each
check is written once, raises the caller's error class and names the key; a study and a run refuse the same cone
with the same words."""
import pytest

import mobandit_jax as mb
from mobandit_jax import plugins
from mobandit_jax.errors import ConfigError
from mobandit_jax.runner import spec as cfg
from mobandit_jax.spec_tables import PolicyEntry, check_matrix, check_policy
from mobandit_jax.study.spec import load_spec


@pytest.mark.parametrize("value, columns, words", [
    ([], None, "preference.W must be a non-empty list of non-empty rows of numbers; got []"),
    ([[1.0, 0.0], []], None, "non-empty rows"),
    ([[1.0, 0.0], [1.0]], None, "preference.W is ragged: row 1 has 1 values, row 0 has 2"),
    ([[1.0, "a"]], None, "preference.W[0][1] = 'a' is not a number"),
    ([[True, 0.0]], None, "preference.W[0][0] = True is not a number"),
    ([[1.0, float("inf")]], None, "preference.W[0][1] = inf is not a finite number"),
    ([[1.0, 0.0, 1.0]], 2, "preference.W[0] has 3 values; it needs 2, one per objective"),
])
def test_a_bad_matrix_is_one_line_naming_the_entry(value, columns, words):
    with pytest.raises(ConfigError) as err:
        check_matrix(value, "preference.W", columns)
    assert words in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(mb.StudyError):  # the caller's class
        check_matrix(value, "preference.W", columns, mb.StudyError)


def test_a_good_matrix_is_returned_as_given():
    W = [[1, 0.5], [0, 2]]
    assert check_matrix(W, "preference.W") is W and check_matrix(W, "preference.W", 2) is W


def test_a_policy_entry_splits_its_meta_keys_from_its_options():
    table = {"eta": 0.3, "name": "thv_ucb", "sweep": {"m0": [1, 2]}, "family": "slate", "k0": 2}
    entry = check_policy(0, table)
    assert entry == PolicyEntry("thv_ucb", "thv_ucb", "slate", {"m0": [1, 2]}, {"eta": 0.3, "k0": 2})
    assert list(entry.options) == ["eta", "k0"]  # in the table's order
    assert check_policy(1, {"name": "p", "label": "P"}).label == "P"


def test_the_points_of_an_entry_are_the_product_of_its_sweep_in_order():
    entry = check_policy(0, {"name": "p", "c": 0, "sweep": {"a": [1, 2], "b": [3, 4]}})
    expected = [{"c": 0, "a": 1, "b": 3}, {"c": 0, "a": 1, "b": 4}, {"c": 0, "a": 2, "b": 3}, {"c": 0, "a": 2, "b": 4}]
    points = entry.points()
    assert points == expected and all(list(p) == ["c", "a", "b"] for p in points)
    assert check_policy(0, {"name": "p", "a": 9, "sweep": {"a": [1]}}).points() == [{"a": 1}]  # the sweep wins


@pytest.mark.parametrize("table, words", [
    ({"label": "x"}, "[[policies]] entry 3 needs a 'name'"),
    ({"name": "p", "label": 7}, "[[policies]] entry 3: label = 7 must be a non-empty string"),
    ({"name": "p", "family": ""}, "family = '' must be a non-empty string"),
    ({"name": "p", "sweep": [1]}, "[[policies]] entry 3 (p): 'sweep' must be a table of lists"),
    ({"name": "p", "sweep": {"eta": []}}, "[[policies]] entry 3 (p): sweep.eta must be a non-empty list; got []"),
])
def test_a_bad_policy_entry_is_one_line(table, words):
    with pytest.raises(mb.StudyError) as err:
        check_policy(3, table, mb.StudyError)
    assert words in str(err.value)


def test_plugin_entries_are_anchored_at_the_spec_folder_and_must_exist(tmp_path):
    (tmp_path / "mine.py").write_text("")
    assert plugins.validate(["mine.py", "my_pkg.envs"], tmp_path) == [str(tmp_path / "mine.py"), "my_pkg.envs"]
    assert plugins.validate([str(tmp_path / "mine.py")]) == [str(tmp_path / "mine.py")]
    with pytest.raises(mb.StudyError, match=r"plugin file '.*gone\.py' does not exist"):
        plugins.validate(["gone.py"], tmp_path, mb.StudyError)
    with pytest.raises(ConfigError, match=r"experiment.plugins = \['', 3\] must be a list of file paths"):
        plugins.validate(["", 3])


def _study(W: list) -> dict:
    return {"study": {"arms": ["a", "b", "c"], "objectives": ["x", "y"]}, "preference": {"W": W},
            "policies": [{"name": "prefucb"}]}


def _run(W: list) -> dict:
    return {"env": {"kind": "stochastic", "means": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]}, "preference": {"W": W},
            "policies": [{"name": "prefucb"}]}


@pytest.mark.parametrize("W, words", [([[1.0, float("nan")]], "preference.W[0][1] = nan is not a finite number"),
                                      ([[1.0, "x"]], "preference.W[0][1] = 'x' is not a number"),
                                      ([[1.0, 0.0], [1.0]], "preference.W is ragged")])
def test_a_study_and_a_run_refuse_the_same_cone_with_the_same_words(W, words):
    with pytest.raises(mb.StudyError) as study:
        load_spec(_study(W))
    with pytest.raises(ConfigError) as run:
        cfg.validate(_run(W)).settings()
    if "ragged" not in words:  # a study knows its objectives: its rows must have d = 2 values
        assert str(study.value) == str(run.value) == words
    else:
        assert str(study.value) == "preference.W[1] has 1 values; it needs 2, one per objective"
        assert str(run.value).startswith(words)
    assert load_spec(_study([[1, 0], [0, 1]])).W == [[1.0, 0.0], [0.0, 1.0]]


def test_a_study_entry_is_checked_as_a_runs_entry():
    spec = _study([[1.0, 0.0]]) | {"policies": [{"name": "prefucb", "label": 5}]}
    with pytest.raises(mb.StudyError, match="label = 5 must be a non-empty string"):
        load_spec(spec)
    spec["policies"] = [{"name": "prefucb", "sweep": {"alpha": [1.0, 2.0]}}]
    with pytest.raises(mb.StudyError, match="a study runs one configuration"):
        load_spec(spec)
    spec["policies"] = [{"name": "prefucb", "alpha": 1.5, "label": "P"}]
    loaded = load_spec(spec)
    assert (loaded.policy, loaded.family, loaded.options) == ("prefucb", None, {"alpha": 1.5})
