"""scripts/gpu_check.sh: its CPU-visible parts (option handling; the whole --dry-run, marked slow)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.sh"


def test_unknown_option_is_one_line_exit_2():
    p = subprocess.run(["bash", str(SCRIPT), "--fast"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.strip() == "error: unknown option --fast (allowed: --dry-run)"


@pytest.mark.slow
def test_dry_run_writes_every_step_to_one_json(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path)}
    subprocess.run(["bash", str(SCRIPT), "--dry-run"], env=env, check=True, timeout=1200, capture_output=True)
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["dry_run"] and report["steps"]["install"] is None
    for name in ("tests", "bench_prefucb", "bench_thv_d2", "bench_cohv", "spec"):
        assert report["steps"][name]["rc"] == 0, (name, report["steps"][name]["output_tail"])
    for algo in ("prefucb", "thv_d2", "cohv"):
        rows = report["bench"][algo]["policies"]
        assert [r["seeds"] for r in rows] == [1, 4] and all(r["seed_rounds_per_s"] > 0 for r in rows)
    assert report["spec"]["records"] > 0
