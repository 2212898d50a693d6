"""The `--check` reference's report builder: the run's summary.json is the report's summary."""
import shutil
from pathlib import Path


def build(run_dirs, out_dir):
    """Copy ``run_dirs["slate"]/summary.json`` to ``out_dir``."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(run_dirs["slate"]) / "summary.json", Path(out_dir) / "summary.json")
