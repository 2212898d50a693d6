"""Names a user writes: bare policy names shared by two families, misspelt names with the closest one, the
Pareto order as the default cone, plain numbers in messages, and what clipping does to a table's means."""
import json
import subprocess
import sys

import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax.errors import ConfigError, plain
from mobandit_jax.registry import POLICIES, RegistryError
from mobandit_jax.runner import plans
from mobandit_jax.runner import spec as cfg
from mobandit_jax.spec_tables import check_policy

MEANS = [[0.2, 0.7], [0.6, 0.4], [0.5, 0.5], [0.1, 0.1]]


def _spec(*policies, **tables):
    return {"experiment": {"horizon": 30, "seeds": 2, "record_every": 10},
            "env": {"kind": "stochastic", "means": MEANS}, "policies": list(policies), **tables}


def _refused(spec, *expected):
    """``mb.run(spec)`` raises one line holding each of ``expected``; returns it."""
    with pytest.raises(ConfigError) as err:
        mb.run(spec)
    message = str(err.value)
    assert "\n" not in message and all(e in message for e in expected), message
    return message


def test_the_shared_bare_name_is_refused_with_both_choices():
    shared = [k for k in POLICIES if k.rpartition("/")[2] == "pareto_ucb"]
    assert sorted(shared) == ["preference/pareto_ucb", "slate/pareto_ucb"]
    with pytest.raises(RegistryError, match="'preference/pareto_ucb' or 'slate/pareto_ucb'"):
        POLICIES.resolve("pareto_ucb")
    _refused(_spec({"name": "pareto_ucb"}), "registered in 2 families", "'preference/pareto_ucb' or "
             "'slate/pareto_ucb'")


def test_matches_lists_what_a_name_may_mean_and_resolve_refuses_each_undecided_case_in_its_words():
    shared = ["preference/pareto_ucb", "slate/pareto_ucb"]
    assert sorted(POLICIES.matches("pareto_ucb")) == shared
    assert POLICIES.matches("pareto_ucb", "slate") == POLICIES.matches("slate/pareto_ucb") == ["slate/pareto_ucb"]
    assert POLICIES.matches("prefucb") == ["preference/prefucb"] and POLICIES.matches("prefucb", "slate") == []
    assert POLICIES.matches("no_such_policy") == [] == POLICIES.matches("pareto_ucb", "no_such_family")
    assert POLICIES.resolve("pareto_ucb", among={"slate", "budgeted"}) == "slate/pareto_ucb"
    refusals = {("pareto_ucb", "no_such_family"): "unknown family = 'no_such_family'",
                ("prefucb", "slate"): "policy 'prefucb' is in family 'preference', not family = 'slate'",
                ("pareto_ucb", None): "policy 'pareto_ucb' is registered in 2 families",
                ("prefucbb", None): "unknown policy 'prefucbb' (did you mean 'prefucb'?); see `mobandit list`"}
    for (name, family), words in refusals.items():
        with pytest.raises(RegistryError) as err:
            POLICIES.resolve(name, family, among={"preference", "slate"})
        assert str(err.value).startswith(words), str(err.value)


@pytest.mark.parametrize("entry, others, expected", [
    ({"name": "pareto_ucb", "family": "slate"}, [], "slate/pareto_ucb"),
    ({"name": "pareto_ucb", "family": "preference"}, [], "preference/pareto_ucb"),
    ({"name": "slate/pareto_ucb"}, [{"name": "prefucb"}], "slate/pareto_ucb"),
    ({"name": "pareto_ucb"}, [{"name": "prefucb"}], "preference/pareto_ucb"),
    ({"name": "pareto_ucb"}, [{"name": "thv_ucb"}], "slate/pareto_ucb"),
    ({"name": "pareto_ucb"}, [{"name": "prefucb"}, {"name": "cohv_ucb"}], "preference/pareto_ucb"),
    ({"name": "pareto_ucb"}, [{"name": "pareto_ucb_plus", "family": "slate"}], "slate/pareto_ucb"),
    ({"name": "prefucb"}, [{"name": "thv_ucb"}], "preference/prefucb"),
])
def test_the_entry_or_the_other_policies_decide_the_family(entry, others, expected):
    entries = [check_policy(i, e) for i, e in enumerate([entry, *others])]
    assert plans.resolve_policy(entries[0], entries) == expected


@pytest.mark.parametrize("others", [[], [{"name": "prefucb"}, {"name": "thv_ucb"}], [{"name": "cohv_ucb"}]])
def test_nothing_deciding_the_family_is_refused(others):
    entries = [check_policy(i, e) for i, e in enumerate([{"name": "pareto_ucb"}, *others])]
    with pytest.raises(ConfigError, match="write 'preference/pareto_ucb' or 'slate/pareto_ucb'"):
        plans.resolve_policy(entries[0], entries)


def test_every_shipped_spec_names_the_policies_it_named_before():
    """The shipped specs that write the bare ``pareto_ucb`` run it beside preference policies, or say ``family``."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    paths = sorted(root.glob("configs/**/*.toml")) + sorted(root.glob("examples/*.toml"))
    found = {}
    for path in paths:
        spec = cfg.load(path)
        for entry in spec.policies:
            if entry.name == "pareto_ucb":
                found[path.relative_to(root).as_posix()] = plans.resolve_policy(entry, spec.policies)
    assert found["configs/quickstart.toml"] == "preference/pareto_ucb"
    assert found["examples/llm_models.toml"] == "preference/pareto_ucb"
    assert found["configs/topk_pareto/d2.toml"] == "slate/pareto_ucb"
    assert len(found) >= 10


@pytest.mark.parametrize("spec, expected", [
    (_spec({"name": "prefucbb"}), "unknown policy 'prefucbb' (did you mean 'prefucb'?)"),
    (_spec({"name": "pareto_ucb", "family": "slat"}), "unknown family = 'slat' (did you mean 'slate'?)"),
    (_spec({"name": "prefucb", "indx": "klucb"}), "unknown option(s) ['indx'] (did you mean 'index'?)"),
    ({**_spec({"name": "prefucb"}), "env": {"kind": "stochastc", "means": MEANS}},
     "unknown env kind 'stochastc' (did you mean 'stochastic'?)"),
    ({**_spec({"name": "prefucb"}), "env": {"kind": "stochastic", "mean": MEANS}},
     "unknown key(s) ['mean'] (did you mean 'means'?)"),
    ({**_spec({"name": "prefucb"}), "experiment": {"horizn": 30}},
     "unknown key(s) ['horizn'] in [experiment] (did you mean 'horizon'?)"),
    ({**_spec({"name": "prefucb"}), "preferense": {"W": [[1.0, 0.0]]}},
     "unknown key(s) ['preferense'] in [top level] (did you mean 'preference'?)"),
])
def test_a_misspelt_name_gets_the_closest_one(spec, expected):
    _refused(spec, expected)


def test_a_close_match_replaces_the_list_of_every_name():
    close = _refused(_spec({"name": "prefucbb"}))
    assert "thv_ucb" not in close and "did you mean" in close
    far = _refused(_spec({"name": "qqqqqqqq"}))
    assert "did you mean" not in far and all(name in far for name in POLICIES)


def test_a_misspelt_name_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('[experiment]\nhorizon = 20\n[env]\nkind = "stochastic"\nmeans = [[0.2, 0.7], [0.6, 0.4]]\n'
                    '[[policies]]\nname = "parteo_ucb"\n')
    out = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--out",
                          str(tmp_path / "out")], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "did you mean 'pareto_ucb'?" in lines[0], out.stderr


def test_a_missing_preference_is_the_pareto_order():
    """prefucb and pareto_ucb without [preference] give every record of the same spec with W = I."""
    policies = ({"name": "prefucb"}, {"name": "pareto_ucb"})
    default = mb.run(_spec(*policies))
    identity = mb.run(_spec(*policies, preference={"W": [[1.0, 0.0], [0.0, 1.0]]}))
    records = {(r["policy"], r["metric"]): (r["mean"], r["std"]) for r in default.records}
    assert records == {(r["policy"], r["metric"]): (r["mean"], r["std"]) for r in identity.records}
    gap = [r["mean"] for r in default.records if r["metric"] == "regret_gap"]
    assert len(gap) == 2 and all(g >= 0 for g in gap)
    pareto = [not any(all(o >= m for o, m in zip(other, arm, strict=True)) and other != arm for other in MEANS)
              for arm in MEANS]
    assert pareto == [True, True, True, False]
    assert default.truth(0)["families"]["preference"]["cone_optimal"] == pareto


def test_plain_turns_array_numbers_into_python_numbers():
    value = {"a": np.float64(1.5), "b": [np.int64(3), (np.bool_(True), np.array([0.25, 2.0]))]}
    assert plain(value) == {"a": 1.5, "b": [3, (True, [0.25, 2.0])]}
    assert type(plain(value)["a"]) is float and repr(plain(np.float32(0.5))) == "0.5"


@pytest.mark.parametrize("tables, expected", [
    ({"experiment": {"horizon": np.float64(1.5)}}, "experiment.horizon = 1.5:"),
    ({"env": {"kind": "stochastic", "means": np.array([[1.5, 0.2], [0.3, 0.4]])}}, "= 1.5 is outside [0, 1]"),
    ({"env": {"kind": "stochastic", "means": MEANS, "noise": "gaussian", "sigma": np.float64(-0.5)}},
     "sigma = -0.5 must be >= 0"),
    ({"env": {"kind": "stochastic", "means": MEANS, "noise": "gaussian", "clip": np.float64(1.5)}},
     "clip = 1.5 must be true or false"),
    ({"policies": [{"name": "prefucb", "index": np.float64(1.5)}]}, "option index = 1.5 must be str"),
])
def test_messages_print_plain_numbers(tables, expected):
    message = _refused({**_spec({"name": "prefucb"}), **tables}, expected)
    assert "np." not in message and "array(" not in message


def test_seeds_given_as_a_numpy_number_print_plain():
    message = _refused_seeds(np.float64(2.5))
    assert message.startswith("seeds=2.5:") and "np." not in message


def _refused_seeds(seeds):
    with pytest.raises(ConfigError) as err:
        mb.run(_spec({"name": "prefucb"}), seeds=seeds)
    return str(err.value)


def _clipped_mean(r: float, sigma: float) -> float:
    """``E[clip(r + sigma Z, 0, 1)]`` by the trapezoid rule over a fine grid of ``Z`` (no closed form used)."""
    z = np.linspace(-12.0, 12.0, 400_001)
    density = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
    return float(np.trapezoid(np.clip(r + sigma * z, 0.0, 1.0) * density, z))


def test_clipped_gaussian_table_says_so_and_truth_json_holds_the_clipped_means(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("model,acc,speed\na,0.90,0.2\nb,0.5,0.5\nc,0.3,0.97\n")
    spec = {"experiment": {"horizon": 20, "seeds": 2},
            "env": {"kind": "table", "path": str(tmp_path / "t.csv"), "arm": "model",
                    "objectives": ["acc", "speed"], "noise": "gaussian", "sigma": 0.1},
            "policies": [{"name": "prefucb"}]}
    mb.run(spec, out=tmp_path / "run")
    table = np.array([[0.90, 0.2], [0.5, 0.5], [0.3, 0.97]])
    clipped = np.array([[_clipped_mean(r, 0.1) for r in row] for row in table])
    truth = json.loads((tmp_path / "run" / "truth.json").read_text())["settings"][0]
    np.testing.assert_allclose(truth["means"], clipped, atol=1e-9)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("clip = true")]
    assert len(lines) == 1, lines
    shift = np.abs(clipped - table)
    moved = int(np.sum(shift > 1e-6))
    assert f"moves {moved} of 6 means" in lines[0]
    assert f"by at most {shift.max():.3g}:" in lines[0]
    assert "arm c speed 0.97 -> " in lines[0] and "arm a acc 0.9 -> 0.891668" in lines[0]
    assert "arm b" not in lines[0]  # 0.5 is symmetric in [0, 1]: clipping leaves its mean where it was
    assert truth["notes"] == [lines[0]]  # the run's truth.json and its report say it too
    assert f"Note: {lines[0]}." in (tmp_path / "run" / "report.md").read_text()


def test_unclipped_and_bounded_noises_print_no_clip_line(tmp_path, capsys):
    spec = _spec({"name": "naive_elimination"})  # a policy that takes any real rewards
    spec["env"] = {"kind": "stochastic", "means": MEANS, "noise": "gaussian", "sigma": 0.1, "clip": False}
    plans.checked_build(cfg.validate(spec))
    spec["env"] = {"kind": "stochastic", "means": MEANS, "noise": "bernoulli"}
    plans.checked_build(cfg.validate(spec))
    spec["env"] = {"kind": "stochastic", "means": [[0.5, 0.5], [0.5, 0.5]], "noise": "gaussian", "sigma": 0.1}
    plans.checked_build(cfg.validate(spec))  # clipping keeps a mean of 1/2 where it is
    assert "clip" not in capsys.readouterr().err


@pytest.mark.parametrize("cost", [None, "price"])
def test_the_pac_cost_is_what_the_environment_charges(tmp_path, cost):
    """Without a cost column pulls cost nothing (cost 0); with equal costs each pull costs 1 (cost = samples)."""
    (tmp_path / "t.csv").write_text("model,acc,speed,price\na,0.9,0.2,3\nb,0.5,0.5,3\nc,0.2,0.9,3\nd,0.1,0.1,3\n")
    env = {"kind": "table", "path": str(tmp_path / "t.csv"), "arm": "model", "objectives": ["acc", "speed"],
           "noise": "bernoulli", **({"cost": cost} if cost else {})}
    res = mb.run({"experiment": {"horizon": 2000, "seeds": 3}, "env": env,
                  "policies": [{"name": "naive_elimination", "epsilon": 0.2, "delta": 0.1}]})
    means = {r["metric"]: r["mean"] for r in res.records}
    assert means["samples"] > 0
    assert means["cost"] == (means["samples"] if cost else 0.0)
