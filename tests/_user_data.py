"""Helpers for the user-data environment tests: write a CSV and a spec, run it, read its records."""
from __future__ import annotations

import csv
import json

from mobandit_jax import cli
from mobandit_jax.runner import execution, plans
from mobandit_jax.runner import spec as config


def write_csv(path, header, rows):
    """Write ``rows`` under ``header`` to ``path`` and return the path."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def run_spec(spec_path, out):
    """Run a TOML spec in this process; ``{(policy, metric, setting items): mean}`` of its summary."""
    plan = plans.checked_build(config.load(spec_path))
    execution.execute(plan, out, progress=False)
    records = json.loads((out / "summary.json").read_text())["records"]
    return {(r["policy"], r["metric"], tuple(sorted(r["setting"].items()))): r["mean"] for r in records}


def cli_error(spec_path, tmp_path, capsys) -> str:
    """Run the spec through the CLI; assert exit 2 with one line on stderr and no run folder; return the line."""
    out = tmp_path / "run_out"
    assert cli.main(["run", str(spec_path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert not out.exists()
    return err[0]
