"""scripts/gpu_check.sh: its CPU-visible parts (option handling; the whole --dry-run, marked slow), and the
summary agreement it ends with."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def test_unknown_option_is_one_line_exit_2():
    p = subprocess.run(["bash", str(SCRIPT), "--fast"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.strip() == "error: unknown option --fast (allowed: --dry-run)"


def _summary(folder: Path, means):
    folder.mkdir()
    records = [{"policy": "P", "params": {}, "setting": {"g": i}, "metric": "regret", "mean": m, "std": 1.0, "n": 100}
               for i, m in enumerate(means)]
    (folder / "summary.json").write_text(json.dumps({"records": records}))


def test_summary_agreement_classes_each_number_and_fails_only_on_a_different_one(tmp_path):
    _summary(tmp_path / "a", [1.0, 2.0, 3.0])
    _summary(tmp_path / "b", [1.0, 2.0 + 0.1, 3.0 + 0.5])  # 0.1 < 2 * 1 / sqrt(100) = 0.2 < 0.5
    run = lambda *a: subprocess.run([sys.executable, str(ROOT / "scripts" / "summary_agreement.py"), *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=120, cwd=ROOT)
    p = run(str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(tmp_path / "agree.json"))
    assert p.returncode == 1, p.stderr
    counts = json.loads((tmp_path / "agree.json").read_text())
    # per record: mean, n, std; the 2nd record's mean is within sampling error, the 3rd's is not
    assert (counts["bitwise"], counts["sampling"], counts["different"]) == (7, 1, 1)
    assert "{\"g\": 2}" in counts["different_lines"][0] and ".mean" in counts["different_lines"][0]
    assert run(str(tmp_path / "a"), str(tmp_path / "a")).returncode == 0
    missing = run(str(tmp_path / "a"), str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "nowhere" in missing.stderr


@pytest.mark.slow
def test_dry_run_writes_every_step_to_one_json(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable}
    subprocess.run(["bash", str(SCRIPT), str(tmp_path), "--dry-run"], env=env, check=True, timeout=1800,
                   capture_output=True)
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["dry_run"] and "install" not in report["steps"]
    for name, step in report["steps"].items():
        assert step["rc"] == 0, (name, step["output_tail"])
    for side in ("gpu", "cpu"):
        rows = report["bench"][f"{side}_prefucb"]["policies"]
        assert [r["seeds"] for r in rows] == [1, 4] and all(r["seed_rounds_per_s"] > 0 for r in rows)
        assert [r["sets"] for r in report["bench"][f"{side}_kernels"]["hypervolume"]] == [200, 2000]
    assert (tmp_path / "profile.json").exists()
    for run in ("identification", "quickstart", "quickstart_x64"):
        assert report["agreement"][run]["different"] == 0
