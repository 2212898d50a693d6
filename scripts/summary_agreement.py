"""Do two run folders of one spec agree? Their ``summary.json`` records classed as ``mobandit reproduce
--check`` classes committed numbers against re-run ones (bitwise, round-off, within sampling error, different),
the first folder taken as the committed side.

    python scripts/summary_agreement.py RUN_A RUN_B [--json FILE]

Prints the counts and every ``different`` number; exit 0 when none is ``different``, 1 otherwise, 2 on a
folder without a readable summary. Used by ``scripts/gpu_check.sh`` (a GPU run against the CPU run).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mobandit_jax.runner import reproduce


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="the first run folder (the reference side)")
    parser.add_argument("b", help="the second run folder")
    parser.add_argument("--json", help="also write the classes' counts and the different lines to this file")
    args = parser.parse_args(argv)
    try:
        a, b = (reproduce._records(Path(d) / "summary.json", "run") for d in (args.a, args.b))
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    found = reproduce.compare_records(Path(args.a).name, a, b, complete=True)
    print(reproduce.counts(found))
    for line in found["different"]:
        print(f"different: {line}")
    if args.json:
        Path(args.json).write_text(json.dumps({c: len(found[c]) for c in reproduce.CLASSES}
                                              | {"different_lines": found["different"]}, indent=1))
    return 1 if found["different"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
