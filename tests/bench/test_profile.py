"""The profile tool: a kernel table that sums what a traced call ran, and the command's JSON for each algorithm."""
import json

import jax
import jax.numpy as jnp
import pytest

from mobandit_jax.bench import profile


def test_the_kernel_table_sums_the_operations_of_one_call():
    x = jnp.ones((256, 256))
    f = jax.jit(lambda x: jnp.tanh(x @ x).sum())
    f(x).block_until_ready()
    table = profile.kernel_table(lambda: f(x).block_until_ready(), top=5)
    assert table["wall_s"] > 0 and table["busy_s"] > 0 and table["events"] >= 1
    assert 1 <= len(table["top"]) <= 5
    shares = [row["share"] for row in table["top"]]
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1 + 1e-9
    assert all(row["count"] >= 1 and row["seconds"] > 0 for row in table["top"])


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["prefucb", "thv_d5"])
def test_the_command_writes_a_rate_and_a_profile(tmp_path, algorithm):
    out = tmp_path / "p.json"
    assert profile.main(["--algorithm", algorithm, "--seeds", "4", "--rounds", "3", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["algorithm"] == algorithm and report["seeds"] == 4 and report["rounds"] == 3
    assert [v["noise"] for v in report["variants"]] == (["beta", "bernoulli"] if algorithm == "prefucb"
                                                       else ["gaussian"])
    assert all(v["seed_rounds_per_s"] > 0 for v in report["variants"])
    assert report["profile"]["top"] and report["profile"]["per_round_us"] > 0


@pytest.mark.slow
def test_the_pac_split_times_the_lanes_the_method_runs_on():
    """The ``full`` variant is APE as registered (lanes laid out last, capped at the rounds); every variant plays
    every seed's rounds; the shares come from the four timings."""
    import numpy as np

    from mobandit_jax import engine
    from mobandit_jax.bench.fixed_confidence import DELTA, bench_instance
    from mobandit_jax.problems.stochastic import make_stochastic
    from mobandit_jax.registry import make_policy
    from mobandit_jax.types import Context

    seeds, rounds = 6, 5
    runs = profile._pac_variants("ape", seeds, rounds)
    assert sorted(runs) == ["full", "loop", "no_random_bits", "no_statistics"]
    inst = make_stochastic(bench_instance(), noise="bernoulli")
    policy, params, _ = make_policy("ape", Context.of(inst, rounds), delta=DELTA)
    keys = engine.seed_keys(0, np.arange(seeds))
    env_keys = jax.vmap(lambda k: jax.random.fold_in(k, 0))(keys)
    pol_keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
    alone = jax.vmap(policy.identify, in_axes=(0, 0, None, None))(env_keys, pol_keys, inst.params, params)
    np.testing.assert_array_equal(np.asarray(runs["full"]().pulls), np.asarray(alone.pulls))
    K = bench_instance().shape[0]
    for name in ("no_statistics", "loop"):  # the first round pulls every arm, then 2 arms a round
        np.testing.assert_array_equal(np.asarray(runs[name]().pulls).sum(1), K + 2 * (rounds - 1))
