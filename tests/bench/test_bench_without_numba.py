"""Without numba the benchmark leaves its numba column out and says why in one line, once."""
import sys

import mobandit_jax.bench
from mobandit_jax.bench import benchmark


def test_missing_numba_is_said_once_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    monkeypatch.delitem(sys.modules, "mobandit_jax.bench.numba_peers", raising=False)
    monkeypatch.delattr(mobandit_jax.bench, "numba_peers", raising=False)  # imported by an earlier test
    session = benchmark.Session()
    assert benchmark.numba_peers(session) is None
    assert benchmark.numba_peers(session) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "numba is not installed" in out and "mobandit_jax[bench]" in out
