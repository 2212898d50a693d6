"""Every shipped spec parses, names registered environments and policies, and only known options."""
from pathlib import Path

import pytest

from mobandit_jax.registry import ENVS, POLICIES
from mobandit_jax.runner import spec as cfg
from mobandit_jax.runner.plans import resolve_policy
from mobandit_jax.runner.reproduce import load_report

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
CONFIGS = sorted(CONFIG_DIR.rglob("*.toml"))
ALGOS = load_report("topk_pareto", CONFIG_DIR.parent / "experiments").ALGOS


def test_configs_are_shipped():
    names = {p.relative_to(CONFIG_DIR).with_suffix("").as_posix() for p in CONFIGS}
    assert {"quickstart", "pdmob/llm", "pdmob/assets", "topk_pareto/d2", "topk_pareto/eta_grid",
            "cost_aware/online", "cost_aware/identification", "cost_aware/f1", "cost_aware/stochastic_costs"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.relative_to(CONFIG_DIR).with_suffix("").as_posix())
def test_spec_is_valid(path):
    spec = cfg.load(path)
    assert spec.env["kind"] in ENVS
    allowed_env = set(ENVS[spec.env["kind"]].keys) | {"kind"}
    assert set(spec.env) <= allowed_env
    for point in spec.settings():
        assert set(point.env) <= allowed_env, point.setting
    for entry in spec.policies:
        key = resolve_policy(entry, spec.policies)
        for point in spec.settings():
            for options in entry.points(point.setting):
                assert set(options) <= set(POLICIES[key].defaults), (entry.name, options)


ETA_TUNED = {k.split("/")[1] for k, e in POLICIES.items() if e.family == "slate" and "eta" in e.defaults}


SEED001_ETA_GRIDS = {2: "topk_pareto/eta_grid", 3: "topk_pareto/eta_d3", 4: "topk_pareto/eta_d4",
                     5: "topk_pareto/eta_d5"}


@pytest.mark.parametrize("d", sorted(SEED001_ETA_GRIDS))
def test_topk_pareto_main_and_eta_grid_runs_make_one_table(d):
    """The seed-001 report reads the eta-tuned rows of a main table from the eta grid: both specs run the
    same experiment, the main spec holds exactly the policies without an eta, and the grid holds every
    eta-tuned policy on the grid {0.01, 0.1, 0.3, 1.0} of Appendix B."""
    main = cfg.load(CONFIG_DIR / f"topk_pareto/d{d}.toml")
    grid = cfg.load(CONFIG_DIR / f"{SEED001_ETA_GRIDS[d]}.toml")
    fixed = cfg.load(CONFIG_DIR / "topk_pareto/fixed_d2.toml")
    same = ("horizon", "seeds", "seed", "record_every", "setting")
    assert [getattr(main.experiment, k) for k in same] == [getattr(grid.experiment, k) for k in same]
    assert main.env == grid.env and main.sweep == grid.sweep
    assert len(ETA_TUNED) == 10
    assert {p.name for p in main.policies}.isdisjoint(ETA_TUNED)
    assert {p.name for p in grid.policies} == ETA_TUNED
    assert sorted(p.label for p in main.policies + grid.policies) == sorted(p.label for p in fixed.policies)
    for entry in grid.policies:
        assert {point["eta"] for point in entry.points()} == {0.01, 0.1, 0.3, 1.0}, entry.name


def test_topk_pareto_fixed_d2_gives_every_eta_policy_a_tuned_eta_per_front():
    spec = cfg.load(CONFIG_DIR / "topk_pareto/fixed_d2.toml")
    for entry in spec.policies:
        for point in spec.settings():
            (options,) = entry.points(point.setting)
            assert ("eta" in options) == (entry.name in ETA_TUNED), entry.name
            if "eta" in options:
                assert options["eta"] in (0.01, 0.1, 0.3, 1.0), (entry.name, point.setting)
