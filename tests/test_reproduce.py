"""``mobandit reproduce``: specs run in parallel worker processes give the same results as one by one."""
import json
import os

import pytest

from mobandit_jax.runner import reproduce

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


BUILDER = '''
import json
from pathlib import Path


def build(run_dirs, out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "built.json").write_text(json.dumps({k: str(v) for k, v in run_dirs.items()}))
'''


def _experiments(tmp_path, registry, builder=BUILDER):
    exp = tmp_path / "exp"
    (exp / "paper").mkdir(parents=True)
    (exp / "paper" / "report.py").write_text(builder)
    (exp / "reports.toml").write_text(registry)
    return exp


LISTED = '[paper]\nbuilder = "paper/report.py"\nruns = {a = "paper/a", b = "paper/b"}\n'


def test_listed_builders_get_their_runs_and_other_specs_keep_the_generic_report(tmp_path):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "paper").mkdir()
    for stem in ("paper/a", "seed999_mine"):
        (configs / f"{stem}.toml").write_text(SPEC.format(horizon=40))
    exp = _experiments(tmp_path, LISTED)
    lines = []
    reproduce.main(configs, tmp_path / "runs", exp, jobs=1, log=lines.append)
    built = json.loads((exp / "paper" / "built.json").read_text())
    assert built == {"a": str(tmp_path / "runs" / "paper" / "a")}  # paper/b is listed but not in configs/
    mine = tmp_path / "runs" / "seed999_mine"
    assert "prefucb" in (mine / "report.md").read_text().lower() and (mine / "summary.json").is_file()
    assert not (exp / "seed999").exists()
    assert any("seed999_mine: no report builder" in line for line in lines)
    builders = reproduce.report_builders(exp)
    assert reproduce.group({"paper/a": None, "paper/c": None}, builders) == ({"paper": {"a": "paper/a"}}, ["paper/c"])
    assert reproduce.group({"paper/c": None}, builders) == ({}, ["paper/c"])


def test_without_a_spec_folder_the_command_names_the_folder_it_looked_for(tmp_path, monkeypatch, capsys):
    from mobandit_jax.runner import cli

    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))  # the CLI sets it; restored after
    monkeypatch.chdir(tmp_path)
    assert cli.main(["reproduce"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(tmp_path / "configs") in err
    (tmp_path / "configs").mkdir()
    assert cli.main(["reproduce", "--configs", "configs"]) == 2
    assert "holds no *.toml spec" in capsys.readouterr().err


@pytest.mark.parametrize("registry, builder, error, match", [
    (LISTED.replace("report.py", "missing.py"), BUILDER, FileNotFoundError, "missing.py does not exist"),
    (LISTED.replace('"paper/report.py"', "3"), BUILDER, ValueError, "builder = 3; expected the path"),
    (LISTED.replace('b = "paper/b"', "b = 2"), BUILDER, ValueError, "expected a table of run key = spec name"),
    ('paper = "paper/report.py"\n', BUILDER, ValueError, "must be a table with exactly the keys builder and runs"),
    ("paper = \n", BUILDER, ValueError, "not a valid TOML file"),
    (LISTED, "X = 1\n", ValueError, "must define build"),
])
def test_bad_report_lists_are_refused_before_any_run(tmp_path, registry, builder, error, match):
    configs = tmp_path / "configs"
    (configs / "paper").mkdir(parents=True)
    (configs / "paper" / "a.toml").write_text(SPEC.format(horizon=40))
    exp = _experiments(tmp_path, registry, builder)
    with pytest.raises(error, match=match):
        reproduce.main(configs, tmp_path / "runs", exp, log=lambda *a: None)
    assert not (tmp_path / "runs").exists()


def test_only_names_specs_that_exist(tmp_path):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "paper_a.toml").write_text(SPEC.format(horizon=40))
    with pytest.raises(ValueError, match=r"--only seed003: no spec seed003.toml, seed003/\*.toml or seed003_"):
        reproduce.main(configs, tmp_path / "runs", tmp_path / "exp", only=["seed003"], log=lambda *a: None)


def test_shipped_report_list_covers_the_paper_specs():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    builders = reproduce.report_builders(root / "experiments")
    assert {p: b.path for p, b in builders.items()} == {
        p: root / "experiments" / p / "report.py" for p in ("pdmob", "topk_pareto", "cost_aware")}
    grouped, alone = reproduce.group(reproduce.discover(root / "configs"), builders)
    assert alone == ["quickstart"]
    assert grouped["topk_pareto"] == {
        **{key: f"topk_pareto/{key}" for key in ("d2", "d3", "d4", "d5", "eta_grid", "eta_d3", "eta_d4", "eta_d5",
                                             "fixed_d2", "fixed_d3", "fixed_d4", "fixed_d5")},
        "alt_d2": "topk_pareto/alt_baselines_d2"}
    assert set(grouped["pdmob"]) == {"llm", "assets", "identity_ablation"}
    assert set(grouped["cost_aware"]) == {"online", "identification", "f1", "stochastic_costs"}


def test_compare_records_lists_each_differing_number_and_missing_records():
    rec = {"policy": "P", "params": {"name": "p"}, "setting": {"d": 2}, "metric": "hv", "mean": 0.5305, "n": 10}
    other = {**rec, "metric": "regret", "mean": 4.0}
    assert reproduce.compare_records("paper", [rec, other], [rec, other], complete=True) == []
    lines = reproduce.compare_records("paper", [rec, other], [{**rec, "mean": 0.532}], complete=False)
    assert lines == ['paper | P {"name": "p"} | {"d": 2} | hv.mean | committed 0.5305 | reproduced 0.532']
    lines = reproduce.compare_records("paper", [rec, other], [rec], complete=True)
    assert lines == ['paper | P {"name": "p"} | {"d": 2} | regret.(record) | committed missing | reproduced missing']


def test_check_reruns_into_a_temporary_folder_and_flags_a_changed_committed_number(tmp_path):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "paper_a.toml").write_text(SPEC.format(horizon=40))
    (configs / "alone.toml").write_text(SPEC.format(horizon=40))
    builder = '''
import shutil
from pathlib import Path


def build(run_dirs, out_dir):
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(run_dirs["a"]) / "summary.json", Path(out_dir) / "summary.json")
'''
    exp = _experiments(tmp_path, '[paper]\nbuilder = "paper/report.py"\nruns = {a = "paper_a"}\n', builder)
    quiet = dict(log=lambda *a: None, runs_dir=tmp_path / "runs")
    with pytest.raises(FileNotFoundError, match="no committed"):
        reproduce.check(configs, exp, **quiet)
    reproduce.main(configs, tmp_path / "runs", exp, only=["paper"], log=lambda *a: None)
    assert reproduce.check(configs, exp, **quiet) == []
    assert not (tmp_path / "runs" / "alone").exists()  # a spec no builder lists is not re-run by --check
    summary = json.loads((exp / "paper" / "summary.json").read_text())
    first = summary["records"][0]
    expected = first["mean"]
    first["mean"] = expected + 0.001
    (exp / "paper" / "summary.json").write_text(json.dumps(summary))
    diffs = reproduce.check(configs, exp, **quiet)
    assert len(diffs) == 1
    assert diffs[0].startswith(f"paper | {first['policy']} ") and f"{first['metric']}.mean" in diffs[0]
    assert diffs[0].endswith(f"committed {expected + 0.001} | reproduced {expected}")


def test_check_passes_on_the_committed_reference(tmp_path):
    """`mobandit reproduce --check` on tests/data/check: a small slate spec whose summary is committed; a change
    of the engine or the policies that moves any of its numbers fails here (exit 1 and the differing records)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    ref = root / "tests" / "data" / "check"
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-m", "mobandit_jax.runner.cli", "reproduce", "--check", "--jobs", "1", "--configs",
           str(ref / "configs"), "--experiments", str(ref / "experiments"), "--runs", str(tmp_path / "runs")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "check: every committed number reproduced" in done.stdout
    assert not (tmp_path / "runs").exists()  # the re-run went to a temporary folder
