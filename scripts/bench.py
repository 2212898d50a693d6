"""Benchmark entry point: ``python scripts/bench.py [--quick] [--seeds 1,256,4096] [--json FILE]``."""
import sys

from mobandit_jax.bench.benchmark import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
