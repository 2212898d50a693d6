"""A policy option given per grid setting: ``eta = {front = {linear = 0.3, ...}}`` resolves per grid point."""
import subprocess
import sys

import pytest

from mobandit_jax.errors import ConfigError
from mobandit_jax.spec_tables import check_policy

ENTRY = check_policy(0, {"name": "scalar_ucb", "family": "slate", "eta": {"front": {"linear": 0.3, "convex": 1.0}},
                         "sweep": {"m0": [1, 2]}})


def _points(entry: dict, setting: dict) -> list:
    return check_policy(0, entry).points(setting)


def test_option_table_resolves_at_the_setting():
    assert ENTRY.points({"front": "linear", "d": 2}) == [{"eta": 0.3, "m0": 1}, {"eta": 0.3, "m0": 2}]
    assert ENTRY.points({"front": "convex"})[0]["eta"] == 1.0
    assert ENTRY.points() == [{"eta": {"front": {"linear": 0.3, "convex": 1.0}}, "m0": m0} for m0 in (1, 2)]
    assert _points({"name": "x", "eta": 0.1}, {"front": "linear"}) == [{"eta": 0.1}]


def test_numeric_setting_values_are_matched_by_their_label():
    entry = {"name": "scalar_ucb", "eta": {"d": {"2": 0.3, "3": 0.01}}}
    assert _points(entry, {"d": 3}) == [{"eta": 0.01}]


@pytest.mark.parametrize("setting,msg", [({"d": 2}, "depends on setting 'front'"),
                                         ({"front": "clusters"}, "no value for front = 'clusters'")])
def test_missing_setting_or_value_is_named(setting, msg):
    with pytest.raises(ConfigError, match=msg):
        ENTRY.points(setting)


def test_bad_table_shape_is_named():
    with pytest.raises(ConfigError, match="must be a value or"):
        _points({"name": "x", "eta": {"front": 0.3}}, {"front": "linear"})


SPEC = """
[experiment]
horizon = 5
seeds = 1
[env]
kind = "dtlz"
d = 2
n = 12
k = 2
sigma = 0.05
front = "concave"
[sweep]
"env.front" = ["concave", "linear"]
[[policies]]
name = "scalar_ucb"
family = "slate"
eta = {front = {concave = 0.3}}
"""


def test_cli_reports_a_missing_value_in_one_line(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(SPEC)
    out = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "run", str(path),
                          "--out", str(tmp_path / "r")],
                         capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "no value for front = 'linear'" in lines[0] and "concave" in lines[0]
