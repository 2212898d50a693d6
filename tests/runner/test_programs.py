"""Compiled programs kept between runs (mobandit_jax.runner.programs): a repeated run neither traces nor
compiles, computes the same arrays, and a program that JAX's own cache already held is kept in a form that
runs (an executable JAX read from its cache cannot be serialised again)."""
import copy
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mobandit_jax import engine
from mobandit_jax.runner import cache, execution, plans, programs, sharding
from mobandit_jax.runner import spec as cfg


def _tables(small_spec) -> dict:
    spec = copy.deepcopy(small_spec)
    spec["policies"] = [{"name": "prefucb", "label": "PrefUCB"}, {"name": "pareto_ucb", "label": "ParetoUCB"}]
    return cfg.validate(spec).to_dict()


def _spec(small_spec):
    return cfg.validate(_tables(small_spec))


def _arrays(res):
    c = res.curves("regret_gap")
    return np.asarray(c.values)


@pytest.fixture
def kept(monkeypatch, tmp_path):
    folder = tmp_path / "programs"
    monkeypatch.setenv(programs.DIR_ENV, str(folder))
    return folder


def test_a_repeated_run_loads_every_program_and_computes_the_same(small_spec, kept, monkeypatch):
    spec = _spec(small_spec)
    monkeypatch.delenv(programs.DIR_ENV)
    plain = _arrays(execution.execute(plans.build(spec), None, progress=False))  # no program cache: JAX's own
    monkeypatch.setenv(programs.DIR_ENV, str(kept))
    first = _arrays(execution.execute(plans.build(spec), None, progress=False))
    assert len(list(kept.iterdir())) == 2  # one per group
    monkeypatch.setattr(execution, "_lower", lambda *a, **k: pytest.fail("a kept program was traced again"))
    again = _arrays(execution.execute(plans.build(spec), None, progress=False))  # loaded, and it runs
    assert np.array_equal(plain, first) and np.array_equal(first, again)


def test_an_unreadable_entry_is_compiled_again_and_replaced(small_spec, kept):
    spec = _spec(small_spec)
    first = _arrays(execution.execute(plans.build(spec), None, progress=False))
    for path in kept.iterdir():
        path.write_bytes(b"not a program")
    again = _arrays(execution.execute(plans.build(spec), None, progress=False))
    assert np.array_equal(first, again)
    assert all(path.stat().st_size > 1000 for path in kept.iterdir())


def test_the_key_names_the_spec_the_group_and_the_width(small_spec, kept):
    mesh = sharding.local_mesh(1)

    def paths(spec, width=6):
        plan = plans.build(cfg.validate(copy.deepcopy(spec)))
        return [programs.path(plan, i, engine.stack_grid(g.params), width, mesh) for i, g in enumerate(plan.groups)]

    spec = _tables(small_spec)
    spec["experiment"]["chunk"] = 6
    base = paths(spec)
    assert base == paths(copy.deepcopy(spec)) and len(set(base)) == 2
    more_seeds = copy.deepcopy(spec)
    more_seeds["experiment"]["seeds"] = 7  # the seed count is no part of a program; the width is
    assert paths(more_seeds, 6) == base and paths(spec, 8) != base
    for key, value in (("horizon", 140), ("record_every", 30)):
        other = copy.deepcopy(spec)
        other["experiment"][key] = value
        assert not set(paths(other)) & set(base)
    other = copy.deepcopy(spec)
    other["preference"]["W"] = [[1.0, 0.0, 1.0], [0.0, -1.0, 2.0]]
    assert not set(paths(other)) & set(base)


def test_the_cache_is_off_unless_configured_and_follows_the_jax_cache_dir(monkeypatch, tmp_path):
    # configure() writes these variables: each is registered with monkeypatch (set, then removed) to be put back
    for name in (programs.DIR_ENV, cache.DISABLE_ENV, "JAX_ENABLE_COMPILATION_CACHE"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    assert programs.directory() is None
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jaxcache"))
    monkeypatch.setattr(cache, "_update_jax", lambda *a: None)  # leave this process's JAX configuration alone
    cache.configure()
    assert programs.directory() == tmp_path / "jaxcache-programs"
    cache.configure(enabled=False)
    assert programs.directory() is None


def test_the_folder_is_trimmed_least_recently_used_first(small_spec, kept, monkeypatch):
    spec = _spec(small_spec)
    execution.execute(plans.build(spec), None, progress=False)
    first, second = sorted(kept.iterdir(), key=lambda p: p.stat().st_mtime)
    os.utime(first, (1, 1))
    os.utime(second, (2, 2))
    size = first.stat().st_size + second.stat().st_size
    mesh = sharding.local_mesh(1)
    assert programs.load(first, mesh) is not None  # a load marks its entry used: now the newest
    programs.trim(kept, max_bytes=size - 1)
    assert [p.name for p in kept.iterdir()] == [first.name]
    programs.trim(kept, max_bytes=size)  # within the bound: nothing goes
    assert [p.name for p in kept.iterdir()] == [first.name]
    monkeypatch.setenv(cache.PROGRAMS_MAX_BYTES_ENV, "0")
    programs.trim(kept)
    assert list(kept.iterdir()) == []


def test_a_bad_bound_is_one_line_and_exit_2(tmp_path):
    spec = Path(__file__).resolve().parents[2] / "configs" / "quickstart.toml"
    env = {**os.environ, cache.PROGRAMS_MAX_BYTES_ENV: "1G"}
    proc = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--out",
                           str(tmp_path / "run")], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and not (tmp_path / "run" / "summary.json").exists()
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "MOBANDIT_PROGRAMS_MAX_BYTES='1G'" in proc.stderr and "whole number" in proc.stderr
