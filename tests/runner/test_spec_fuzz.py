"""Property test of the spec parser: any mutation of a shipped spec, and any ``--set`` string, gives a
valid plan or a :class:`ConfigError` (one message naming the key), never another exception."""
import math
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mobandit_jax.runner import plans
from mobandit_jax.runner import spec as cfg

CONFIGS = sorted(Path(__file__).resolve().parents[2].glob("configs/*.toml"))
# Specs whose plan builds in well under a second; the others are checked up to grid expansion.
QUICK_BUILD = {"quickstart", "pdmob/llm", "cost_aware/f1", "cost_aware/identification", "cost_aware/online",
               "cost_aware/stochastic_costs"}
SCALARS = st.one_of(st.integers(-3, 5000), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                    st.text(max_size=6), st.sampled_from(["stochastic", "prefucb", "beta", "sum", "last10"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)


def _raw(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def _paths(node, prefix=()):
    """Every (path to a container, key in it) of a nested TOML value."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        yield prefix, k
        yield from _paths(v, prefix + (k,))


def _at(node, path):
    for k in path:
        node = node[k]
    return node


def _plan_or_config_error(tables: dict, stem: str, overrides=()):
    try:
        spec = cfg.apply_overrides(tables, overrides)
        points = spec.settings()
        if stem in QUICK_BUILD and len(points) * len(spec.policies) <= 64:
            plan = plans.checked_build(spec)
            assert plan.seeds == spec.experiment.seeds and plan.chunk >= 1
            assert math.ceil(plan.seeds / plan.chunk) >= 1
    except cfg.ConfigError as err:
        assert "\n" not in str(err).strip()


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_shipped_specs_give_a_plan_or_a_config_error(data):
    path = data.draw(st.sampled_from(CONFIGS), label="spec")
    spec = _raw(path)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        where = list(_paths(spec))
        action = data.draw(st.sampled_from(["replace", "delete", "add"]), label="action")
        if action == "add" or not where:
            containers = [()] + [p + (k,) for p, k in where if isinstance(_at(spec, p + (k,)), dict)]
            node = _at(spec, data.draw(st.sampled_from(containers), label="table"))
            node[data.draw(st.text(min_size=1, max_size=8), label="key")] = data.draw(VALUES, label="value")
            continue
        prefix, key = data.draw(st.sampled_from(where), label="at")
        node = _at(spec, prefix)
        if action == "delete":
            del node[key]
        else:
            node[key] = data.draw(VALUES, label="value")
    _plan_or_config_error(spec, path.stem)


KEYS = st.one_of(st.sampled_from(["experiment", "experiment.horizon", "experiment.seeds", "experiment.chunk",
                                  "experiment.setting", "env", "env.kind", "env.means", "env.noise",
                                  "env.concentration", "preference.W", "sweep.env.concentration", "policies",
                                  "scenarios", "sweep", "env.means.x"]),
                 st.text(max_size=12))
RAW = st.one_of(st.sampled_from(["5", "abc", "[1, 2]", "[[0.1, 0.2]]", "{a = 1}", "nan", "-1", "0", "true", "",
                                 "[]", "[[1], [2, 3]]", '"x"', "1e9", "[0.5, 2.0]"]),
                st.text(max_size=12))


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=st.lists(KEYS, min_size=1, max_size=2), raws=st.lists(RAW, min_size=2, max_size=2),
       sep=st.sampled_from(["=", "=", ""]))
def test_random_set_strings_give_a_plan_or_a_config_error(keys, raws, sep):
    overrides = [f"{k}{sep}{v}" for k, v in zip(keys, raws, strict=False)]
    _plan_or_config_error(_raw(CONFIGS[[c.stem for c in CONFIGS].index("quickstart")]), "quickstart", overrides)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_shipped_spec_validates_and_expands(path):
    assert cfg.validate(_raw(path)).settings()


def test_a_line_break_in_a_spec_key_stays_escaped_in_the_one_line_error():
    spec = _raw(CONFIGS[[c.stem for c in CONFIGS].index("quickstart")])
    spec["policies"][0]["\n"] = {"front": {"x": 1.0}}
    with pytest.raises(cfg.ConfigError) as err:
        plans.checked_build(cfg.validate(spec))
    assert "\n" not in str(err.value) and "\\n" in str(err.value)
