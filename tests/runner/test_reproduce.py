"""``mobandit reproduce``: specs run in parallel worker processes give the same results as one by one; ``--check``
classes each committed number; every bad option is one line, exit 2, and no file reproduce did not write is touched."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

from mobandit_jax import cli
from mobandit_jax.runner import cache, devices, reproduce

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


@pytest.fixture
def cli_env(monkeypatch):
    """What the CLI sets in the environment (the XLA flags, the compilation cache) is restored after the test."""
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", os.path.join(tempfile.gettempdir(), "mobandit_jax_test_cache"))


def _fails(argv, capsys, expected):
    """``mobandit reproduce ARGV`` exits 2 with one line on stderr holding ``expected``."""
    try:
        code = cli.main(["reproduce", *argv])
    except SystemExit as exit_:  # argparse usage errors
        code = exit_.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and expected in err[0], err


def _listing(root):
    return sorted((os.path.relpath(os.path.join(d, f), root), os.path.getsize(os.path.join(d, f)))
                  for d, _, fs in os.walk(root) for f in fs)


@pytest.mark.slow  # many processes or a long run: `pytest -m slow`
@pytest.mark.skipif(devices.cpu_cores() < 2, reason="--jobs 2 needs 2 cores")
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
        assert set(timing) == {"small", "large", "total", "wall_with_reports"}
        results[jobs] = {stem: json.loads((runs / stem / "summary.json").read_text()) for stem in ("small", "large")}
    assert results[1] == results[2]
    assert len(results[1]["large"]["records"]) > 0


@pytest.mark.skipif(devices.cpu_cores() < 2, reason="--jobs 2 needs 2 cores")
def test_a_killed_job_process_stops_the_reproduction_in_one_line(tmp_path):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "killed.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    (configs / "killed.toml").write_text(SPEC.format(horizon=40).replace("[env]", 'plugins = ["killed.py"]\n[env]'))
    (configs / "fine.toml").write_text(SPEC.format(horizon=40))
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    proc = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "reproduce", "--configs", configs, "--runs",
                           tmp_path / "runs", "--experiments", tmp_path / "exp", "--jobs", "2", "--no-cache"],
                          capture_output=True, text=True, env=env, timeout=600)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert err[0] == "error: a job process stopped abruptly (killed: out of memory? try --jobs 1)"


def test_longest_first_orders_by_recorded_seconds_and_scales_the_sizes_of_the_others():
    sizes = {"a": 100, "b": 400, "c": 10, "d": 50}
    assert reproduce.longest_first(sizes, {}) == ["b", "a", "d", "c"]  # nothing recorded: by size
    # b and c took 2 s and 30 s: 32 s over 410 units, so a is expected at 7.8 s and d at 3.9 s
    assert reproduce.longest_first(sizes, {"b": 2.0, "c": 30.0}) == ["c", "a", "d", "b"]
    assert reproduce.longest_first(sizes, {"a": 1.0, "b": 2.0, "c": 4.0, "d": 3.0}) == ["c", "d", "b", "a"]


def test_each_specs_seconds_are_kept_per_mode_beside_the_programs_and_order_the_next_run(tmp_path, monkeypatch):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "small.toml").write_text(SPEC.format(horizon=40))
    (configs / "large.toml").write_text(SPEC.format(horizon=60))
    monkeypatch.delenv(cache.PROGRAMS_ENV, raising=False)  # the cache off: nothing kept, nothing read
    reproduce.main(configs, tmp_path / "runs0", tmp_path / "exp", log=lambda *a: None)
    assert reproduce.recorded_seconds() == {} and not list(tmp_path.rglob(reproduce.SECONDS))
    programs = tmp_path / "programs"
    monkeypatch.setenv(cache.PROGRAMS_ENV, str(programs))
    programs.mkdir()
    (programs / reproduce.SECONDS).write_text("not json")  # an unreadable file is replaced
    order = []
    reproduce.main(configs, tmp_path / "runs1", tmp_path / "exp", log=order.append)
    kept = json.loads((programs / reproduce.SECONDS).read_text())
    assert set(kept) == {"full"} and set(kept["full"]) == {"small", "large"}
    assert order[0].startswith(f"running {configs / 'large.toml'}")  # largest first
    reproduce.record_seconds({"small": 100.0}, quick=True)  # another mode leaves this one as it is
    assert reproduce.recorded_seconds() == kept["full"] and reproduce.recorded_seconds(quick=True) == {"small": 100.0}
    reproduce.record_seconds({"small": 100.0})  # the small spec took longest last time: it now starts first
    order.clear()
    reproduce.main(configs, tmp_path / "runs2", tmp_path / "exp", log=order.append)
    assert order[0].startswith(f"running {configs / 'small.toml'}")


@pytest.mark.parametrize("jobs", [0, -1, devices.cpu_cores() + 1, 10**9, True, 1.5])
def test_jobs_outside_one_to_the_cores_are_refused(tmp_path, jobs):
    with pytest.raises(ValueError, match=rf"--jobs {jobs!r}: the number of specs run at once must be an integer "
                                         rf"from 1 to {devices.cpu_cores()}"):
        reproduce.main(tmp_path, tmp_path / "runs", tmp_path / "exp", jobs=jobs)
    assert not (tmp_path / "runs").exists()


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
    from mobandit_jax import cli

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

    root = Path(__file__).resolve().parents[2]
    builders = reproduce.report_builders(root / "experiments")
    assert {p: b.path for p, b in builders.items()} == {
        p: root / "experiments" / p / "report.py"
        for p in ("pdmob", "topk_pareto", "cost_aware", "composed", "fixed_confidence")}
    grouped, alone = reproduce.group(reproduce.discover(root / "configs"), builders)
    assert alone == ["quickstart"]
    assert grouped["topk_pareto"] == {
        **{key: f"topk_pareto/{key}" for key in ("d2", "d3", "d4", "d5", "eta_grid", "eta_d3", "eta_d4", "eta_d5",
                                             "fixed_d2", "fixed_d3", "fixed_d4", "fixed_d5")},
        "alt_d2": "topk_pareto/alt_baselines_d2"}
    assert set(grouped["pdmob"]) == {"llm", "assets", "identity_ablation"}
    assert set(grouped["cost_aware"]) == {"online", "identification", "f1", "stochastic_costs"}
    assert grouped["composed"] == {"topk": "composed/topk_cones", "identification": "composed/identification_cones",
                                   "pac": "composed/pac_cones"}


REC = {"policy": "P", "params": {"name": "p"}, "setting": {"d": 2}, "metric": "hv", "mean": 0.5305, "std": 0.02,
       "n": 16}  # standard error 0.02 / sqrt(16) = 0.005: "sampling" below |difference| 0.01
WHERE = 'paper | P {"name": "p"} | {"d": 2} | hv'


@pytest.mark.parametrize("changed, expected", [
    ({}, {"mean": "bitwise", "n": "bitwise", "std": "bitwise"}),
    ({"mean": 0.5305 * (1 + 4e-7), "std": 0.02 * (1 - 9e-7)},
     {"mean": "round-off", "n": "bitwise", "std": "round-off"}),
    ({"mean": 0.5305 + 0.0099}, {"mean": "sampling", "n": "bitwise", "std": "bitwise"}),
    ({"mean": 0.5305 - 0.0099, "std": 0.03}, {"mean": "sampling", "n": "bitwise", "std": "sampling"}),
    ({"mean": 0.5305 + 0.0101}, {"mean": "different", "n": "bitwise", "std": "bitwise"}),
    ({"std": 0.03}, {"mean": "bitwise", "n": "bitwise", "std": "different"}),  # a std beyond round-off, mean equal
    ({"n": 15}, {"mean": "bitwise", "n": "different", "std": "bitwise"}),
    ({"mean": float("nan")}, {"mean": "different", "n": "bitwise", "std": "bitwise"}),
    ({"extra": 1}, {"extra": "different", "mean": "bitwise", "n": "bitwise", "std": "bitwise"}),
])
def test_classify_names_the_class_of_each_number(changed, expected):
    assert reproduce.classify(REC, {**REC, **changed}) == expected


def test_sampling_uses_the_committed_records_std_and_n_alone():
    """|mean_a - mean_b| < 2 * std / sqrt(n) of the committed record: a larger re-run std does not widen it."""
    rerun = {**REC, "mean": 0.5305 + 0.0101, "std": 1.0}
    assert reproduce.classify(REC, rerun)["mean"] == "different"
    assert reproduce.classify({**REC, "std": 0.0}, {**REC, "std": 0.0, "mean": 0.531})["mean"] == "different"
    assert reproduce.classify({**REC, "mean": float("nan")}, {**REC, "mean": float("nan")})["mean"] == "bitwise"


def test_compare_records_lists_each_number_under_its_class_and_missing_records_as_different():
    other = {**REC, "metric": "regret", "mean": 4.0}
    found = reproduce.compare_records("paper", [REC, other], [REC, other], complete=True)
    assert set(found) == set(reproduce.CLASSES) and len(found["bitwise"]) == 6
    assert not (found["round-off"] or found["sampling"] or found["different"])
    found = reproduce.compare_records("paper", [REC, other], [{**REC, "mean": 0.542}], complete=False)
    assert found["different"] == [f"{WHERE}.mean | committed 0.5305 | reproduced 0.542"] and len(found["bitwise"]) == 2
    found = reproduce.compare_records("paper", [REC, other], [REC, {**other, "mean": 4.001}], complete=False)
    assert found["sampling"] == [WHERE.replace("hv", "regret") + ".mean | committed 4.0 | reproduced 4.001"]
    found = reproduce.compare_records("paper", [REC, other], [REC], complete=True)
    assert found["different"] == [WHERE.replace("hv", "regret") + ".(record) | committed present | reproduced missing"]
    found = reproduce.compare_records("paper", [REC], [REC, other], complete=False)  # a record the reference lacks
    assert found["different"] == [WHERE.replace("hv", "regret") + ".(record) | committed missing | reproduced present"]
    assert reproduce.failing(found) == ["different: " + found["different"][0]]


def test_only_different_numbers_fail_unless_strict():
    found = reproduce.compare_records("paper", [REC], [{**REC, "mean": 0.5305 + 0.004, "std": 0.021}], True)
    assert reproduce.counts(found) == "1 bitwise, 0 round-off, 2 sampling, 0 different"
    found = reproduce.compare_records("paper", [REC], [{**REC, "mean": 0.5305 * (1 + 4e-7), "std": 0.021}], True)
    assert reproduce.counts(found) == "1 bitwise, 1 round-off, 0 sampling, 1 different"  # std: the mean is no sample
    found = reproduce.compare_records("paper", [REC], [{**REC, "mean": 0.5305 * (1 + 4e-7)}], True)
    assert reproduce.failing(found) == []
    assert reproduce.failing(found, strict=True) == [f"round-off: {WHERE}.mean | committed 0.5305 | reproduced "
                                                     f"{0.5305 * (1 + 4e-7)}"]


CHECK_BUILDER = '''
import shutil
from pathlib import Path


def build(run_dirs, out_dir):
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(run_dirs["a"]) / "summary.json", Path(out_dir) / "summary.json")
'''


def _check_setup(tmp_path):
    """configs/paper_a.toml (listed by the paper builder, which copies its summary) and configs/alone.toml."""
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "paper_a.toml").write_text(SPEC.format(horizon=40))
    (configs / "alone.toml").write_text(SPEC.format(horizon=40))
    exp = _experiments(tmp_path, '[paper]\nbuilder = "paper/report.py"\nruns = {a = "paper_a"}\n', CHECK_BUILDER)
    return configs, exp


def _edit_record(exp, mean):
    """Set the mean of the first committed record with a std > 0 to ``mean(record)``; return the record as it was."""
    summary = json.loads((exp / "paper" / "summary.json").read_text())
    i = next(i for i, r in enumerate(summary["records"]) if r["std"] > 0)
    first = dict(summary["records"][i])
    summary["records"][i]["mean"] = mean(first)
    (exp / "paper" / "summary.json").write_text(json.dumps(summary))
    return first


def test_check_reruns_into_a_temporary_folder_and_flags_a_changed_committed_number(tmp_path, cli_env, capsys):
    configs, exp = _check_setup(tmp_path)
    quiet = dict(log=lambda *a: None, runs_dir=tmp_path / "runs")
    with pytest.raises(FileNotFoundError, match="no committed"):
        reproduce.check(configs, exp, **quiet)
    reproduce.main(configs, tmp_path / "runs", exp, only=["paper"], log=lambda *a: None)
    found = reproduce.check(configs, exp, **quiet)
    assert reproduce.failing(found, strict=True) == [] and found["bitwise"]
    assert not (tmp_path / "runs" / "alone").exists()  # a spec no builder lists is not re-run by --check
    # A change far beyond the record's standard error: "different", exit 1.
    first = _edit_record(exp, lambda r: r["mean"] + 1 + 4 * r["std"] / r["n"] ** 0.5)
    changed = first["mean"] + 1 + 4 * first["std"] / first["n"] ** 0.5
    lines = reproduce.failing(reproduce.check(configs, exp, **quiet))
    assert len(lines) == 1
    assert lines[0].startswith(f"different: paper | {first['policy']} ") and f"{first['metric']}.mean" in lines[0]
    assert lines[0].endswith(f"committed {changed} | reproduced {first['mean']}")
    argv = ["--check", "--jobs", "1", "--configs", str(configs), "--experiments", str(exp), "--runs",
            str(tmp_path / "runs")]
    assert cli.main(["reproduce", *argv]) == 1
    out = capsys.readouterr().out
    assert lines[0] in out and "check: 1 committed number(s) differ (" in out and " 1 different)" in out
    # A change within the sampling error passes, and fails under --strict.
    _edit_record(exp, lambda r: first["mean"] + 0.5 * r["std"] / r["n"] ** 0.5)
    assert cli.main(["reproduce", *argv]) == 0
    assert "check: every committed number reproduced (" in capsys.readouterr().out
    assert cli.main(["reproduce", *argv, "--strict"]) == 1
    out = capsys.readouterr().out
    assert "check: 1 committed number(s) differ (" in out and f"{first['metric']}.mean | committed" in out


FIGURES_BUILDER = '''
import json
from pathlib import Path


def build(run_dirs, out_dir, figures=True):
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "figures.json").write_text(json.dumps(figures))
'''


@pytest.mark.parametrize("builder, told", [(FIGURES_BUILDER, False), (CHECK_BUILDER, None)])
def test_without_figures_no_png_is_drawn_and_builders_that_take_the_flag_are_told(tmp_path, builder, told):
    """``main(figures=False)`` (what ``--check`` runs): run folders without PNGs and a report.md that links none,
    the same numbers; a builder whose ``build`` takes ``figures`` gets ``False``, another is called as before."""
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "paper_a.toml").write_text(SPEC.format(horizon=40))
    exp = _experiments(tmp_path, '[paper]\nbuilder = "paper/report.py"\nruns = {a = "paper_a"}\n', builder)
    drawn, bare = tmp_path / "drawn", tmp_path / "bare"
    reproduce.main(configs, drawn, exp, log=lambda *a: None, reports_dir=drawn / "reports")
    reproduce.main(configs, bare, exp, log=lambda *a: None, reports_dir=bare / "reports", figures=False)
    assert sorted(p.name for p in (drawn / "paper_a").glob("*.png"))  # the default draws the run folder's figures
    assert not list((bare / "paper_a").glob("*.png")) and ".png" not in (bare / "paper_a" / "report.md").read_text()
    assert (json.loads((bare / "paper_a" / "summary.json").read_text())
            == json.loads((drawn / "paper_a" / "summary.json").read_text()))
    if told is not None:
        assert json.loads((drawn / "reports" / "paper" / "figures.json").read_text()) is True
        assert json.loads((bare / "reports" / "paper" / "figures.json").read_text()) is told
    else:
        assert (bare / "reports" / "paper" / "summary.json").is_file()


def test_check_passes_on_the_committed_reference(tmp_path):
    """`mobandit reproduce --check` on tests/data/check: a small slate spec whose summary is committed; a change
    of the engine or the policies that moves any of its numbers fails here (exit 1 and the differing records)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    ref = root / "tests" / "data" / "check"
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-m", "mobandit_jax.cli", "reproduce", "--check", "--jobs", "1", "--configs",
           str(ref / "configs"), "--experiments", str(ref / "experiments"), "--runs", str(tmp_path / "runs")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "check: every committed number reproduced" in done.stdout
    assert not (tmp_path / "runs").exists()  # the re-run went to a temporary folder


def _user_folder(tmp_path):
    """configs/paper_a.toml (listed by exp/reports.toml) and a user's folder `mine` holding files of its own."""
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "paper_a.toml").write_text(SPEC.format(horizon=40))
    _experiments(tmp_path, '[paper]\nbuilder = "paper/report.py"\nruns = {a = "paper_a"}\n', CHECK_BUILDER)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


BASE = ["--configs", "configs", "--experiments", "exp", "--runs", "mine", "--jobs", "1"]
CORES = devices.cpu_cores()
REPRODUCE_CASES = {  # id: (setup of the folder, arguments, text of the one error line)
    "jobs_zero": (None, ["--jobs", "0"], "--jobs 0: the number of specs run at once must be an integer from 1 to"),
    "jobs_negative": (None, ["--jobs", "-1"], "--jobs -1: the number"),
    "jobs_huge": (None, ["--jobs", str(10**9)], f"--jobs 1000000000: the number of specs run at once must be an "
                                                f"integer from 1 to {CORES}"),
    "jobs_text": (None, ["--jobs", "two"], "argument --jobs: invalid int value: 'two'"),
    "only_nothing": (None, ["--only"], "argument --only: expected at least one argument"),
    "only_empty_name": (None, ["--only", ""], "--only '': expected a spec name or prefix"),
    "only_no_match": (None, ["--only", "nope"], "--only nope: no spec nope.toml, nope/*.toml or nope_*.toml"),
    "configs_file": (lambda t: _write(t / "cfg.txt", "x"), ["--configs", "cfg.txt"],
                     "--configs cfg.txt is a file; give the folder of the spec files"),
    "configs_missing": (None, ["--configs", "nowhere"], "no spec folder"),
    "bad_spec": (lambda t: _write(t / "configs" / "bad.toml", SPEC.format(horizon=0)), [],
                 "bad.toml: experiment.horizon = 0: it must be an integer >= 1"),
    "absurd_seeds_in_a_spec": (lambda t: _write(t / "configs" / "big.toml", SPEC.format(horizon=9).replace(
        "seeds = 3", "seeds = 10000000000")), [], "big.toml: experiment.seeds = 10000000000: it must be at most"),
    "experiments_file": (lambda t: _write(t / "exp.txt", "x"), ["--experiments", "exp.txt"],
                         "--experiments exp.txt is a file"),
    "check_with_nothing_listed": (None, ["--check", "--experiments", "nowhere"],
                                  "--check: no selected spec of configs is listed in nowhere/reports.toml"),
    "check_without_reference": (None, ["--check"], "--check: no committed exp/paper/summary.json to compare with"),
    "check_truncated_reference": (lambda t: _write(t / "exp" / "paper" / "summary.json", '{"records": [{"pol'),
                                  ["--check"], "--check: committed exp/paper/summary.json cannot be read as a summary"),
    "check_reference_without_records": (lambda t: _write(t / "exp" / "paper" / "summary.json", '{"records": [3]}'),
                                        ["--check"], "'records' must be a list of records"),
    "strict_without_check": (None, ["--strict"], "--strict applies to --check only"),
    "runs_file": (lambda t: _write(t / "runs.txt", "x"), ["--runs", "runs.txt"], "--runs runs.txt: runs.txt is a file"),
    "runs_below_a_file": (lambda t: _write(t / "runs.txt", "x"), ["--runs", "runs.txt/sub"],
                          "--runs runs.txt/sub: runs.txt is a file, not a folder"),
    "runs_with_a_foreign_folder_of_the_specs_name": (lambda t: _write(t / "mine" / "paper_a" / "data.csv", "1,2"), [],
                                                     "--runs mine/paper_a: mine/paper_a is not empty and is not a run"),
    "runs_with_a_file_of_the_specs_name": (lambda t: _write(t / "mine" / "paper_a", "x"), [],
                                           "--runs mine/paper_a: mine/paper_a is a file, not a folder"),
    "runs_with_a_foreign_timing_file": (lambda t: _write(t / "mine" / "reproduce_timing.json", "[1]"), [],
                                        "--runs: mine/reproduce_timing.json was not written by mobandit reproduce"),
    "quick_runs_with_a_foreign_report_folder": (lambda t: _write(t / "mine/quick/experiments/paper/notes.md", "x"),
                                                ["--quick"], "mine/quick/experiments/paper is not a report folder of "
                                                "mobandit reproduce --quick"),
    "quick_runs_with_a_file_for_quick": (lambda t: _write(t / "mine" / "quick", "x"), ["--quick"],
                                         "mine/quick is a file, not a folder"),
}


@pytest.mark.parametrize("case", sorted(REPRODUCE_CASES))
def test_bad_reproduce_options_are_one_line_exit_2_and_touch_nothing(case, tmp_path, monkeypatch, cli_env, capsys):
    setup, extra, expected = REPRODUCE_CASES[case]
    monkeypatch.chdir(tmp_path)
    _user_folder(tmp_path)
    if setup:
        setup(tmp_path)
    before = _listing(tmp_path)
    _fails([*BASE, *extra], capsys, expected)
    assert _listing(tmp_path) == before


def test_runs_in_a_users_folder_keep_the_users_files(tmp_path, monkeypatch, cli_env, capsys):
    monkeypatch.chdir(tmp_path)
    _user_folder(tmp_path)
    _write(tmp_path / "mine" / "other" / "data.csv", "1,2")
    before = dict(_listing(tmp_path / "mine"))
    assert cli.main(["reproduce", *BASE]) == 0
    assert cli.main(["reproduce", *BASE]) == 0  # a second time: its own run folder and timing file again
    after = dict(_listing(tmp_path / "mine"))
    assert {k: after[k] for k in before} == before and (tmp_path / "mine" / "notes.txt").read_text() == "mine"
    assert {"paper_a/summary.json", "reproduce_timing.json"} <= set(after)
    assert cli.main(["reproduce", *BASE, "--quick"]) == 0
    assert cli.main(["reproduce", *BASE, "--quick"]) == 0  # its own quick report folder again
    assert (tmp_path / "mine" / "quick" / "experiments" / "paper" / "summary.json").is_file()
    capsys.readouterr()


def test_interval_fields_absent_from_an_earlier_committed_record_are_not_compared():
    """A committed summary of an earlier version has no se / ci_low / ci_high / interval: re-runs that add them pass;
    where both have them they are compared, and follow their mean's sampling class."""
    new = {**REC, "se": 0.006, "ci_low": 0.52, "ci_high": 0.54, "interval": "t"}
    assert reproduce.classify(REC, new) == {"mean": "bitwise", "n": "bitwise", "std": "bitwise"}
    assert reproduce.classify(new, REC)["ci_low"] == "different"  # a field the committed record has, lost
    moved = {**new, "mean": 0.5305 + 0.0099, "ci_low": 0.53, "ci_high": 0.55}
    found = reproduce.classify(new, moved)
    assert found["mean"] == found["ci_low"] == found["ci_high"] == "sampling" and found["interval"] == "bitwise"
