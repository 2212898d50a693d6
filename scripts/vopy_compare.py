"""The pac family beside VOPy: ``python scripts/vopy_compare.py --vopy-python PY [--work DIR]``.

``PY`` is an interpreter with VOPy installed (``pip install vopy``; it needs no JAX). Runs
:func:`mobandit_jax.bench.vopy_peer.compare`: VOPy's dataset exported, VOPy's runs, our specs and
``mobandit run`` folders, all kept under ``DIR`` (a second call resumes), then one side-by-side table.
"""
import sys

from mobandit_jax.bench.vopy_peer import main

if __name__ == "__main__":
    sys.exit(main(["compare"] + sys.argv[1:]))
