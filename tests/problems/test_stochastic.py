"""The stochastic environment's feedback models against scipy distributions."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from mobandit_jax.problems.stochastic import beta_johnk, make_stochastic


@pytest.mark.parametrize("a,b,tries", [(0.5, 0.5, 8), (0.05, 0.95, 8), (0.9, 0.1, 8), (0.3, 0.2, 8), (0.5, 0.5, 1)])
def test_johnk_beta_matches_scipy(a, b, tries):
    # tries = 1 exercises the redraw loop on most batches; 8 (the default) almost never loops.
    keys = jax.random.split(jax.random.PRNGKey(0), 4000)
    x = np.asarray(jax.vmap(lambda k: beta_johnk(k, jnp.full((3,), a), jnp.full((3,), b), tries))(keys)).ravel()
    assert np.all((x >= 0) & (x <= 1))
    # Chi-square over the distribution's deciles (float32 rounds much of the mass of small shapes
    # onto 0 or 1, which a plain KS test on ties would misread).
    dist = stats.beta(a, b)
    inner = np.unique(np.clip(dist.ppf(np.linspace(0.1, 0.9, 9)), 1e-5, 1 - 1e-5))
    edges = np.concatenate([[-1.0], inner, [2.0]])
    counts = np.histogram(x, bins=edges)[0]
    expected = np.diff(np.concatenate([[0.0], dist.cdf(inner), [1.0]])) * x.size
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    assert abs(x.mean() - a / (a + b)) < 4 * np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)) / x.size)


@pytest.mark.parametrize("c", [1.0, 4.0])
def test_env_means_and_edges(c):
    means = np.array([[0.0, 0.3, 1.0], [0.8, 0.5, 0.2]])
    inst = make_stochastic(means, "beta", concentration=c)
    key = jax.random.PRNGKey(1)
    draws = jax.vmap(lambda j: jax.vmap(lambda a: inst.env.sample(key, a, j, 0, inst.params)[0])(jnp.arange(2)))(
        jnp.arange(6000))
    draws = np.asarray(draws)
    assert np.all(draws[:, 0, 0] == 0.0) and np.all(draws[:, 0, 2] == 1.0)
    se = np.sqrt(means * (1 - means) / (c + 1) / 6000)
    assert np.all(np.abs(draws.mean(0) - means) <= 4.5 * se + 1e-6)
    # Beta(c r, c (1 - r)) variance r (1 - r) / (c + 1)
    np.testing.assert_allclose(draws[:, 1, 1].var(), 0.25 / (c + 1), rtol=0.1)


def test_bernoulli_and_gaussian():
    means = np.array([[0.3, 0.7], [0.5, 0.1]])
    key = jax.random.PRNGKey(2)
    for noise in ("bernoulli", "gaussian"):
        inst = make_stochastic(means, noise, sigma=0.05)
        y = np.asarray(jax.vmap(lambda j: inst.env.sample(key, 0, j, 0, inst.params)[0])(jnp.arange(5000)))
        assert np.all((y >= 0) & (y <= 1))
        assert np.abs(y.mean(0) - means[0]).max() < 0.03
        if noise == "bernoulli":
            assert set(np.unique(y)) <= {0.0, 1.0}
