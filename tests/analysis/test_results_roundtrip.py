"""``Results.load(d).save(e)`` writes the files of ``d`` again, byte for byte; old folders (no
metrics.json, no truth.json) still load and save; a missing or unreadable file is one error naming
the folder and the file."""
import json
import re
import shutil

import pytest
from _tiny_spec import tiny_spec

import mobandit_jax as mb
from mobandit_jax.analysis.results import ResultsFileError
from mobandit_jax.cli import main

RESULT_FILES = ("summary.json", "curves.npz", "finals.npz", "recommended.npz", "grid.json", "truth.json",
                "metrics.json", "report.md", "timing.json", "run.json", "regret_gap.png", "regret_indicator.png")


def _files(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".lock"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("roundtrip")
    assert main(["run", str(tiny_spec(base / "tiny.toml", seeds=4)), "--out", str(base / "run"), "--quiet"]) == 0
    return base / "run"


def test_load_save_is_byte_identical(run, tmp_path):
    before = _files(run)
    assert set(RESULT_FILES) <= set(before)
    mb.Results.load(run).save(tmp_path / "again")
    after = _files(tmp_path / "again")
    assert sorted(after) == sorted(before)
    assert [name for name in before if before[name] != after[name]] == []  # figures included
    mb.Results.load(tmp_path / "again").save(tmp_path / "again")  # into its own folder: unchanged
    assert _files(tmp_path / "again") == after


def test_loaded_results_plot_and_read_their_truth(run):
    back = mb.Results.load(run)
    assert back.reduce["PrefUCB"]["regret_gap"] == "sum" and back.folder == run
    assert back.plot("regret_gap").axes[0].get_title() == "default"
    assert back.truth(0) == back.truth({}) == json.loads((run / "truth.json").read_text())["settings"][0]


def test_old_folder_without_metrics_json_loads_and_saves_again(run, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(run, old)
    (old / "metrics.json").unlink()
    (old / "truth.json").unlink()
    (old / "recommended.npz").unlink()  # nor a recommended.npz: its report lists no recommended sets
    back = mb.Results.load(old)
    assert back.names == mb.Results.load(run).names
    # the figures say which metrics are sums; the other reducers cannot be derived from the folder
    assert back.reduce["PrefUCB"] == {"regret_indicator": "sum", "regret_gap": "sum", "optimal_selection_ratio": None,
                                      "reward_0": None, "reward_1": None, "reward_2": None}
    with pytest.raises(ValueError, match=f"run folder {old} has no truth.json"):
        back.truth(0)
    back.save(tmp_path / "new")
    new, ref = _files(tmp_path / "new"), _files(run)
    # without metrics.json no metric has a goal: no figure of final values (final_<metric>.png) is drawn
    assert sorted(new) == sorted(name for name in ref if name not in ("truth.json", "recommended.npz")
                                 and not name.startswith("final_"))
    assert [name for name in new if name not in ("metrics.json", "report.md") and new[name] != ref[name]] == []
    want = re.sub(rb"## Recommended sets\n.*?(?=!\[)", b"", ref["report.md"], flags=re.S)
    assert new["report.md"] == re.sub(rb"!\[final_\w+\.png\]\(final_\w+\.png\)\n", b"", want)
    assert json.loads(new["metrics.json"])["reduce"] == back.reduce
    assert mb.Results.load(tmp_path / "new").reduce == back.reduce


def _cut(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


@pytest.mark.parametrize("name", ["summary.json", "grid.json", "curves.npz", "finals.npz", "truth.json",
                                  "metrics.json", "run.json", "timing.json"])
def test_truncated_file_is_one_error_naming_folder_and_file(run, tmp_path, name):
    folder = tmp_path / "cut"
    shutil.copytree(run, folder)
    _cut(folder / name)
    with pytest.raises(ResultsFileError) as err:
        mb.Results.load(folder)
    assert isinstance(err.value, ValueError)
    assert f"run folder {folder}: {name} cannot be read" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("name, text, why", [
    ("summary.json", '{"my": "numbers"}', "'records' (list)"),
    ("summary.json", '{"records": [{"policy": "P"}]}', "record 0 is not an object"),
    ("grid.json", "[1, 2]", "not a JSON object"),
    ("metrics.json", '{"names": {}}', "'reduce' (dict)"),
    ("metrics.json", '{"names": {"PrefUCB": ["regret_gap"]}, "reduce": {}}', "has no entry in 'reduce'"),
    ("truth.json", '{"settings": 3}', "'settings' (list)"),
    ("curves.npz", "not a zip file", "curves.npz cannot be read"),
])
def test_wrong_content_is_one_error(run, tmp_path, name, text, why):
    folder = tmp_path / "bad"
    shutil.copytree(run, folder)
    (folder / name).write_text(text)
    with pytest.raises(ResultsFileError, match=f"{name} cannot be read") as err:
        mb.Results.load(folder)
    assert why in str(err.value)


@pytest.mark.parametrize("name", ["summary.json", "grid.json"])
def test_missing_file_is_file_not_found(run, tmp_path, name):
    folder = tmp_path / "gone"
    shutil.copytree(run, folder)
    (folder / name).unlink()
    with pytest.raises(FileNotFoundError, match=f"{folder} has no {name}"):
        mb.Results.load(folder)


def test_folder_without_arrays_loads_its_records_but_cannot_be_saved(run, tmp_path):
    folder = tmp_path / "records_only"
    shutil.copytree(run, folder)
    (folder / "curves.npz").unlink()
    back = mb.Results.load(folder)
    assert back.records == mb.Results.load(run).records
    for call in (lambda: back.save(tmp_path / "e"), lambda: back.curves("regret_gap"),
                 lambda: back.plot("regret_gap")):
        with pytest.raises(FileNotFoundError, match=f"run folder {folder} has no curves.npz"):
            call()
    assert not (tmp_path / "e").exists()  # nothing written
