"""NYSE(O) online asset allocation of PDMOB: ten base strategies, seven daily rewards, eight mandates.

PDMOB (preference-directed MO bandits), Section 4.2 and Appendix B.3-B.4 (Tables 4, 5). The
learner picks one of ``K = 10`` base portfolio strategies each day and observes a 7-d reward
(CWG, SR, MDD, Sortino, Alpha, TO, CR) over ``T = 5651`` days of the NYSE(O) data set (36 stocks,
Li and Hoi 2014; bundled in ``mobandit_jax/data/nyse_o/``).

Pipeline (all numpy, computed once per process and cached):

1. Price relatives ``x[t] = P[t] / P[t-1]`` with ``P[-1] = 1`` (:func:`load_relatives`).
2. Ten strategies, each a sequence of portfolios ``b[t]`` chosen before ``x[t]`` is revealed
   (:data:`STRATEGIES`, one function each, the paper's "passive to risk-aware" pool; citations in
   each docstring): uniform buy-and-hold, uniform constant rebalanced, inverse-volatility risk
   parity, best-so-far (follow the leading stock), momentum (top-5 by 20-day return), minimum
   variance, EG (Helmbold et al. 1998), Anticor (Borodin et al. 2004), OLMAR (Li and Hoi 2012),
   PAMR (Li et al. 2012).
3. Daily net return ``r[t] = b[t] . x[t] - 1`` and turnover ``0.5 |b[t] - b~[t-1]|_1`` (``b~`` the
   previous portfolio drifted by the prices; the initial purchase counts 0).
4. Seven raw metrics per (day, strategy) on the trailing window of ``WINDOW = 60`` trading days
   ending at ``t`` (an expanding window over the first 59 days), :func:`window_metrics`:
   CWG = mean daily log growth; SR = mean / std of daily returns; MDD = maximum drawdown of the
   window's wealth path; Sortino = mean / downside deviation ``sqrt(mean(min(r, 0)^2))``;
   Alpha = Jensen's alpha ``mean(r) - beta mean(r_m)`` against the equal-weight market
   (the uniform constant-rebalanced return); TO = mean turnover; CR (Calmar) = ``252 CWG /
   max(MDD, 0.01)``. Undefined ratios (zero denominators) are 0.
5. Normalisation (Appendix B.3 step 1): each metric is mapped to ``[0, 1]`` with the 1 % and 99 %
   quantiles over the training partition (the first half of the days, ``t < 2825``, all ten
   strategies) and clipped; MDD and TO are inverted (``1 - x``), so every coordinate is maximised.

Replay environment ``"nyse_replay"`` (time series, not i.i.d.): the reward of arm ``a`` in round
``t`` is the logged vector ``R[(t + s) mod T, a]``, whatever the pull count, so every policy sees
the same day in the same round. Choice for the 20 trials: with ``start = "random"`` (default) each
seed draws its start offset ``s`` uniformly from ``[0, T)`` in ``reset`` (the history replayed
with wrap-around from a random day; with ``horizon = T`` every trial sees every day exactly once,
in a different cyclic order); a pure replay (``start = "fixed"``, ``s = 0``) would make the
deterministic index policies identical across seeds. The regret reference ``means`` is the
average of ``R`` over all ``T`` days (exact for ``horizon = T``).

The mandates of Table 5 and Appendix B.3's data-driven weights are report data:
``experiments/pdmob/report.py``.

References:
  - PDMOB: Ma, Zhang, Sugiyama & Zhou, "Selective Ensemble Based on Preference-Directed
    Multi-Objective Bandits", arXiv 2026, https://arxiv.org/abs/2606.21929.
  - Li & Hoi, "Online portfolio selection: a survey", ACM Computing Surveys 46(3), 2014,
    https://doi.org/10.1145/2512962 (the NYSE(O) data set).
  - Cover, "Universal portfolios", Mathematical Finance 1(1), 1991 (UCRP).
  - Maillard, Roncalli & Teiletche, "The properties of equally weighted risk contribution
    portfolios", Journal of Portfolio Management 36(4), 2010 (risk parity).
  - Jegadeesh & Titman, "Returns to buying winners and selling losers: implications for stock market
    efficiency", Journal of Finance 48(1), 1993 (momentum).
  - Markowitz, "Portfolio selection", Journal of Finance 7(1), 1952 (minimum variance).
  - Helmbold, Schapire, Singer & Warmuth, "On-line portfolio selection using multiplicative updates",
    Mathematical Finance 8(4), 1998, https://doi.org/10.1111/1467-9965.00058 (EG).
  - Borodin, El-Yaniv & Gogan, "Can we learn to beat the best stock", Journal of Artificial
    Intelligence Research 21, 2004, https://doi.org/10.1613/jair.1336 (Anticor).
  - Li & Hoi, "On-line portfolio selection with moving average reversion", ICML 2012,
    https://arxiv.org/abs/1206.4626 (OLMAR).
  - Li, Zhao, Hoi & Gopalkrishnan, "PAMR: Passive aggressive mean reversion strategy for portfolio
    selection", Machine Learning 87(2), 2012, https://doi.org/10.1007/s10994-012-5281-z (PAMR).
  - Duchi, Shalev-Shwartz, Singer & Chandra, "Efficient projections onto the l1-ball for learning in
    high dimensions", ICML 2008, https://doi.org/10.1145/1390156.1390191 (simplex projection).
"""
from __future__ import annotations

import functools
import gzip
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..registry import register_env
from ..types import Env, EnvInstance

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "nyse_o"
DATA_FILE = DATA_DIR / "nyse_o.csv.gz"
NUM_STOCKS = 36
WINDOW = 60
OBJECTIVES = ("CWG", "SR", "MDD", "Sortino", "Alpha", "TO", "CR")
INVERTED = (2, 5)  # MDD, TO: minimised, inverted after normalisation
QUANTILES = (0.01, 0.99)

# ---------------------------------------------------------------------------------------- data


def _open_text(path: Path):
    return gzip.open(path, "rt", newline="") if path.suffix == ".gz" else open(path, newline="")


def load_prices(path=DATA_FILE, num_columns: int | None = NUM_STOCKS) -> np.ndarray:
    """Read a price-level CSV (header + one row per day); errors name the file and the bad row.

    Args:
      path: the CSV (optionally ``.gz``) of positive prices, one row per day.
      num_columns: the number of stocks required (``None``: any).

    Returns:
      ``(T, n)`` float numpy prices, ``T >= 2``.

    Raises:
      FileNotFoundError: the file is missing.
      ValueError: a wrong column count or a bad price, naming the row.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"NYSE(O) price file {path} is missing")
    rows = []
    with _open_text(path) as fh:
        header = fh.readline().strip().split(",")
        if num_columns is not None and len(header) != num_columns:
            raise ValueError(f"{path}: header has {len(header)} columns, expected {num_columns}")
        for line_no, line in enumerate(fh, start=2):
            line = line.strip()
            if not line:
                continue
            cells = line.split(",")
            if len(cells) != len(header):
                raise ValueError(f"{path}: row {line_no} has {len(cells)} columns, expected {len(header)}")
            try:
                values = [float(c) for c in cells]
            except ValueError:
                values = [math.nan]
            if not all(math.isfinite(v) and v > 0 for v in values):
                raise ValueError(
                    f"{path}: row {line_no} holds a missing, non-numeric, NaN or non-positive price: {line[:80]!r}"
                )
            rows.append(values)
    if len(rows) < 2:
        raise ValueError(f"{path}: needs at least 2 rows of prices, found {len(rows)}")
    return np.asarray(rows, float)


def relatives(prices) -> np.ndarray:
    """Daily price relatives ``x[t] = P[t] / P[t-1]`` with ``P[-1] = 1`` (``(T, n)``).

    Args:
      prices: ``(T, n)`` prices.

    Returns:
      ``(T, n)`` float numpy relatives (row 0 is the first prices themselves).
    """
    P = np.asarray(prices, float)
    return P / np.vstack([np.ones((1, P.shape[1])), P[:-1]])


def load_relatives(path=DATA_FILE) -> np.ndarray:
    """The NYSE(O) price relatives ``(5651, 36)``.

    Args:
      path: the price file.

    Returns:
      ``(T, n)`` float numpy relatives of :func:`load_prices`.
    """
    return relatives(load_prices(path))


# ---------------------------------------------------------------------------------- strategies


def simplex_projection(v) -> np.ndarray:
    """Euclidean projection of ``v`` onto the probability simplex (Duchi et al. 2008).

    Args:
      v: ``(n,)`` vector.

    Returns:
      ``(n,)`` the closest point of the simplex.
    """
    v = np.asarray(v, float)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    ind = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / ind > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1.0), 0.0)


def _uniform(n):
    return np.full(n, 1.0 / n)


def buy_and_hold(x) -> np.ndarray:
    """Uniform buy-and-hold: invest ``1/n`` in each stock once and let it drift (passive benchmark).

    Args:
      x: ``(T, n)`` price relatives.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """
    P = np.cumprod(x, axis=0)
    held = np.vstack([np.ones((1, x.shape[1])), P[:-1]])
    return held / held.sum(1, keepdims=True)


def constant_rebalanced(x) -> np.ndarray:
    """Uniform constant rebalanced portfolio (UCRP; Cover 1991): ``b[t] = 1/n`` every day.

    Args:
      x: ``(T, n)`` price relatives.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """
    return np.tile(_uniform(x.shape[1]), (x.shape[0], 1))


def risk_parity(x, window: int = WINDOW) -> np.ndarray:
    """Naive risk parity: weights proportional to ``1 / sigma_i`` of trailing log-relatives (Maillard et al. 2010).

    Args:
      x: ``(T, n)`` price relatives.
      window: trailing days of the volatility estimate.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """
    T, n = x.shape
    b = np.tile(_uniform(n), (T, 1))
    lx = np.log(x)
    for t in range(2, T):
        sd = lx[max(0, t - window):t].std(0, ddof=1)
        inv = 1.0 / np.maximum(sd, 1e-8)
        b[t] = inv / inv.sum()
    return b


def best_so_far(x) -> np.ndarray:
    """Follow the leader: all wealth in the stock with the highest cumulative price so far (ties: first).

    Args:
      x: ``(T, n)`` price relatives.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """
    T, n = x.shape
    P = np.cumprod(x, axis=0)
    b = np.zeros((T, n))
    b[0] = _uniform(n)
    b[np.arange(1, T), np.argmax(P[:-1], axis=1)] = 1.0
    return b


def momentum(x, lookback: int = 20, top: int = 5) -> np.ndarray:
    """Cross-sectional momentum (Jegadeesh and Titman 1993): equal weight on the ``top`` past-``lookback``-day
    winners.

    Args:
      x: ``(T, n)`` price relatives.
      lookback: days of the past return.
      top: number of winners held.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """
    T, n = x.shape
    lx = np.log(x)
    c = np.vstack([np.zeros((1, n)), np.cumsum(lx, 0)])  # c[t] = log P[t-1]
    b = np.zeros((T, n))
    b[0] = _uniform(n)
    for t in range(1, T):
        ret = c[t] - c[max(0, t - lookback)]
        winners = np.argsort(-ret, kind="stable")[:top]
        b[t, winners] = 1.0 / top
    return b


def min_variance(x, window: int = WINDOW, shrink: float = 0.1) -> np.ndarray:
    """Long-only minimum variance (Markowitz 1952): trailing covariance shrunk to its diagonal mean,
    ``w = S^-1 1 / 1' S^-1 1`` with negative weights clipped to 0 and renormalised.

    Args:
      x: ``(T, n)`` price relatives.
      window: trailing days of the covariance.
      shrink: weight of the shrinkage target.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """
    T, n = x.shape
    b = np.tile(_uniform(n), (T, 1))
    for t in range(3, T):
        R = x[max(0, t - window):t] - 1.0
        S = np.cov(R, rowvar=False)
        S = (1 - shrink) * S + shrink * np.trace(S) / n * np.eye(n)
        w = np.linalg.solve(S + 1e-12 * np.eye(n), np.ones(n))
        w = np.maximum(w / w.sum(), 0.0)
        b[t] = w / w.sum() if w.sum() > 0 else _uniform(n)
    return b


def _play_then_update(x, update) -> np.ndarray:
    """Weights of an online strategy that starts uniform, plays ``cur`` on day ``t`` and then moves to
    ``update(t, cur)`` (which sees day ``t``'s relatives ``x[t]``)."""
    T, n = x.shape
    b = np.empty((T, n))
    cur = _uniform(n)
    for t in range(T):
        b[t] = cur
        cur = update(t, cur)
    return b


def exponentiated_gradient(x, eta: float = 0.05) -> np.ndarray:
    """EG (Helmbold, Schapire, Singer and Warmuth 1998): ``b_i <- b_i exp(eta x_i / b.x)``, normalised.

    Args:
      x: ``(T, n)`` price relatives.
      eta: learning rate.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """

    def update(t, cur):
        w = cur * np.exp(eta * x[t] / (cur @ x[t]))
        return w / w.sum()

    return _play_then_update(x, update)


def anticor(x, window: int = 30) -> np.ndarray:
    """Anticor (Borodin, El-Yaniv and Gogan 2004): move wealth from recent winners to anti-correlated losers.

    Args:
      x: ``(T, n)`` price relatives.
      window: length of each of the two compared windows.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """
    lx = np.log(x)

    def update(t, cur):
        drift = cur * x[t] / (cur @ x[t])
        if t + 1 < 2 * window:
            return drift
        L1 = lx[t + 1 - 2 * window:t + 1 - window]
        L2 = lx[t + 1 - window:t + 1]
        mu2 = L2.mean(0)
        s1, s2 = L1.std(0, ddof=1), L2.std(0, ddof=1)
        cov = (L1 - L1.mean(0)).T @ (L2 - mu2) / (window - 1)
        denom = np.outer(s1, s2)
        mcor = np.where(denom > 0, cov / np.where(denom > 0, denom, 1.0), 0.0)
        d = np.diag(mcor)
        claim = mcor + np.maximum(-d, 0)[:, None] + np.maximum(-d, 0)[None, :]
        claim = np.where((mu2[:, None] > mu2[None, :]) & (mcor > 0), claim, 0.0)
        tot = claim.sum(1, keepdims=True)
        transfer = drift[:, None] * np.where(tot > 0, claim / np.where(tot > 0, tot, 1.0), 0.0)
        new = np.maximum(drift - transfer.sum(1) + transfer.sum(0), 0.0)
        return new / new.sum()

    return _play_then_update(x, update)


def olmar(x, window: int = 5, eps: float = 10.0) -> np.ndarray:
    """OLMAR-1 (Li and Hoi 2012): passive-aggressive step towards the moving-average-reversion forecast.

    Args:
      x: ``(T, n)`` price relatives.
      window: days of the moving average.
      eps: reversion threshold.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """
    P = np.cumprod(x, axis=0)

    def update(t, cur):
        pred = P[max(0, t + 1 - window):t + 1].mean(0) / P[t]
        dev = pred - pred.mean()
        norm = dev @ dev
        lam = max(0.0, (eps - cur @ pred) / norm) if norm > 0 else 0.0
        return simplex_projection(cur + lam * dev)

    return _play_then_update(x, update)


def pamr(x, eps: float = 0.5) -> np.ndarray:
    """PAMR (Li, Zhao, Hoi and Gopalkrishnan 2012): passive-aggressive mean reversion, epsilon-insensitive loss.

    Args:
      x: ``(T, n)`` price relatives.
      eps: sensitivity of the loss.

    Returns:
      ``(T, n)`` portfolios: row ``t``, on the simplex, is chosen before ``x[t]`` is revealed.
    """

    def update(t, cur):
        loss = max(0.0, cur @ x[t] - eps)
        dev = x[t] - x[t].mean()
        norm = dev @ dev
        tau = loss / norm if norm > 0 else 0.0
        return simplex_projection(cur - tau * dev)

    return _play_then_update(x, update)


STRATEGIES = {
    "UBAH": buy_and_hold,
    "UCRP": constant_rebalanced,
    "RiskParity": risk_parity,
    "BestSoFar": best_so_far,
    "Momentum": momentum,
    "MinVariance": min_variance,
    "EG": exponentiated_gradient,
    "Anticor": anticor,
    "OLMAR": olmar,
    "PAMR": pamr,
}


class Backtest(NamedTuple):
    """Per-strategy daily returns ``(T, K)``, turnover ``(T, K)`` and portfolios ``(K, T, n)``."""

    returns: np.ndarray
    turnover: np.ndarray
    portfolios: np.ndarray


def backtest(x, strategies=STRATEGIES) -> Backtest:
    """Run every strategy on relatives ``x``: daily net returns and turnover (initial purchase: 0).

    Args:
      x: ``(T, n)`` price relatives.
      strategies: ``{name: strategy}``, ``K`` functions of ``x`` returning ``(T, n)`` portfolios.

    Returns:
      The :class:`Backtest`.
    """
    x = np.asarray(x, float)
    bs = np.stack([f(x) for f in strategies.values()])  # (K, T, n)
    gross = np.einsum("ktn,tn->kt", bs, x)
    drifted = bs * x[None] / gross[..., None]
    to = np.zeros_like(gross)
    to[:, 1:] = 0.5 * np.abs(bs[:, 1:] - drifted[:, :-1]).sum(-1)
    return Backtest((gross - 1.0).T, to.T, bs)


# ------------------------------------------------------------------------------------- metrics


def _ratio(num, den):
    return np.where(den > 1e-12, num / np.where(den > 1e-12, den, 1.0), 0.0)


def window_metrics(r, rm, to) -> np.ndarray:
    """The seven raw metrics of one window: ``r (L, K)`` returns, ``rm (L,)`` market, ``to (L, K)`` -> ``(K, 7)``.

    Args:
      r: ``(L, K)`` daily net returns of the window.
      rm: ``(L,)`` the market's daily net returns.
      to: ``(L, K)`` daily turnover.

    Returns:
      ``(K, 7)`` float numpy metrics in :data:`OBJECTIVES` order.
    """
    r, rm, to = np.asarray(r, float), np.asarray(rm, float), np.asarray(to, float)
    g = np.log1p(r)
    cwg = g.mean(0)
    mean = r.mean(0)
    sr = _ratio(mean, r.std(0))
    wealth = np.exp(np.cumsum(g, 0))
    peak = np.maximum.accumulate(np.vstack([np.ones((1, r.shape[1])), wealth]), 0)[1:]
    mdd = np.max(1.0 - wealth / peak, axis=0)
    sortino = _ratio(mean, np.sqrt(np.mean(np.minimum(r, 0.0) ** 2, 0)))
    var_m = rm.var()
    beta = _ratio(((r - mean) * (rm - rm.mean())[:, None]).mean(0), np.full(r.shape[1], var_m))
    alpha = mean - beta * rm.mean()
    tov = to.mean(0)
    cr = 252.0 * cwg / np.maximum(mdd, 0.01)
    return np.stack([cwg, sr, mdd, sortino, alpha, tov, cr], axis=1)


def raw_rewards(bt: Backtest, window: int = WINDOW, market: int = 1) -> np.ndarray:
    """Raw metrics ``(T, K, 7)`` on the trailing ``window`` (expanding at the start); market = strategy ``market``.

    Args:
      bt: the :class:`Backtest`.
      window: trailing days of each metric.
      market: index of the strategy used as the market.

    Returns:
      ``(T, K, 7)`` float numpy raw metrics.
    """
    T, K = bt.returns.shape
    out = np.empty((T, K, 7))
    for t in range(T):
        lo = max(0, t + 1 - window)
        out[t] = window_metrics(bt.returns[lo:t + 1], bt.returns[lo:t + 1, market], bt.turnover[lo:t + 1])
    return out


def normalise(raw, train_days: int) -> tuple:
    """Map each metric to [0, 1] by its training 1 %/99 % quantiles, clip, invert MDD and TO.

    Args:
      raw: ``(T, K, 7)`` raw metrics.
      train_days: the first days whose quantiles set the scale, in ``[1, T]``.

    Returns:
      ``(z, lo, hi)``: ``(T, K, 7)`` normalised rewards and the ``(7,)`` quantiles.

    Raises:
      ValueError: ``train_days`` out of range.
    """
    raw = np.asarray(raw, float)
    if not 1 <= train_days <= raw.shape[0]:
        raise ValueError(f"train_days={train_days} is not in 1..{raw.shape[0]}")
    flat = raw[:train_days].reshape(-1, raw.shape[-1])
    lo, hi = np.quantile(flat, QUANTILES[0], axis=0), np.quantile(flat, QUANTILES[1], axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    z = np.clip((raw - lo) / span, 0.0, 1.0)
    z[..., list(INVERTED)] = 1.0 - z[..., list(INVERTED)]
    return z, lo, hi


class RewardTable(NamedTuple):
    """The replayed rewards ``(T, K, 7)`` in [0, 1], the raw metrics and the normalisation bounds."""

    rewards: np.ndarray
    raw: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    train_days: int
    names: tuple


def strategies_backtest(path=DATA_FILE) -> Backtest:
    """:func:`backtest` of the ten strategies on the relatives of ``path`` (cached per file, however named).

    Args:
      path: the price file.

    Returns:
      The :class:`Backtest` of :data:`STRATEGIES`.
    """
    return _backtest_of(str(Path(path).resolve()))


def reward_table(path=DATA_FILE, window: int = WINDOW) -> RewardTable:
    """The normalised 7-d daily reward of each of the ten strategies on NYSE(O) (cached per file and window).

    Args:
      path: the price file.
      window: trailing days of each metric.

    Returns:
      The :class:`RewardTable` (training partition: the first half of the days).
    """
    return _reward_table_of(str(Path(path).resolve()), int(window))


@functools.lru_cache(maxsize=2)
def _backtest_of(path: str) -> Backtest:
    return backtest(load_relatives(path))


@functools.lru_cache(maxsize=2)
def _reward_table_of(path: str, window: int) -> RewardTable:
    bt = _backtest_of(path)
    raw = raw_rewards(bt, window)
    train = bt.returns.shape[0] // 2
    z, lo, hi = normalise(raw, train)
    return RewardTable(z, raw, lo, hi, train, tuple(STRATEGIES))


# ------------------------------------------------------------------------------ environment


class ReplayParams(NamedTuple):
    """The logged rewards ``(T, K, d)`` and the start offset of the replay (drawn per seed)."""

    rewards: object
    offset: object


def make_replay_env(rewards, random_start: bool = True) -> Env:
    """A time-series replay ``Env``: round ``t`` returns ``rewards[(t + offset) mod T, arm]``.

    Args:
      rewards: ``(T, K, d)`` logged rewards.
      random_start: whether ``reset`` draws the start offset uniformly in ``[0, T)`` (else 0).

    Returns:
      The :class:`~mobandit_jax.types.Env` (pulls cost 0) over :class:`ReplayParams`.
    """
    import jax
    import jax.numpy as jnp

    T, K, d = np.shape(rewards)

    def sample(key, arm, pull_index, t, params):
        day = jnp.mod(t + params.offset, T)
        return params.rewards[day, arm], jnp.zeros((), params.rewards.dtype)

    def reset(key, params):
        off = jax.random.randint(key, (), 0, T, dtype=jnp.int32) if random_start else jnp.int32(0)
        return params._replace(offset=off)

    return Env(sample, int(K), int(d), reset)


@register_env(
    "nyse_replay",
    doc="PDMOB NYSE(O) asset allocation: replay of 10 strategies' daily 7-d rewards (random cyclic start)",
    keys=("start", "window"),
)
def build(section: dict, config: dict) -> EnvInstance:
    """Build the NYSE(O) replay environment of Section 4.2.

    Args:
      section: the spec's ``[env]`` table (``start``: ``"random"`` or ``"fixed"``; ``window`` >= 2).
      config: the whole spec (not read).

    Returns:
      The :class:`~mobandit_jax.types.EnvInstance`; its truth is the mean reward over all days.

    Raises:
      ValueError: a key's value is not allowed.
    """
    import jax.numpy as jnp

    start = section.get("start", "random")
    if start not in ("random", "fixed"):
        raise ValueError(f"env.start={start!r} is not allowed; use 'random' or 'fixed'")
    window = int(section.get("window", WINDOW))
    if window < 2:
        raise ValueError(f"env.window={window} must be >= 2 days")
    table = reward_table(DATA_FILE, window)
    R = table.rewards
    env = make_replay_env(R, start == "random")
    params = ReplayParams(jnp.asarray(R, jnp.float32), jnp.int32(0))
    info = {
        "days": int(R.shape[0]),
        "strategies": list(table.names),
        "objectives": list(OBJECTIVES),
        "train_days": table.train_days,
    }
    return EnvInstance(env=env, params=params, means=R.mean(0), static_key=("nyse_replay", start, window), info=info)
