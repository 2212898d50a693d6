"""Xue et al. environment: loader, bundled simulated stand-in and its generator, preprocessing, bootstrap stream."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax.kernels.prefix import dense
from mobandit_jax.problems import llm_configs as L
from mobandit_jax.registry import make_env

DATA = Path(__file__).parents[1] / "data" / "llm_configs_small.csv"
GENERATOR = Path(__file__).resolve().parents[2] / "experiments" / "cost_aware" / "simulated_logs.py"


@pytest.fixture(scope="module")
def generator():
    """experiments/cost_aware/simulated_logs.py, the script that writes the bundled stand-ins."""
    spec = importlib.util.spec_from_file_location("cost_aware/simulated_logs", GENERATOR)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------------- loader

def test_loader_reads_small_csv():
    logs = L.load_logs(DATA)
    assert logs.correct.shape == (16, 60) and not logs.simulated
    assert set(np.unique(logs.correct)) <= {0.0, 1.0}
    # first row of the file, read independently
    first = DATA.read_text().splitlines()[1].split(",")
    assert logs.configs[0]["config_id"] == first[0]
    assert logs.latency[0, 0] == pytest.approx(float(first[7]))
    assert logs.tokens[0, 0] == float(first[8])


def _write(tmp_path, text):
    p = tmp_path / "logs.csv"
    p.write_text(text)
    return p


def test_loader_missing_columns_named(tmp_path):
    p = _write(tmp_path, "config_id,model,temperature,prompt,instance_id,correct,latency_s\na,m,0.5,direct,q1,1,0.3\n")
    with pytest.raises(ValueError, match=r"missing column\(s\) \['max_tokens', 'tokens'\]"):
        L.load_logs(p)


def test_loader_nan_rows_by_number(tmp_path):
    head = ",".join(L.COLUMNS) + "\n"
    rows = ["a,m,0.5,128,direct,q1,1,0.3,100", "a,m,0.5,128,direct,q2,1,nan,100",
            "a,m,0.5,128,direct,q3,,0.4,100"]
    p = _write(tmp_path, head + "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"column 'correct', row 3 \(line 4\): '' is not a number"):
        L.load_logs(p)
    p = _write(tmp_path, head + "\n".join(rows[:2]) + "\n")
    with pytest.raises(ValueError, match=r"column 'latency_s', row 2 \(line 3\): value 'nan' is NaN"):
        L.load_logs(p)


def test_loader_bad_values_and_incomplete_grid(tmp_path):
    head = ",".join(L.COLUMNS) + "\n"
    p = _write(tmp_path, head + "a,m,0.5,128,direct,q1,2,0.3,100\n")
    with pytest.raises(ValueError, match=r"'correct' must be 0 or 1; row 1 \(line 2\) has 2.0"):
        L.load_logs(p)
    p = _write(tmp_path, head + "a,m,0.5,128,direct,q1,1,-0.3,100\n")
    with pytest.raises(ValueError, match=r"'latency_s' must be > 0; row 1 \(line 2\)"):
        L.load_logs(p)
    p = _write(tmp_path, head + "a,m,0.5,128,direct,q1,1,0.3,100\nb,m,1.0,128,direct,q2,1,0.3,100\n")
    with pytest.raises(ValueError, match="config 'a' lacks instance 'q2'"):
        L.load_logs(p)
    with pytest.raises(ValueError, match="does not exist"):
        L.load_logs(tmp_path / "nope.csv")


# ----------------------------------------------------------------------------- preprocessing

def test_preprocessing_matches_independent_computation():
    logs = L.load_logs(DATA)
    prep = L.preprocess(logs, n_profile=12, split_seed=3)
    perm = np.random.default_rng(3).permutation(60)
    prof, ev = np.sort(perm[:12]), np.sort(perm[12:])
    t5 = np.percentile(logs.latency[:, prof].ravel(), 5)
    t95 = np.percentile(logs.latency[:, prof].ravel(), 95)
    k, q = 4, ev[7]
    expect = min(max((1 / logs.latency[k, q] - 1 / t95) / (1 / t5 - 1 / t95), 0.0), 1.0)
    assert prep.eff[k, 7] == pytest.approx(expect)
    c_max = logs.tokens[:, prof].max()
    assert prep.c_max == c_max
    assert prep.det_cost[k] == pytest.approx(logs.tokens[k, prof].mean() / c_max)
    assert prep.cost[k, 7] == pytest.approx(min(logs.tokens[k, q] / c_max, 1.0))
    assert prep.means[k, 0] == pytest.approx(logs.correct[k, ev].mean())


def test_csv_env_budget_horizon_and_floor():
    inst = L.build_instance(dataset=str(DATA), rho=4.0, costs="deterministic", n_profile=12)
    prep = L.preprocess(L.load_logs(DATA), n_profile=12)
    B = 4.0 * 16 * prep.det_cost.mean()
    assert inst.info["budget"] == pytest.approx(B)
    assert inst.cost_floor == pytest.approx(prep.det_cost.min())
    assert inst.horizon == math.ceil(B / prep.det_cost.min()) + 1
    np.testing.assert_allclose(inst.mean_costs, prep.det_cost)
    sub = L.build_instance(dataset=str(DATA), subset="identification14", rho=4.0, n_profile=12)
    assert sub.env.num_arms == 14
    assert [c["temperature"] for c in sub.info["configs"][:2]] == [0.5, 1.0]


# ------------------------------------------------------------------------- simulated stand-in

@pytest.mark.parametrize("dataset,K,models", [("gsm8k", 108, 9), ("piqa", 132, 11)])
def test_stand_in_shape_ranges_and_pareto_counts(dataset, K, models, generator):
    logs = L.bundled_logs(dataset)
    assert logs.simulated and "simulated" in logs.source
    assert logs.correct.shape == logs.latency.shape == logs.tokens.shape == (K, 1000)
    assert len({c["model"] for c in logs.configs}) == models
    t1 = generator.TABLE1[dataset]
    acc, lat, tok = logs.correct.mean(1), logs.latency.mean(1), logs.tokens.mean(1)
    # per-config means land on Table 1's ranges up to sampling noise (1,000 instances)
    assert abs(acc.min() - t1["acc"][0]) < 0.03 and abs(acc.max() - t1["acc"][1]) < 0.03
    assert abs(lat.min() - t1["latency"][0]) / t1["latency"][0] < 0.1
    assert abs(lat.max() - t1["latency"][1]) / t1["latency"][1] < 0.1
    assert abs(tok.min() - t1["tokens"][0]) < 2 and abs(tok.max() - t1["tokens"][1]) < 2
    inst = make_env({"kind": "llm_configs", "dataset": dataset, "rho": 8})
    assert "simulated" in inst.info["label"]
    # P*: brute force over pairs, "strictly better in every coordinate"
    mu = inst.means
    dominated = [any(np.all(mu[j] > mu[i]) for j in range(K)) for i in range(K)]
    assert K - sum(dominated) == 7 == int(inst.info["pareto"].sum())
    sub = make_env({"kind": "llm_configs", "dataset": dataset, "subset": "identification14", "rho": 8})
    assert sub.env.num_arms == 14 and int(sub.info["pareto"].sum()) == t1["subset_pareto"]


def test_env_rejects_bad_options():
    with pytest.raises(ValueError, match="env.rho must be a positive number, got -1.0"):
        L.build_instance(dataset="gsm8k", rho=-1)
    with pytest.raises(ValueError, match="env.subset must be"):
        L.build_instance(dataset="gsm8k", subset="half")
    with pytest.raises(ValueError, match="env.costs must be"):
        L.build_instance(dataset="gsm8k", costs="free")
    with pytest.raises(ValueError, match="env.dataset must be"):
        L.build_instance(dataset="mmlu")
    with pytest.raises(KeyError, match="unknown key"):
        make_env({"kind": "llm_configs", "datset": "gsm8k"})
    with pytest.raises(ValueError, match="budget B=.* is below one pull"):
        L.build_instance(dataset=str(DATA), rho=1e-6, n_profile=12)


def test_cost_and_budget_validation_names_values():
    with pytest.raises(ValueError, match="0 < lambda <= 1, got 0.0"):
        L.validate_costs([0.5], 0.0)
    with pytest.raises(ValueError, match="0 < lambda <= 1, got 1.5"):
        L.validate_costs([0.5], 1.5)
    with pytest.raises(ValueError, match=r"cost 0.1 \(entry 1\) is outside \[lambda, 1\] = \[0.2, 1\]"):
        L.validate_costs([0.5, 0.1], 0.2)
    with pytest.raises(ValueError, match=r"cost 1.2 \(entry 0\)"):
        L.validate_costs([1.2], 0.2)
    with pytest.raises(ValueError, match="budget B=0.1 is below one pull"):
        L.validate_budget(0.1, 0.3)


@pytest.mark.parametrize("dataset", ["gsm8k", "piqa"])
def test_generator_script_reproduces_the_bundled_file(dataset, generator):
    """Outcomes and token counts exactly; latencies to a few units in the last place, because numpy's
    ``exp`` takes another SIMD path on CPUs with AVX-512 (up to 3 ulp apart, measured)."""
    made, bundled = generator.simulated_logs(dataset), L.bundled_logs(dataset)
    assert made.configs == bundled.configs and made.instance_ids == bundled.instance_ids
    for field in ("correct", "tokens"):
        np.testing.assert_array_equal(getattr(made, field), getattr(bundled, field))
    np.testing.assert_array_max_ulp(made.latency, bundled.latency, maxulp=8)
    assert generator.DEFAULT_SEEDS[dataset] == L.BUNDLED_SEEDS[dataset]


def test_generator_writes_full_precision_gzip(tmp_path, generator):
    for out in ("a", "b"):
        (tmp_path / out).mkdir()
        assert generator.main(["--out", str(tmp_path / out)]) == 0
    for dataset in L.DATASETS:
        path = tmp_path / "a" / f"{dataset}_simulated.csv.gz"
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes()  # no timestamp: same bytes
        assert path.read_bytes()[4:8] == b"\0\0\0\0"  # the gzip header's mtime
        made, read = generator.simulated_logs(dataset), L.load_logs(path)
        for field in ("correct", "latency", "tokens"):  # every float written in full precision
            np.testing.assert_array_equal(getattr(read, field), getattr(made, field))


def test_env_seed_other_than_the_bundled_one_is_refused():
    assert L.bundled_logs("piqa", seed=87) is L.bundled_logs("piqa")
    with pytest.raises(ValueError, match="bundled piqa stand-in has generator seed 87; .*simulated_logs.py"):
        make_env({"kind": "llm_configs", "dataset": "piqa", "seed": 3})


# ---------------------------------------------------------------------- stream and bulk sums

def test_stream_is_pure_and_bootstraps_the_evaluation_split():
    inst = L.build_instance(dataset=str(DATA), rho=4.0, n_profile=12)
    key = jax.random.PRNGKey(7)
    r1, c1 = inst.env.sample(key, 3, 5, 0, inst.params)
    r2, c2 = inst.env.sample(key, 3, 5, 99, inst.params)  # t does not matter
    np.testing.assert_array_equal(r1, r2)
    assert c1 == c2
    # bootstrap means converge to the evaluation means (48 instances, 20,000 draws)
    q = jax.vmap(lambda j: L.instance_index(key, 3, j, 48))(jnp.arange(20000))
    counts = np.bincount(np.asarray(q), minlength=48)
    assert counts.min() > 300 and counts.max() < 540  # expected 416.7, sd 20
    vals = np.asarray(inst.params.table)[3, np.asarray(q)]
    np.testing.assert_allclose(vals[:, :2].mean(0), inst.means[3], atol=0.03)


def test_bulk_sums_equal_per_pull_sums():
    inst = L.build_instance(dataset=str(DATA), rho=4.0, n_profile=12)
    key = jax.random.PRNGKey(11)
    jmax = 40
    P = np.asarray(dense(L.prefix_table(key, inst.params, jmax), jmax))
    for arm, j0, n in [(0, 0, 40), (5, 3, 17), (15, 39, 1), (7, 10, 0)]:
        loop = np.zeros(3)
        for j in range(j0, j0 + n):
            r, c = inst.env.sample(key, arm, j, 0, inst.params)
            loop += np.concatenate([np.asarray(r), [float(c)]])
        np.testing.assert_allclose(P[arm, j0 + n] - P[arm, j0], loop, atol=1e-4)
        bulk = np.asarray(L.bulk_sum(key, arm, j0, n, inst.params, jmax))
        np.testing.assert_allclose(bulk, loop, atol=1e-4)
