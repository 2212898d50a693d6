"""``mobandit reproduce``: specs run in parallel worker processes give the same results as one by one."""
import json

import pytest

from mobandit_jax import reproduce

SPEC = """
[experiment]
horizon = {horizon}
seeds = 3
record_every = 10
[env]
kind = "stochastic"
means = [[0.2, 0.7], [0.6, 0.4], [0.5, 0.5]]
[preference]
W = [[1.0, 0.0], [0.0, 1.0]]
[[policies]]
name = "prefucb"
[[policies]]
name = "pareto_ucb"
"""


def test_parallel_jobs_match_sequential(tmp_path):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "small.toml").write_text(SPEC.format(horizon=40))
    (configs / "large.toml").write_text(SPEC.format(horizon=60))
    assert reproduce.cost(configs / "large.toml", False) > reproduce.cost(configs / "small.toml", False)
    results = {}
    for jobs in (1, 2):
        runs = tmp_path / f"runs{jobs}"
        timing = reproduce.main(configs, runs, tmp_path / "exp", jobs=jobs, log=lambda *a: None)
        assert set(timing) == {"small", "large", "total", "wall", "wall_with_reports"}
        results[jobs] = {stem: json.loads((runs / stem / "summary.json").read_text()) for stem in ("small", "large")}
    assert results[1] == results[2]
    assert len(results[1]["large"]["records"]) > 0


def test_jobs_below_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--jobs 0"):
        reproduce.main(tmp_path, tmp_path / "runs", tmp_path / "exp", jobs=0)
