"""PDMOB data: the LLM arm table (mapping, selection rule, range), Table 3 W matrices, errors."""
import csv
import math
import re
from pathlib import Path

import jax
import numpy as np
import pytest

from mobandit_jax import registry
from mobandit_jax.kernels import cone_optimal_mask
from mobandit_jax.problems import llm_leaderboard as llm
from mobandit_jax.runner.reproduce import load_report

# The seed paper lies in the shared/ folder beside the repository checkout.
SEED_FILE = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "000_31c878f209362a70.txt"
# Table 3 (W matrices, roles) and the objective groups are report data of experiments/pdmob/report.py.
rep = load_report("pdmob", Path(__file__).resolve().parents[2] / "experiments")


def _raw_rows():
    with open(llm.DATA_DIR / llm.V2_FILE) as v2_file, open(llm.DATA_DIR / llm.V1_FILE) as v1_file:
        v2 = list(csv.DictReader(v2_file))
        size = {r["Model"]: float(r["Model Size (B)"]) for r in csv.DictReader(v1_file)}
    return v2, size


def test_arm_table_shape_and_range():
    names, table, sizes = llm.arm_table()
    assert table.shape == (42, 7) and len(names) == 42 and len(set(names)) == 42
    np.testing.assert_allclose(table.min(0), 0.0)
    np.testing.assert_allclose(table.max(0), 1.0)


def test_selection_rule_and_mapping_against_plain_recomputation():
    v2, size = _raw_rows()
    cols = ["leaderboard_mmlu_pro", "leaderboard_math_hard", "leaderboard_bbh", "leaderboard_gpqa",
            "leaderboard_ifeval", "leaderboard_musr"]
    mean = {r["Model"]: sum(float(r[c]) for c in cols) / 6 for r in v2}
    expected = sorted(mean, key=lambda m: (-mean[m], m))[:42]
    names, table, sizes = llm.arm_table()
    assert list(names) == expected
    # the 43rd model scores no higher than the 42nd
    ranked = sorted(mean.values(), reverse=True)
    assert min(mean[m] for m in names) == ranked[41] >= ranked[42]
    rows = {r["Model"]: r for r in v2}
    for j, c in enumerate(cols):
        raw = np.array([float(rows[m][c]) for m in names])
        np.testing.assert_allclose(table[:, j], (raw - raw.min()) / (raw.max() - raw.min()), atol=1e-12)
    logsize = np.array([math.log(size[m]) for m in names])
    np.testing.assert_allclose(table[:, 6], (logsize.max() - logsize) / (logsize.max() - logsize.min()), atol=1e-12)
    # the smallest model is the fastest
    assert table[np.argmin(sizes), 6] == 1.0 and table[np.argmax(sizes), 6] == 0.0


def test_margin_is_an_affine_squeeze_preserving_optimal_sets():
    _, t0, _ = llm.arm_table()
    _, t1, _ = llm.arm_table(margin=0.05)
    np.testing.assert_allclose(t1, 0.05 + 0.9 * t0)
    for W in rep.scenario_matrices().values():
        assert (np.asarray(cone_optimal_mask(t0, W)) == np.asarray(cone_optimal_mask(t1, W))).all()


def _paper_table3():
    text = SEED_FILE.read_text()
    out = {}
    for name in ("Customer Service", "Legal Document Review", "High-frequency Trade", "Scientific Discovery"):
        m = re.search(re.escape(name) + r":.*?\\begin\{bmatrix\}(.*?)\\end\{bmatrix\}", text)
        rows = [r.strip() for r in m.group(1).split(r"\\")]
        out[name] = np.array([[float(v) for v in r.split("&")] for r in rows])
    m = re.search(r"Scalarization: Simple weighted combination\s*\$\[(.*?)\]\$", text)
    out["Scalarization"] = np.array([[float(v) for v in m.group(1).split(",")]])
    return out


@pytest.mark.skipif(not SEED_FILE.is_file(), reason="seed paper text not available")
def test_table3_matrices_match_the_printed_paper():
    paper = _paper_table3()
    ours = rep.scenario_matrices()
    assert list(ours) == ["Standard", "Scalarization", "Single-objective"] + list(paper)[:4]
    for name, W in paper.items():
        np.testing.assert_array_equal(ours[name], W, err_msg=name)
    np.testing.assert_array_equal(ours["Standard"], np.eye(7))
    assert ours["Single-objective"].tolist() == [[1, 0, 0, 0, 0, 0, 0]]


def test_env_registry_build_and_beta_feedback_mean():
    inst = registry.make_env({"kind": "llm_leaderboard"}, {})
    assert inst.env.num_arms == 42 and inst.env.dim == 7
    arm = 5
    keys = jax.random.PRNGKey(3)
    ys = jax.vmap(lambda j: inst.env.sample(keys, arm, j, 0, inst.params)[0])(np.arange(6000))
    mu = inst.means[arm]
    sd = np.sqrt(mu * (1 - mu) / 2 / 6000)  # Beta(c mu, c (1 - mu)), c = 1: var = mu (1 - mu) / 2
    assert np.all(np.abs(np.asarray(ys).mean(0) - mu) <= 5 * sd + 1e-6)
    # common random numbers: same (key, arm, pull) -> same reward
    a = inst.env.sample(keys, 3, 7, 0, inst.params)[0]
    b = inst.env.sample(keys, 3, 7, 99, inst.params)[0]
    np.testing.assert_array_equal(a, b)


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="noise='poisson'"):
        registry.make_env({"kind": "llm_leaderboard", "noise": "poisson"}, {})
    with pytest.raises(ValueError, match="costs='tokens'"):
        registry.make_env({"kind": "llm_leaderboard", "costs": "tokens"}, {})
    with pytest.raises(ValueError, match="env.k = 50"):
        registry.make_env({"kind": "llm_leaderboard", "k": 50}, {})
    with pytest.raises(ValueError, match="num_models=80"):
        llm.arm_table(num_models=80)
    with pytest.raises(ValueError, match="margin=0.6"):
        llm.arm_table(margin=0.6)


def test_malformed_files_name_the_file_and_row(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing"):
        llm.load_scores(tmp_path)
    hdr = "Model," + ",".join(llm.BENCHMARKS)
    (tmp_path / llm.V1_FILE).write_text("Model,Model Size (B)\na,1.0\nb,2.0\n")
    (tmp_path / llm.V2_FILE).write_text(hdr + "\na,0.1,0.2,0.3,0.4,0.5,0.6\nb,0.1,nan,0.3,0.4,0.5,0.6\n")
    with pytest.raises(ValueError, match=r"base_llm_leaderboard_v2_eval.csv: row 3 column 'leaderboard_math_hard'"):
        llm.load_scores(tmp_path)
    (tmp_path / llm.V2_FILE).write_text(hdr + "\na,0.1,0.2,0.3,0.4,0.5,0.6\nc,0.1,0.2,0.3,0.4,0.5,0.6\n")
    with pytest.raises(ValueError, match="row 3 model 'c' has no size"):
        llm.load_scores(tmp_path)
    (tmp_path / llm.V2_FILE).write_text("Model,leaderboard_bbh\na,0.1\n")
    with pytest.raises(ValueError, match="missing column"):
        llm.load_scores(tmp_path)
