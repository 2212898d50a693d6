"""A study's recommendation is right as often as its simulated run: many seeded studies told Bernoulli draws of a
hidden table recommend its Pareto set at the rate ``1 - misidentification`` of ``mb.run`` on the same table and spec,
within sampling error (two-proportion test, 3 standard errors)."""
import math

import numpy as np
import pytest

import mobandit_jax as mb

MEANS = np.array([[0.8, 0.2], [0.2, 0.8], [0.55, 0.55], [0.4, 0.4], [0.6, 0.12], [0.12, 0.6]])
COSTS = np.array([1.0, 0.5, 0.8, 1.0, 0.6, 0.9])
B = 100.0  # about 130 evaluations: the simulated run recommends P* in about 40% of seeds


def _pareto(means):
    """Brute-force Pareto set (maximisation): indices no other arm weakly dominates with one strict gain."""
    return [i for i, m in enumerate(means)
            if not any(np.all(o >= m) and np.any(o > m) for j, o in enumerate(means) if j != i)]


@pytest.mark.slow  # about 20 s a policy: 120 studies of about 130 evaluations
@pytest.mark.parametrize("policy", ["psi_sr", "uniform_alloc"])
def test_recommend_is_right_as_often_as_the_simulated_run(tmp_path, policy):
    names = [f"m{i}" for i in range(len(MEANS))]
    csv = tmp_path / "table.csv"
    csv.write_text("arm,x,y,cost\n" + "".join(f"{a},{m[0]},{m[1]},{c}\n"
                                                for a, m, c in zip(names, MEANS, COSTS, strict=True)))
    truth = [names[i] for i in _pareto(MEANS)]

    sims = 400
    simulated = mb.run({"env": {"kind": "table", "path": str(csv), "arm": "arm", "objectives": ["x", "y"],
                                "cost": "cost", "noise": "bernoulli"},
                        "budget": {"B": B}, "policies": [{"name": policy}],
                        "experiment": {"name": "hidden", "seeds": sims}})
    sim_right = 1.0 - float(np.mean(simulated.final(policy, "misidentification")))

    studies, right, rng = 120, 0, np.random.default_rng(7)
    spec = {"study": {"arms": names, "objectives": ["x", "y"]},
            "budget": {"B": B, "cost": COSTS.tolist(), "replan": False},  # the simulated run's schedule
            "policies": [{"name": policy}]}
    for seed in range(studies):
        study = mb.Study.create(tmp_path / f"s{seed}", spec, seed=seed)
        while tickets := study.ask(8):
            for t in tickets:
                study.tell(t, rng.binomial(1, MEANS[t.index]).astype(float).tolist(), cost=float(COSTS[t.index]))
        assert study.status()["spent"] <= B + 1e-9
        right += study.recommend() == truth
    rate = right / studies
    pooled = (rate * studies + sim_right * sims) / (studies + sims)
    se = math.sqrt(max(pooled * (1 - pooled), 1e-12) * (1 / studies + 1 / sims))
    assert 0.1 < sim_right < 0.9, sim_right  # the table is hard enough for the rates to say something
    print(f"{policy}: studies right {rate:.3f} ({studies}), simulated {sim_right:.3f} ({sims}), 3 se {3 * se:.3f}")
    assert abs(rate - sim_right) <= 3 * se, (rate, sim_right, se)
