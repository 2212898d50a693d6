"""The recommended set of every run, by arm name: ``recommended.npz``, ``truth.json``'s arms, ``Results.recommended``
and ``report.md``'s section (issue 42, item 1).

One 6-arm CSV with an ``arm`` column and a ``price`` cost column, run under a budget:

- identification (PSI-SR, uniform allocation): ``report.md`` names the recommended sets and the true set by arm
  name and states ``B`` in prices; each seed's recommended mask equals the truth exactly where its
  misidentification (``finals.npz``) is 0; the true set is the strict Pareto set computed here in numpy;
- the budgeted family's round robin (an online family): each seed's recommended set is the empirical Pareto set of
  its per-arm means, computed here from the environment's own reward stream in a plain loop (round robin until the
  next pull's price would exceed ``B``);
- a run interrupted after its first chunk and resumed writes the same ``recommended.npz``, byte for byte.

And in the engine, for a family that reads the cone: two grid points whose cones have 2 and 3 rows share one
compiled run (the 2-row cone padded with a repeated row), and each point's set is the empirical C-optimal set of
a round robin's means under its own cone, computed here in numpy.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _user_data import write_csv

from mobandit_jax.analysis.results import Results
from mobandit_jax.engine import RunParams, batch, make_run, seed_keys, stack_grid
from mobandit_jax.experiment_spec import ExperimentSpec, GridPoint
from mobandit_jax.metrics.preference import preference_metrics, preference_truth
from mobandit_jax.problems.stochastic import make_stochastic
from mobandit_jax.registry import make_env
from mobandit_jax.runner import execution, plans
from mobandit_jax.runner import spec as config
from mobandit_jax.types import Context, Policy

ARMS = ["llama-8b", "mistral-7b", "qwen-14b", "gemma-9b", "phi-3", "gpt-small"]
SCORES = [[0.62, 0.80], [0.55, 0.85], [0.81, 0.40], [0.60, 0.60], [0.45, 0.90], [0.50, 0.50]]
PRICES = [3.0, 2.0, 8.0, 4.0, 1.0, 2.5]
RHO = 5.5
SEEDS, CHUNK = 4, 2


def _spec(path, policies: list) -> ExperimentSpec:
    return config.validate({
        "experiment": {"name": "models", "horizon": 1, "seeds": SEEDS, "chunk": CHUNK, "record_every": 1000},
        "env": {"kind": "table", "path": str(path), "arm": "model", "objectives": ["acc", "speed"], "cost": "price"},
        "budget": {"rho": RHO},
        "policies": policies,
    })


IDENT = [{"name": "psi_sr", "label": "PSI-SR"}, {"name": "uniform_alloc", "label": "Uniform"}]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    return write_csv(folder / "models.csv", ["model", "acc", "speed", "price"],
                     [[a, *s, c] for a, s, c in zip(ARMS, SCORES, PRICES, strict=True)])


@pytest.fixture(scope="module")
def ident(data):
    out = data.parent / "ident"
    execution.execute(plans.build(_spec(data, IDENT)), out, progress=False)
    return out


def _budget() -> float:
    """``B`` in prices: rho K times the mean price (the budget in units of the largest price, times that price)."""
    return RHO * len(PRICES) * float(np.mean(PRICES))


def test_identification_names_its_sets_and_states_the_budget_in_prices(ident):
    res = Results.load(ident)
    mu = np.asarray(SCORES)
    beaten = np.all(mu[None, :, :] > mu[:, None, :], axis=-1).any(axis=1)  # [i]: some arm beats i everywhere
    want_true = tuple(a for a, b in zip(ARMS, beaten, strict=True) if not b)
    truth = res.truth(0)
    assert truth["arms"] == ARMS
    assert truth["budget"]["cost_name"] == "price" and truth["budget"]["cost_scale"] == max(PRICES)
    assert truth["budget"]["B_own_units"] == pytest.approx(_budget(), rel=1e-9)
    report = (ident / "report.md").read_text()
    assert f"Budget B = {_budget():.6g} price" in report
    assert "True set: {" + ", ".join(want_true) + "}." in report
    for label in ("PSI-SR", "Uniform"):
        rec = res.recommended(label)
        assert rec.arms == tuple(ARMS) and rec.true_names == want_true
        assert rec.masks.shape == (SEEDS, len(ARMS)) and rec.masks.dtype == bool
        mis = res.final(label, "misidentification")
        np.testing.assert_array_equal(rec.correct, mis == 0)  # exact identification <=> misidentification 0
        np.testing.assert_array_equal(rec.inclusion, rec.masks.mean(axis=0))
        rows = [tuple(r) for r in rec.masks.tolist()]
        top = max(rows, key=lambda r: (rows.count(r), -rows.index(r)))
        assert rec.top == tuple(a for a, m in zip(ARMS, top, strict=True) if m)
        assert rec.top_count == rows.count(top) and rec.top_frequency == rows.count(top) / SEEDS
        assert f"| {label} | {{{', '.join(rec.top)}}} | {rec.top_count}/{SEEDS} " in report
    for arm, in_true in zip(ARMS, ~beaten, strict=True):
        cells = [f"{res.recommended(label).inclusion[ARMS.index(arm)]:.2f}" for label in ("PSI-SR", "Uniform")]
        assert f"| {arm} | {'yes' if in_true else 'no'} | {' | '.join(cells)} |" in report


def _round_robin_means(data, seed: int):
    """The per-arm empirical means and pulls of the round robin on seed ``seed``: arm ``t mod K`` at round ``t``
    until the next pull's price would exceed ``B``; pull ``j`` of arm ``i`` is the environment's own sample."""
    inst = make_env({"kind": "table", "path": str(data), "arm": "model", "objectives": ["acc", "speed"],
                     "cost": "price"})
    costs = np.asarray(PRICES) / max(PRICES)
    budget = RHO * len(costs) * costs.mean()
    key_env = jax.random.fold_in(seed_keys(0, [seed])[0], 0)
    sample = jax.jit(inst.env.sample)
    K = len(costs)
    sums, pulls, spent, t = np.zeros((K, 2)), np.zeros(K, int), 0.0, 0
    while spent + costs[t % K] <= budget:
        i = t % K
        reward, _ = sample(key_env, i, pulls[i], t, inst.params)
        sums[i] += np.asarray(reward, np.float64)
        pulls[i] += 1
        spent += costs[i]
        t += 1
    return sums / np.maximum(pulls, 1)[:, None], pulls


def test_an_online_familys_set_is_the_empirical_pareto_set_of_its_means(data):
    out = data.parent / "online"
    spec = config.apply_overrides(_spec(data, [{"name": "uniform", "family": "budgeted", "label": "RR"}]),
                                  ["experiment.horizon=60"])
    execution.execute(plans.build(spec), out, progress=False)
    rec = Results.load(out).recommended("RR")
    for seed in range(SEEDS):
        means, pulls = _round_robin_means(data, seed)
        want = []
        for i in range(len(ARMS)):  # pulled, and no other pulled arm's mean is >= in every objective
            others = [j for j in range(len(ARMS)) if j != i and pulls[j] > 0]
            want.append(bool(pulls[i] > 0 and not any(np.all(means[j] >= means[i]) for j in others)))
        np.testing.assert_array_equal(rec.masks[seed], want)
    assert rec.true_set is not None and rec.true_names  # the Pareto set of the true means


def test_an_interrupted_run_resumes_to_the_same_recommended_file(data, ident, monkeypatch):
    out = data.parent / "resumed"
    plan = plans.build(_spec(data, IDENT))
    run_seeds, calls = execution.run_seeds, []

    def stop_at_the_second_chunk(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run_seeds(*args)

    monkeypatch.setattr(execution, "run_seeds", stop_at_the_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        execution.execute(plan, out, progress=False)
    assert not (out / "recommended.npz").exists() and len(list((out / "chunks").glob("chunk_*.npz"))) == 1
    monkeypatch.setattr(execution, "run_seeds", run_seeds)
    execution.execute(plan, out, progress=False)
    assert (out / "recommended.npz").read_bytes() == (ident / "recommended.npz").read_bytes()
    assert (out / "truth.json").read_bytes() == (ident / "truth.json").read_bytes()


def test_the_engine_reads_each_points_cone_in_one_compiled_run():
    means = np.array([[0.2, 0.8, 0.5], [0.7, 0.3, 0.4], [0.5, 0.5, 0.9], [0.6, 0.6, 0.2], [0.3, 0.4, 0.3]])
    cones = [np.array([[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]]), np.eye(3)]
    K, horizon = len(means), 23  # arms 0-2 pulled 5 times, arms 3-4 4 times
    inst = make_stochastic(means)
    robin = Policy(lambda params: jnp.zeros((), jnp.int32), lambda key, state, params: (state % K).astype(jnp.int32),
                   lambda state, action, obs, params: state + 1)
    traces, inner = [], plans.recommend_of("preference", Context.of(inst, horizon, cones[0]))

    def recommend(final, params):
        traces.append(1)
        return inner(final, params)

    run = make_run(inst.env, robin, preference_metrics(3), horizon, horizon, budgeted=False, recommend=recommend)
    points = [RunParams(inst.params, None, preference_truth(means, W), jnp.inf, plans.padded_cone(W, 3)) for W in cones]
    out = jax.jit(batch(run))(stack_grid(points), seed_keys(0, [0, 1]))
    assert len(traces) == 1 and out["recommended"].shape == (2, 2, K)
    sample = jax.jit(lambda key, i, j: inst.env.sample(key, i, j, 0, inst.params)[0])  # one compile, every pull
    for s in range(2):
        key_env = jax.random.fold_in(seed_keys(0, [s])[0], 0)
        pulls = np.bincount(np.arange(horizon) % K, minlength=K)
        mu = np.array([np.mean([np.asarray(sample(key_env, i, j), np.float64) for j in range(pulls[i])], axis=0)
                       for i in range(K)])
        for g, W in enumerate(cones):
            proj = mu @ W.T
            dominated = [any(np.all(proj[j] >= proj[i]) for j in range(K) if j != i) for i in range(K)]
            np.testing.assert_array_equal(np.asarray(out["recommended"])[g, s], ~np.array(dominated))


def test_recommended_frequency_counts_each_arm_over_the_seeds_of_recommended_npz(ident):
    res = Results.load(ident)
    mu = np.asarray(SCORES)
    in_true = ~np.all(mu[None, :, :] > mu[:, None, :], axis=-1).any(axis=1)
    with np.load(ident / "recommended.npz") as z:
        stored = {k: z[k] for k in z.files}
    for label in ("PSI-SR", "Uniform"):
        masks = stored[f"{label}|0"]
        frame = res.recommended_frequency(label)
        assert list(frame.columns) == ["arm", "count", "frequency", "in_true_set"] and list(frame["arm"]) == ARMS
        np.testing.assert_array_equal(frame["count"], [sum(int(row[i]) for row in masks) for i in range(len(ARMS))])
        np.testing.assert_allclose(frame["frequency"], masks.sum(axis=0) / SEEDS)
        assert list(frame["in_true_set"]) == in_true.tolist()
    with pytest.raises(KeyError, match="policy 'nope' has no grid point"):
        res.recommended_frequency("nope")


def _z95() -> float:
    return 1.959963984540054


def _wilson(p: float, n: int) -> tuple:
    z = _z95()
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half / (1 + z * z / n), centre + half / (1 + z * z / n)


def test_a_redrawn_instance_reports_accuracy_and_f1_per_seed_not_a_table_of_sets():
    """A hand-built identification run whose seeds redraw their instance (truth.json's ``per_seed``): the report
    gives each policy's accuracy (1 - misidentification per seed) and F1, Wilson 95% intervals, and no set table."""
    from mobandit_jax.analysis import report
    from mobandit_jax.analysis.files import record

    mis = {"A": np.array([0.0, 1.0, 0.0, 0.0, 1.0, 0.0]), "B": np.array([1.0, 1.0, 0.0, 1.0, 1.0, 1.0])}
    f1 = {"A": np.array([1.0, 0.5, 1.0, 1.0, 0.8, 1.0]), "B": np.array([0.4, 0.5, 1.0, 0.6, 0.7, 0.2])}
    grid = {p: [GridPoint({}, {"name": p.lower(), "delta": 0.1})] for p in mis}
    finals = {f"{p}|0|{m}": v for p in mis for m, v in (("misidentification", mis[p]), ("f1", f1[p]))}
    records = [record(p, grid[p][0].params, {}, m, finals[f"{p}|0|{m}"], (0, 1)) for p in mis
               for m in ("misidentification", "f1")]
    masks = np.random.default_rng(1).integers(0, 2, (6, 30)).astype(bool)
    truth = {"setting": {}, "arms": [f"arm {i}" for i in range(30)], "families": {"identification": {
        "true_set": [True] * 30}}, "per_seed": [{"seed": s, "means": None, "families": {}} for s in range(6)]}
    res = Results(ExperimentSpec.from_dict({"experiment": {"name": "redrawn"}, "env": {"kind": "dtlz"}}), grid,
                  {p: ("misidentification", "f1") for p in mis}, {p: {"misidentification": "mean", "f1": "mean"}
                                                                    for p in mis}, 1, 1, 0, {}, finals, records,
                  truths=[truth], recommendations={f"{p}|0": masks for p in mis},
                  families={p: "identification" for p in mis})
    text = report.recommended_sections(res)
    assert "Each seed redraws its instance: there is no one true set." in text
    assert "most frequent" not in text and "| arm 0 |" not in text and "True set" not in text
    assert "| policy | accuracy | F1 |" in text
    for p in mis:
        acc = 1.0 - mis[p].mean()
        cells = [report.fmt_ci(acc, *_wilson(acc, 6)), report.fmt_ci(f1[p].mean(), *_wilson(f1[p].mean(), 6))]
        assert f"| {p} (δ = 0.1) | {cells[0]} | {cells[1]} |" in text
    frame = res.recommended_frequency("A")  # no one true set: in_true_set is None for every arm
    assert frame["in_true_set"].tolist() == [None] * 30 and frame["count"].tolist() == masks.sum(axis=0).tolist()


def test_a_value_the_same_for_every_policy_is_one_column():
    from mobandit_jax.analysis import report
    from mobandit_jax.analysis.files import record

    rows = [record(p, {"name": p}, {"d": d}, "vstar", [0.5 + d, 0.5 + d]) for p in ("P", "Q", "R") for d in (2, 3)]
    rows += [record(p, {"name": p}, {"d": 2}, "regret", [i, i + 1.0]) for i, p in enumerate(("P", "Q", "R"))]
    text = report.tables(rows)
    vstar = text.split("### vstar")[1].split("###")[0]
    assert "| setting | every policy |" in vstar and "| d=2 | 2.5 [2.5, 2.5] |" in vstar and "| P |" not in vstar
    assert "| setting | P | Q | R |" in text.split("### regret")[1]
