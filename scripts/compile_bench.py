"""Compile-time benchmark: ``python scripts/compile_bench.py [--sizes ...] [--policies ...] [--timeout S]``."""
import sys

from mobandit_jax.bench.compile_shapes import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
