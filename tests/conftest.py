"""Shared fixtures: a small preference-directed spec."""
import copy
import os
import tempfile

import jax
import pytest

# Identical computations in different tests (same shapes) compile once per session.
jax.config.update("jax_compilation_cache_dir", os.path.join(tempfile.gettempdir(), "mobandit_jax_test_cache"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)

SMALL_SPEC = {
    "experiment": {"name": "small", "horizon": 120, "seeds": 6, "record_every": 20},
    "env": {"kind": "stochastic", "noise": "beta", "concentration": 1.0,
            "means": [[0.2, 0.7, 0.5], [0.6, 0.4, 0.1], [0.55, 0.65, 0.45], [0.3, 0.3, 0.8], [0.7, 0.2, 0.6]]},
    "preference": {"W": [[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]]},
    "policies": [{"name": "prefucb", "label": "PrefUCB"}],
}


@pytest.fixture
def small_spec():
    return copy.deepcopy(SMALL_SPEC)
