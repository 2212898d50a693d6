"""PDMOB NYSE(O): loader errors, strategies vs plain references, window metrics, mandates, replay env."""
import gzip
import os
from pathlib import Path

import jax
import numpy as np
import pytest

from mobandit_jax import registry
from mobandit_jax.problems import nyse
from mobandit_jax.runner.reproduce import load_report

# The seed paper lies in the shared/ folder beside the repository checkout.
SEED_FILE = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "000_31c878f209362a70.txt"
# Table 5 and Appendix B.3's weights are report data of experiments/pdmob/report.py.
rep = load_report("pdmob", Path(__file__).resolve().parents[2] / "experiments")

# a tiny 3-stock, 6-day price series (price levels, P[-1] = 1)
PRICES = np.array([
    [1.10, 0.90, 1.00],
    [1.21, 0.99, 0.95],
    [1.10, 1.05, 1.00],
    [1.00, 1.08, 1.10],
    [1.05, 1.00, 1.20],
    [1.20, 0.95, 1.10],
])


def _write(path, lines, gz=False):
    text = "\n".join(lines) + "\n"
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


# ------------------------------------------------------------------------------- loader errors

def test_loader_reads_csv_and_gz(tmp_path):
    lines = ["A,B,C"] + [",".join(map(str, r)) for r in PRICES]
    for gz in (False, True):
        p = _write(tmp_path / ("p.csv.gz" if gz else "p.csv"), lines, gz)
        np.testing.assert_allclose(nyse.load_prices(p, num_columns=3), PRICES)


def test_loader_errors_name_file_and_row(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv is missing"):
        nyse.load_prices(tmp_path / "nope.csv")
    p = _write(tmp_path / "nan.csv", ["A,B,C", "1,1,1", "1,nan,1", "1,1,1"])
    with pytest.raises(ValueError, match=r"nan.csv: row 3 holds a missing"):
        nyse.load_prices(p, num_columns=3)
    p = _write(tmp_path / "empty.csv", ["A,B,C", "1,1,1", "1,,1"])
    with pytest.raises(ValueError, match=r"empty.csv: row 3"):
        nyse.load_prices(p, num_columns=3)
    p = _write(tmp_path / "cols.csv", ["A,B,C", "1,1,1", "1,1,1", "1,1"])
    with pytest.raises(ValueError, match=r"cols.csv: row 4 has 2 columns, expected 3"):
        nyse.load_prices(p, num_columns=3)
    p = _write(tmp_path / "hdr.csv", ["A,B", "1,1", "1,1"])
    with pytest.raises(ValueError, match=r"hdr.csv: header has 2 columns, expected 36"):
        nyse.load_prices(p)
    p = _write(tmp_path / "neg.csv", ["A,B,C", "1,1,1", "1,-2,1"])
    with pytest.raises(ValueError, match=r"neg.csv: row 3"):
        nyse.load_prices(p, num_columns=3)


def test_bundled_data_matches_readme_sanity_figures():
    x = nyse.load_relatives()
    assert x.shape == (5651, 36)
    assert abs(x.min() - 0.75) < 1e-9 and abs(x.max() - 1.35294) < 1e-9
    bt = nyse.backtest(x, {"UBAH": nyse.buy_and_hold})
    assert abs(np.prod(1 + bt.returns[:, 0]) - 14.497) < 5e-4  # uniform buy-and-hold wealth (README)


# ---------------------------------------------------------------------------------- strategies

def test_relatives_by_hand():
    x = nyse.relatives(PRICES)
    np.testing.assert_allclose(x[0], PRICES[0])
    np.testing.assert_allclose(x[1], [1.21 / 1.10, 0.99 / 0.90, 0.95 / 1.00])


def test_buy_and_hold_wealth_is_mean_final_price():
    x = nyse.relatives(PRICES)
    bt = nyse.backtest(x, {"UBAH": nyse.buy_and_hold})
    assert np.isclose(np.prod(1 + bt.returns[:, 0]), PRICES[-1].mean())
    np.testing.assert_allclose(bt.turnover[:, 0], 0.0, atol=1e-12)  # never trades


def test_constant_rebalanced_wealth_and_turnover_by_hand():
    x = nyse.relatives(PRICES)
    bt = nyse.backtest(x, {"UCRP": nyse.constant_rebalanced})
    assert np.isclose(np.prod(1 + bt.returns[:, 0]), np.prod(x.mean(1)))
    drift = (x[0] / 3) / (x[0] / 3).sum()
    assert np.isclose(bt.turnover[1, 0], 0.5 * np.abs(1 / 3 - drift).sum())


def test_best_so_far_and_momentum_by_hand():
    x = nyse.relatives(PRICES)
    b = nyse.best_so_far(x)
    # leader by cumulative price before each day: day1 A (1.10), day2 A (1.21), day3 A (1.10 vs 1.05),
    # day4 C (1.10), day5 C (1.20)
    assert [int(np.argmax(r)) for r in b[1:]] == [0, 0, 0, 2, 2]
    np.testing.assert_allclose(b[0], 1 / 3)
    m = nyse.momentum(x, lookback=2, top=1)
    # day t holds the stock with the largest P[t-1] / P[t-3] (P[-1] = 1)
    P = np.vstack([np.ones(3), PRICES])
    for t in range(1, 6):
        assert np.argmax(m[t]) == np.argmax(P[t] / P[max(0, t - 2)])


def _eg_reference(x, eta):
    n = x.shape[1]
    b = [1.0 / n] * n
    out = []
    for row in x:
        out.append(list(b))
        dot = sum(bi * xi for bi, xi in zip(b, row, strict=False))
        w = [bi * np.exp(eta * xi / dot) for bi, xi in zip(b, row, strict=False)]
        s = sum(w)
        b = [wi / s for wi in w]
    return np.array(out)


def test_eg_against_plain_loop():
    x = nyse.relatives(PRICES)
    np.testing.assert_allclose(nyse.exponentiated_gradient(x, eta=0.3), _eg_reference(x, 0.3), rtol=1e-12)


def _project_by_bisection(v):
    lo, hi = v.min() - 1.0, v.max()
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(v - mid, 0).sum() > 1:
            lo = mid
        else:
            hi = mid
    return np.maximum(v - (lo + hi) / 2, 0)


def test_simplex_projection_against_bisection():
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=7) * 2
        np.testing.assert_allclose(nyse.simplex_projection(v), _project_by_bisection(v), atol=1e-9)


def test_pamr_and_olmar_first_steps_by_hand():
    x = nyse.relatives(PRICES)
    b = nyse.pamr(x, eps=0.5)
    # day 0: b = 1/3, loss = b.x - 0.5, step against x - mean(x)
    dev = x[0] - x[0].mean()
    tau = (x[0].mean() - 0.5) / (dev @ dev)
    np.testing.assert_allclose(b[1], _project_by_bisection(1 / 3 - tau * dev), atol=1e-9)
    o = nyse.olmar(x, window=2, eps=10.0)
    P = PRICES
    pred = (P[0] + P[1]) / 2 / P[1]  # day 1 forecast from the 2-day moving average
    d = pred - pred.mean()
    lam = max(0.0, (10 - o[1] @ pred) / (d @ d))
    np.testing.assert_allclose(o[2], _project_by_bisection(o[1] + lam * d), atol=1e-9)


def test_every_strategy_gives_valid_portfolios():
    rng = np.random.default_rng(1)
    x = np.exp(rng.normal(0, 0.02, size=(80, 5)))
    for name, f in nyse.STRATEGIES.items():
        b = f(x)
        assert b.shape == x.shape, name
        assert np.all(b >= -1e-12) and np.allclose(b.sum(1), 1.0), name


# ------------------------------------------------------------------------------------- metrics

def test_window_metrics_by_hand():
    r = np.array([[0.10], [-0.05], [0.02]])
    rm = np.array([0.05, 0.0, -0.02])
    to = np.array([[0.0], [0.2], [0.4]])
    m = nyse.window_metrics(r, rm, to)[0]
    cwg = (np.log(1.1) + np.log(0.95) + np.log(1.02)) / 3
    mean = 0.07 / 3
    sd = np.sqrt(((0.1 - mean) ** 2 + (-0.05 - mean) ** 2 + (0.02 - mean) ** 2) / 3)
    mdd = 1 - 1.1 * 0.95 / 1.1  # peak 1.10, trough 1.045
    down = np.sqrt(0.05 ** 2 / 3)
    beta = np.cov(r[:, 0], rm, bias=True)[0, 1] / rm.var()
    alpha = mean - beta * rm.mean()
    np.testing.assert_allclose(m, [cwg, mean / sd, mdd, mean / down, alpha, 0.2, 252 * cwg / mdd], rtol=1e-10)


def test_normalise_inverts_mdd_and_turnover():
    rng = np.random.default_rng(2)
    raw = rng.uniform(size=(200, 3, 7))
    z, lo, hi = nyse.normalise(raw, 100)
    assert z.min() >= 0 and z.max() <= 1
    flat = raw[:100].reshape(-1, 7)
    np.testing.assert_allclose(lo, np.quantile(flat, 0.01, axis=0))
    j = 0  # CWG: increasing
    np.testing.assert_allclose(z[..., j], np.clip((raw[..., j] - lo[j]) / (hi[j] - lo[j]), 0, 1))
    for j in (2, 5):  # MDD, TO: inverted
        np.testing.assert_allclose(z[..., j], 1 - np.clip((raw[..., j] - lo[j]) / (hi[j] - lo[j]), 0, 1))


def test_reward_table_shape_and_range():
    tab = nyse.reward_table()
    assert tab.rewards.shape == (5651, 10, 7)
    assert tab.rewards.min() >= 0 and tab.rewards.max() <= 1
    assert tab.train_days == 2825
    # UBAH never trades: turnover 0, inverted -> 1 every day
    np.testing.assert_allclose(tab.rewards[:, 0, 5], 1.0)


def test_the_backtest_and_the_reward_table_are_computed_once_per_file_however_it_is_named():
    tab = nyse.reward_table()
    relative = os.path.relpath(nyse.DATA_FILE)
    assert nyse.reward_table(relative, nyse.WINDOW) is tab and nyse.reward_table(str(nyse.DATA_FILE)) is tab
    bt = nyse.strategies_backtest()
    assert nyse.strategies_backtest(relative) is bt and nyse.strategies_backtest(nyse.DATA_FILE) is bt
    np.testing.assert_array_equal(bt.returns, nyse.backtest(nyse.load_relatives()).returns)


# ------------------------------------------------------------------------------------ mandates

def _paper_table5():
    text = SEED_FILE.read_text()
    block = text[text.index("Mandate\tVector\tCWG"):]
    out, current = {}, None
    for line in block.splitlines()[1:]:
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) < 9:
            if current and len(out[current]) == 3 and line.strip() == "":
                continue
            if not line.strip():
                continue
            break
        if cells[0]:
            current = cells[0]
            out[current] = []
        out[current].append([float(c) for c in cells[2:9]])
    return out


@pytest.mark.skipif(not SEED_FILE.is_file(), reason="seed paper text not available")
def test_table5_matrices_match_the_printed_paper():
    paper = _paper_table5()
    ours = rep.mandate_matrices()
    assert list(paper) == list(ours)
    for k in ours:
        assert ours[k].shape == (3, 7)
        np.testing.assert_array_equal(ours[k], np.array(paper[k]), err_msg=k)


def test_data_driven_mandates_keep_the_sign_pattern():
    dd = rep.data_driven_mandates(nyse.reward_table())
    for k, W in rep.mandate_matrices().items():
        pos = W > 0
        assert np.array_equal(dd[k] > 0, pos), k
        np.testing.assert_allclose(dd[k].clip(0).sum(1), 1.0)
        assert np.all(dd[k][W < 0] <= 0) and np.all(dd[k][W < 0] >= -0.3)


# ----------------------------------------------------------------------------------- replay env

def test_replay_env_returns_the_logged_day():
    inst = registry.make_env({"kind": "nyse_replay"}, {})
    R = nyse.reward_table().rewards
    assert inst.env.num_arms == 10 and inst.env.dim == 7
    np.testing.assert_allclose(inst.means, R.mean(0))
    p = inst.env.reset(jax.random.PRNGKey(0), inst.params)
    off = int(p.offset)
    assert 0 <= off < 5651
    for t, arm in [(0, 3), (17, 9), (5650, 0)]:
        y, cost = inst.env.sample(jax.random.PRNGKey(9), arm, 123, t, p)
        np.testing.assert_allclose(y, R[(t + off) % 5651, arm], rtol=1e-6)
        assert float(cost) == 0.0
    offs = {int(inst.env.reset(jax.random.PRNGKey(s), inst.params).offset) for s in range(20)}
    assert len(offs) > 15  # trials start on different days
    fixed = registry.make_env({"kind": "nyse_replay", "start": "fixed"}, {})
    assert int(fixed.env.reset(jax.random.PRNGKey(0), fixed.params).offset) == 0
    with pytest.raises(ValueError, match="env.start='sometimes'"):
        registry.make_env({"kind": "nyse_replay", "start": "sometimes"}, {})


def test_risk_parity_by_hand():
    x = nyse.relatives(PRICES)
    b = nyse.risk_parity(x, window=3)
    np.testing.assert_allclose(b[:2], 1 / 3)  # fewer than 2 days of history: uniform
    for t in range(2, 6):
        sd = np.maximum(np.log(x[max(0, t - 3):t]).std(0, ddof=1), 1e-8)  # documented floor
        np.testing.assert_allclose(b[t], (1 / sd) / (1 / sd).sum())
