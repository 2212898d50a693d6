"""study.arms(): pulls, means and Student t intervals equal a numpy/scipy computation from study.history(); the
states agree with recommend()."""
import numpy as np
import pandas as pd
from scipy import stats

import mobandit_jax as mb

ARMS = [f"m{i}" for i in range(6)]
MEANS = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.4, 0.4], [0.2, 0.2], [0.6, 0.3]])


def _expected(history, objectives):
    """Per arm from the told rows of the history: pulls, means, t intervals and mean cost, computed directly."""
    told = history[history.state == "told"]
    rows = {}
    for arm in ARMS:
        v = told[told.arm == arm][objectives].to_numpy(float)
        c = told[told.arm == arm]["cost"].to_numpy(float)
        n = len(v)
        mean = v.mean(0) if n else np.full(len(objectives), np.nan)
        if n > 1:
            half = stats.t.ppf(0.975, n - 1) * np.sqrt(((v - mean) ** 2).sum(0) / (n - 1)) / np.sqrt(n)
        else:
            half = np.full(len(objectives), np.nan)
        rows[arm] = (n, mean, mean - half, mean + half, c.mean() if len(c) else np.nan)
    return rows


def _check(study):
    frame = study.arms()
    objectives = study.spec.objectives
    assert list(frame.columns) == ["arm", "pulls", "acc", "acc_low", "acc_high", "speed", "speed_low", "speed_high",
                                   "cost", "recommended", "state"]
    assert list(frame.arm) == ARMS
    want = _expected(study.history(), objectives)
    for _, row in frame.iterrows():
        n, mean, low, high, cost = want[row.arm]
        assert row.pulls == n
        for j, o in enumerate(objectives):
            np.testing.assert_allclose([row[o], row[f"{o}_low"], row[f"{o}_high"]], [mean[j], low[j], high[j]],
                                       rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(row.cost, cost, rtol=1e-12, equal_nan=True)
    assert list(frame.arm[frame.recommended]) == study.recommend()
    assert set(frame.state) <= {"accepted", "rejected", "active", "unevaluated"}
    assert (frame.state[frame.pulls == 0] == "unevaluated").all()
    assert (frame.state[frame.pulls > 0] != "unevaluated").all()
    return frame


def test_online_arms_table(tmp_path):
    spec = {"study": {"arms": ARMS, "objectives": ["acc", "speed"], "horizon": 9},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]}
    study = mb.Study.create(tmp_path / "s", spec, seed=0)
    rng = np.random.default_rng(0)
    assert (_check(study).state == "unevaluated").all()  # nothing told yet: every mean is NaN
    for _ in range(9):
        (t,) = study.ask()
        study.tell(t, np.clip(MEANS[t.index] + rng.normal(0, 0.1, 2), 0, 1).tolist())
    frame = _check(study)
    assert frame.pulls.sum() == 9 and set(frame.state) <= {"active", "unevaluated"}


def test_identifier_arms_table_states(tmp_path):
    costs = [1.0, 0.5, 0.8, 1.0, 0.6, 0.9]
    spec = {"study": {"arms": ARMS, "objectives": ["acc", "speed"]}, "budget": {"B": 60.0, "cost": costs},
            "policies": [{"name": "psi_sr"}]}
    study = mb.Study.create(tmp_path / "s", spec, seed=0)
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(500):
        tickets = study.ask(3)
        if not tickets:
            break
        for t in tickets:
            study.tell(t, np.clip(MEANS[t.index] + rng.normal(0, 0.2, 2), 0, 1).tolist(),
                       cost=costs[t.index] * rng.uniform(0.8, 1.2))
        frame = _check(study)
        seen |= set(frame.state)
        # an accepted or rejected arm stays so; an active one is still sampled
        assert not (frame.recommended & (frame.state == "rejected")).any()
    frame = _check(study)
    assert study.status()["finished"]
    assert set(frame.state) <= {"accepted", "rejected"} and "active" in seen
    assert list(frame.arm[frame.state == "accepted"]) == study.recommend()
    assert isinstance(frame, pd.DataFrame) and frame.pulls.min() >= 1
