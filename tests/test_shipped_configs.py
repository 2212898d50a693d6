"""Every shipped spec parses, names registered environments and policies, and only known options."""
from pathlib import Path

import pytest

from mobandit_jax import config as cfg
from mobandit_jax.experiment import resolve_policy_name
from mobandit_jax.policies.base import POLICIES
from mobandit_jax.problems.base import ENVS

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.toml"))


def test_configs_are_shipped():
    names = {p.stem for p in CONFIGS}
    assert {"quickstart", "seed000_llm", "seed000_assets", "seed001_d2", "seed001_eta_grid",
            "seed002_online", "seed002_identification", "seed002_f1", "seed002_stochastic_costs"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_spec_is_valid(path):
    spec = cfg.load(path)
    assert spec["env"]["kind"] in ENVS
    allowed_env = set(ENVS[spec["env"]["kind"]].keys) | {"kind"}
    assert set(spec["env"]) <= allowed_env
    for setting, resolved in cfg.grid_points(spec):
        assert set(resolved["env"]) <= allowed_env, setting
    for entry in spec["policies"]:
        key = resolve_policy_name(entry["name"], entry.get("family"))
        for options in cfg.policy_points(entry):
            assert set(options) <= set(POLICIES[key].defaults), (entry["name"], options)
