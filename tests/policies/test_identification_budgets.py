"""Every fixed-budget identifier refuses a budget below its first phase, in one line naming the smallest one, and at
that smallest budget evaluates every arm: the threshold found by bisection over the refusal equals the budget the
method's first phase needs (computed here in numpy from the paper's schedules) and the bulk run at it pulls every arm.
"""
import re
import warnings

import jax
import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax.errors import ConfigError
from mobandit_jax.policies.identification import BudgetWarning
from mobandit_jax.problems.replay import constant_instance


def _l_k(K, lam):
    return 1.0 + sum(1.0 / (1.0 + (ell - 1) * lam) for ell in range(2, K + 1))


def _first_phase(name, costs):
    """The budget at which the first phase's target reaches one pull (exact arithmetic), or one sweep if larger."""
    K, c_bar, lam = len(costs), costs.mean(), costs.min()
    need = {"copsi": _l_k(K, lam) * costs.sum(),  # n_1 = floor(B / (L_{K,lambda} C_1))
            "psi_sr": (K + 1) * c_bar,  # n_1 = ceil((T - K) / (logbar K)), T = floor(B / c_bar)
            "ege_sh": K * int(np.ceil(np.log2(K))) * c_bar,  # t_1 = floor(T / (K ceil(log2 K)))
            "uniform_alloc": costs.sum()}[name]
    return max(need, costs.sum())


def _ctx(costs, budget, paper=False):
    K = len(costs)
    means = np.random.default_rng(K).uniform(0.1, 0.9, (K, 2))
    inst = constant_instance(means, costs, budget=budget, budget_ratio=budget / (K * costs.mean()))
    return mb.Context.of(inst._replace(info={**inst.info, "paper_schedule": paper}), 1)


def _refused(name, costs, budget, paper=False):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", BudgetWarning)
            mb.make_policy(name, _ctx(costs, budget, paper))
    except ConfigError as err:
        return str(err)
    return None


def _threshold(name, costs):
    lo, hi = 1e-6, 10.0 * costs.sum() * len(costs)
    assert _refused(name, costs, lo) and not _refused(name, costs, hi)
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _refused(name, costs, mid) else (lo, mid)
    return hi


CASES = [(K, seed) for K in (2, 3, 6, 9) for seed in range(3)]


@pytest.mark.parametrize("name", ["copsi", "psi_sr", "ege_sh", "uniform_alloc"])
def test_smallest_budget_is_the_first_phase_and_pulls_every_arm(name):
    runs = {}
    for K, seed in CASES:
        costs = np.random.default_rng(100 * K + seed).uniform(0.05, 1.0, K)
        costs = costs / costs.max()
        found = _threshold(name, costs)
        np.testing.assert_allclose(found, _first_phase(name, costs), rtol=1e-6)
        message = _refused(name, costs, found * (1 - 1e-6))
        assert message.count("\n") == 0 and message.startswith(f"policy {name!r}: budget B = ")
        shown = float(re.search(r"give budget\.B >= ([0-9.e+-]+) ", message).group(1))
        assert found * (1 - 1e-9) <= shown <= found * (1 + 1e-5)  # the number shown is enough, to 6 digits
        ident, params, _ = mb.make_policy(name, _ctx(costs, found))
        ctx = _ctx(costs, found)
        if K not in runs:
            runs[K] = jax.jit(ident.identify)
        out = runs[K](jax.random.PRNGKey(seed), jax.random.PRNGKey(1), ctx.instance.params, params)
        pulls = np.asarray(out.pulls)
        assert pulls.min() >= 1, (K, seed, pulls)  # at the smallest budget every arm is evaluated
        assert float(out.spent) <= found * (1 + 1e-6)


def test_copsi_paper_schedule_below_its_first_phase_runs_with_a_warning():
    """Asked for the paper's schedule (``experiment.paper_schedule``), CoPSI below its first phase runs and warns in
    one line; below one pull of every arm it is refused; without it, it is refused below its first phase."""
    costs = np.array([0.1, 0.2, 0.4, 0.6, 0.8, 1.0])
    need = _first_phase("copsi", costs)
    with pytest.warns(BudgetWarning, match=r"^policy 'copsi': budget B = 3\.2 is below the 15\.1671 its first phase "
                                           r"needs to evaluate each of the 6 arms once"):
        mb.make_policy("copsi", _ctx(costs, 3.2, paper=True))
    assert need == pytest.approx(15.16710, abs=1e-4)
    assert "one evaluation of each of the 6 arms costs" in _refused("copsi", costs, 3.0, paper=True)
    assert _refused("copsi", costs, 3.2).startswith("policy 'copsi': budget B = 3.2 is below the 15.1671")


def test_a_run_refuses_copsi_below_its_first_phase_unless_it_asks_for_the_paper_schedule(tmp_path):
    """``mb.run``: one line naming the smallest B and rho; ``experiment.paper_schedule = true`` runs it with a
    warning, and its recommended sets hold arms it never pulled (what the warning says can happen)."""
    costs = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0]
    rows = "\n".join(f"m{i},{0.2 + 0.1 * i},{0.9 - 0.1 * i},{c}" for i, c in enumerate(costs))
    (tmp_path / "t.csv").write_text("model,acc,speed,seconds\n" + rows + "\n")
    spec = {"experiment": {"horizon": 1, "seeds": 2},
            "env": {"kind": "table", "path": str(tmp_path / "t.csv"), "arm": "model",
                    "objectives": ["acc", "speed"], "cost": "seconds"},
            "budget": {"rho": 1.5}, "policies": [{"name": "copsi"}]}
    norm = np.array(costs) / max(costs)
    B, need = 1.5 * len(costs) * norm.mean(), _first_phase("copsi", norm)  # in units of the largest cost
    with pytest.raises(ConfigError) as refused:
        mb.run(spec)
    message = str(refused.value)
    head = f"policy 'copsi': budget B = {B:.6g} ({B * max(costs):.6g} seconds) is below the "
    assert message.startswith(head), message
    shown = [float(x) for x in re.search(r"below the ([0-9.]+) \(([0-9.]+) seconds\) its first phase needs .* "
                                         r"budget\.rho >= ([0-9.]+)", message).groups()]
    np.testing.assert_allclose(shown, [need, need * max(costs), need / (len(costs) * norm.mean())], rtol=1e-5)
    spec["experiment"]["paper_schedule"] = True
    with pytest.warns(BudgetWarning, match="the paper's schedule runs as it is"):
        mb.run(spec)


def test_the_command_line_shows_the_paper_schedule_warning_in_one_line(tmp_path, capsys):
    from mobandit_jax.cli import main

    costs = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0]
    rows = "\n".join(f"m{i},{0.2 + 0.1 * i},{0.9 - 0.1 * i},{c}" for i, c in enumerate(costs))
    (tmp_path / "t.csv").write_text("model,acc,speed,seconds\n" + rows + "\n")
    (tmp_path / "s.toml").write_text(
        '[experiment]\nhorizon = 1\nseeds = 2\npaper_schedule = true\n'
        '[env]\nkind = "table"\npath = "t.csv"\narm = "model"\nobjectives = ["acc", "speed"]\ncost = "seconds"\n'
        '[budget]\nrho = 1.5\n[[policies]]\nname = "copsi"\n')
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "run"), "--no-cache"]) == 0
    err = capsys.readouterr().err.splitlines()
    warned = [line for line in err if "BudgetWarning" in line or line.startswith("warning: ")]
    assert len(warned) == 1 and warned[0].startswith("warning: policy 'copsi': budget B = "), err
    assert warned[0].endswith("may recommend arms it never evaluated")
