"""mb.Study: the same choices as the policy looped in plain Python on the same rewards, batches, budgets, bad input,
durability across processes (kill -9, two writers) and a replay equal to a serial one."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax.kernels.prefix import prefix_sums
from mobandit_jax.policies.identification import psi_sr
from mobandit_jax.types import Final, Observation

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEANS = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.4, 0.4], [0.2, 0.2], [0.6, 0.3]])


def _spec(policy="prefucb", arms=6, **study):
    return {"study": {"arms": [f"m{i}" for i in range(arms)], "objectives": ["acc", "speed"], **study},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": policy}]}


def test_online_study_makes_the_loops_choices(tmp_path):
    """prefucb: a study told the stochastic environment's rewards asks what the policy looped in plain Python with
    the engine's keys picks, and recommends the family's set of the loop's final state."""
    seed, T = 3, 40
    inst = mb.make_env({"kind": "stochastic", "means": MEANS.tolist(), "noise": "bernoulli"})
    seed_key = jax.random.fold_in(jax.random.PRNGKey(seed), 0)
    key_env, key_pol = jax.random.fold_in(seed_key, 0), jax.random.fold_in(seed_key, 1)
    draw = jax.jit(lambda a, j, t: inst.env.sample(key_env, a, j, t, inst.params))
    ctx = mb.Context.of(inst, T, np.eye(2))
    policy, params, _ = mb.make_policy("prefucb", ctx)
    select, update = jax.jit(policy.select), jax.jit(policy.update)
    state, pulls, sums, arms = policy.init(params), np.zeros(6, int), np.zeros((6, 2)), []
    for t in range(T):
        a = int(select(jax.random.fold_in(key_pol, t), state, params))
        reward, cost = draw(a, pulls[a], t)
        state = update(state, jnp.int32(a), Observation(reward, cost), params)
        arms.append(a)
        pulls[a] += 1
        sums[a] += np.asarray(reward)
    means = jnp.asarray(sums / np.maximum(pulls, 1)[:, None], jnp.float32)
    final = Final(state, jnp.int32(arms[-1]), jnp.asarray(pulls, jnp.int32), means)
    want = [f"m{i}" for i in np.flatnonzero(mb.FAMILIES["preference"].recommended(final, ctx))]

    study = mb.Study.create(tmp_path / "s", _spec(horizon=T), seed=seed)
    got, n = [], np.zeros(6, int)
    for t in range(T):
        if t == T // 2:  # reloading in the middle changes nothing
            study = mb.Study.load(tmp_path / "s")
        (ticket,) = study.ask()
        reward, _ = draw(ticket.index, n[ticket.index], t)
        study.tell(ticket, np.asarray(reward).tolist())
        got.append(ticket.index)
        n[ticket.index] += 1
    assert got == arms
    assert study.recommend() == want
    assert study.ask() == [] and study.status()["reason"] == "finished" and study.status()["finished"]


def test_identification_study_matches_the_bulk_run(tmp_path):
    """psi_sr under a budget, not re-planned: told the per-pull values of a table, the study pulls and recommends what
    the bulk identifier does on the prefix sums of the same table (deterministic costs, so reservations are exact)."""
    rng = np.random.default_rng(5)
    K, n, scale = 6, 64, 2.0
    costs = np.array([1.0, 0.5, 0.8, 1.0, 0.6, 0.9])
    values = np.concatenate([rng.binomial(1, MEANS[:, None, :].repeat(n, 1)).astype(float),
                             np.repeat(costs[:, None, None] / costs.max(), n, 1)], axis=-1)
    spec = _spec("psi_sr") | {"budget": {"B": 40 * scale, "cost": (costs * scale).tolist(), "replan": False}}
    del spec["preference"]
    study = mb.Study.create(tmp_path / "s", spec, seed=0)
    params = study._built.params
    bulk = psi_sr(K, n, lambda key, p, jmax: prefix_sums(jnp.asarray(values, jnp.float32)), "sr", dim=2)
    result = bulk.identify(None, None, None, params)
    pulls = np.zeros(K, int)
    for _ in range(1000):
        tickets = study.ask(7)
        if not tickets:
            break
        for t in tickets:
            v = values[t.index, pulls[t.index]]
            study.tell(t, v[:2].tolist(), cost=float(v[2] * costs.max() * scale))
            pulls[t.index] += 1
    assert study.status()["finished"]
    np.testing.assert_array_equal(pulls, np.asarray(result.pulls))
    assert study.recommend() == [f"m{i}" for i in np.flatnonzero(np.asarray(result.recommended))]
    assert study.status()["spent"] <= 40 * scale


def test_batches_are_distinct_and_horizon_finishes(tmp_path):
    study = mb.Study.create(tmp_path / "s", _spec(arms=10, horizon=6), seed=0)
    batch = study.ask(4)
    assert len({t.index for t in batch}) == 4
    more = study.ask(4)
    assert len(more) == 2 and study.status()["reason"] == "pending"
    assert len({t.index for t in batch + more}) == 6
    assert [t.id for t in study.ask(3, worker=None)] == []
    for t in batch + more:
        study.tell(t, [0.5, 0.5])
    assert study.ask() == [] and study.status() | {} == study.status()
    assert study.status()["reason"] == "finished" and study.status()["finished"]


def test_worker_gets_its_pending_tickets_back(tmp_path):
    study = mb.Study.create(tmp_path / "s", _spec(arms=10), seed=0)
    mine = study.ask(2, worker="w1")
    other = study.ask(1, worker="w2")
    again = study.ask(3, worker="w1")
    assert [t.id for t in again[:2]] == [t.id for t in mine]
    assert again[2].id not in {t.id for t in mine + other}


def test_budget_counts_reservations(tmp_path):
    spec = _spec("cohv_ucb", arms=4) | {"budget": {"B": 5.0, "cost": [1.0, 1.0, 2.0, 1.0]}}
    study = mb.Study.create(tmp_path / "s", spec, seed=0)
    first = study.ask(10)
    assert sum(t.index == 2 for t in first) * 2 + sum(t.index != 2 for t in first) <= 5
    assert study.status()["reason"] == "budget" and not study.status()["finished"]
    for t in first:
        study.tell(t, [0.5, 0.5], cost=1.0 if t.index != 2 else 2.0)
    rest = study.ask(10)
    spent = study.status()["spent"]
    assert spent + sum(2.0 if t.index == 2 else 1.0 for t in rest) <= 5.0
    for t in rest:
        study.tell(t, [0.5, 0.5], cost=1.0 if t.index != 2 else 2.0)
    assert study.ask() == [] and study.status()["reason"] == "budget" and study.status()["finished"]
    assert study.status()["spent"] <= 5.0


def _events(path):
    return len(mb.Study.load(path)._store.events())


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    t1, t2, t3 = study.ask(3)
    study.tell(t1, [0.2, 0.3], cost=1.0)
    study.fail(t2, retry=False)
    before = (study.history().to_json(date_format="iso"), study.status(), _events(tmp_path / "s"))
    bad = [(t3.id + "x", [0.1, 0.1], None), ("t999", [0.1, 0.1], None), (t3, [0.1], None), (t3, [0.1, 0.2, 0.3], None),
           (t3, [float("nan"), 0.1], None), (t3, [float("inf"), 0.1], None), (t3, [1.5, 0.1], None),
           (t3, [0.1, -0.1], None), (t3, [0.1, 0.1], -1.0), (t3, "ab", None), (t2, [0.1, 0.1], None),
           (t1, [0.3, 0.3], 1.0)]
    for ticket, values, cost in bad:
        with pytest.raises(mb.StudyError) as err:
            study.tell(ticket, values, cost)
        assert "\n" not in str(err.value) and str(err.value)
        assert (study.history().to_json(date_format="iso"), study.status(), _events(tmp_path / "s")) == before
    study.tell(t1, [0.2, 0.3], cost=1.0)  # the same values again: nothing happens
    assert (study.history().to_json(date_format="iso"), study.status(), _events(tmp_path / "s")) == before
    with pytest.raises(mb.StudyError):
        study.fail(t1)
    with pytest.raises(mb.StudyError):
        study.fail("t999")
    assert (study.history().to_json(date_format="iso"), study.status(), _events(tmp_path / "s")) == before
    hist = study.history()
    assert list(hist.columns) == ["ticket", "state", "worker", "arm", "acc", "speed", "cost", "asked", "told",
                                  "source"]
    assert hist.set_index("ticket")["state"].to_dict() == {t1.id: "told", t2.id: "abandoned", t3.id: "pending"}


def _bulk_only():
    """An identifier family's policy with no step-wise form (a plugin's, say)."""
    if "identification/test_study_bulk_only" not in mb.POLICIES:
        from mobandit_jax.types import Identifier, IdentifyResult

        mb.register_policy("identification/test_study_bulk_only", "identification",
                           lambda: Identifier(lambda *a: IdentifyResult(None, None, None)), lambda ctx: ({}, {}))


def test_fixed_confidence_study_rounds(tmp_path):
    """Naive Elimination (L = 2): a round hands out every arm once, waits at the barrier, and the study stops with
    the rule fired after two rounds, recommending the empirical Pareto set of the told means."""
    spec = _spec("naive_elimination") | {"policies": [{"name": "naive_elimination", "L": 2}]}
    study = mb.Study.create(tmp_path / "s", spec, seed=0)
    told = {}
    for _ in range(2):
        batch = study.ask(10)
        assert sorted(t.index for t in batch) == list(range(6)) and study.status()["reason"] == "pending"
        for t in batch:
            study.tell(t, MEANS[t.index].tolist())
            told[t.index] = MEANS[t.index]
    status = study.status()
    assert study.ask() == [] and status["reason"] == "finished" and status["stopped"] is True
    front = np.asarray(mb.pareto_front_mask(MEANS.astype(np.float32)))
    assert study.recommend() == [f"m{i}" for i in np.flatnonzero(front)]


def test_spec_errors_are_one_line(tmp_path):
    _bulk_only()
    cases = [({"study": {"arms": ["a", "b"]}, "policies": [{"name": "prefucb"}]}, "objectives"),
             (_spec() | {"policies": []}, "exactly one"),
             (_spec() | {"policies": [{"name": "nope"}]}, "nope"),
             (_spec("test_study_bulk_only"), "step-wise"),
             (_spec() | {"budget": {"B": -1}}, "budget.B"),
             ({**_spec(), "study": {**_spec()["study"], "lower": [0, 2]}}, "study.lower[1]")]
    for spec, word in cases:
        with pytest.raises(mb.StudyError) as err:
            mb.Study.create(tmp_path / "x", spec)
        assert word in str(err.value) and "\n" not in str(err.value)
    assert not os.path.exists(tmp_path / "x")
    mb.Study.create(tmp_path / "y", _spec(), seed=1)
    with pytest.raises(mb.StudyError, match="another study"):
        mb.Study.create(tmp_path / "y", _spec(), seed=2)
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "f.txt").write_text("x")
    with pytest.raises(mb.StudyError, match="holds no study"):
        mb.Study.create(tmp_path / "z", _spec())


def test_snapshot_load_equals_full_replay(tmp_path, monkeypatch):
    from mobandit_jax.study import study as module

    monkeypatch.setattr(module, "SNAPSHOT_EVERY", 20)
    study = mb.Study.create(tmp_path / "s", _spec(horizon=100), seed=2)
    rng = np.random.default_rng(0)
    for _ in range(50):
        (t,) = study.ask()
        study.tell(t, rng.binomial(1, MEANS[t.index]).astype(float).tolist())
    assert study._store.snapshot()[0] == max(e.seq for e in study._store.events() if e.kind == "tell"
                                             and e.ticket == "t40")  # the 40th tell
    with_snap = mb.Study.load(tmp_path / "s")
    study._store.conn.execute("DELETE FROM snapshots")
    full = mb.Study.load(tmp_path / "s")
    for a, b in zip(jax.tree_util.tree_leaves(with_snap._driver.state), jax.tree_util.tree_leaves(full._driver.state),
                    strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert with_snap.recommend() == full.recommend() and with_snap.status() == full.status()


PLUGIN = '''
import jax.numpy as jnp
import mobandit_jax as mb
from mobandit_jax.types import Policy


def build_metrics(ctx):
    return mb.MetricSet((mb.Metric("zero", "sum"),), lambda mp, a, obs: {"zero": 0.0}), None


def greedy(num_arms):
    def init(params):
        return jnp.zeros(num_arms, jnp.int32), jnp.zeros(num_arms)

    def select(key, state, params):
        n, s = state
        return jnp.where(jnp.any(n == 0), jnp.argmin(n), jnp.argmax(s / jnp.maximum(n, 1))).astype(jnp.int32)

    def update(state, action, obs, params):
        n, s = state
        return n.at[action].add(1), s.at[action].add(jnp.sum(obs.reward))

    return Policy(init, select, update)


mb.register_family("study_plugin_family", kind="online", metrics=build_metrics)
mb.register_policy("sum_greedy", "study_plugin_family", greedy, lambda ctx: (dict(num_arms=ctx.num_arms), {}))
'''


def test_plugin_family_study(tmp_path):
    """A family and policy a plugin file registers runs as a study, built through the registry."""
    (tmp_path / "plug.py").write_text(PLUGIN)
    (tmp_path / "spec.toml").write_text('[experiment]\nplugins = ["plug.py"]\n[study]\narms = ["a", "b", "c"]\n'
                                        'objectives = ["x", "y"]\nhorizon = 5\n[[policies]]\nname = "sum_greedy"\n')
    study = mb.Study.create(tmp_path / "s", str(tmp_path / "spec.toml"))
    values = {"a": [0.2, 0.2], "b": [0.9, 0.8], "c": [0.5, 0.1]}
    arms = []
    while tickets := study.ask():
        arms.append(tickets[0].arm)
        study.tell(tickets[0], values[tickets[0].arm])
    assert arms == ["a", "b", "c", "b", "b"]
    assert study.recommend() == ["b"] and mb.Study.load(tmp_path / "s").recommend() == ["b"]


def test_slate_study(tmp_path):
    spec = {"study": {"arms": [f"a{i}" for i in range(6)], "objectives": ["x", "y"], "slate": 2, "horizon": 10},
            "policies": [{"name": "thv_ucb"}]}
    study = mb.Study.create(tmp_path / "s", spec)
    batch = study.ask(3)
    assert all(len(t.slate) == 2 and t.arm == t.slate[0] for t in batch)
    assert len({a for t in batch for a in t.slate}) == 6  # unpulled arms first, pending slates counted as pulled
    with pytest.raises(mb.StudyError, match="2 rows"):
        study.tell(batch[0], [0.1, 0.2])
    for t in batch:
        study.tell(t, [[0.5, 0.2], [0.3, 0.6]])
    assert len(study.recommend()) == 2


def test_optimize_fails_and_retries_what_raises(tmp_path, capsys):
    study = mb.Study.create(tmp_path / "s", _spec(horizon=12), seed=0)
    raised = []

    def evaluate(ticket):
        if ticket.arm == "m1" and not raised:
            raised.append(ticket.id)
            raise RuntimeError("out of memory")
        return MEANS[ticket.index].tolist(), 0.5

    errors = study.optimize(evaluate, workers=2, progress=False)
    assert [(t.id, str(e)) for t, e in errors] == [(raised[0], "out of memory")]
    assert "out of memory" in capsys.readouterr().err
    status = study.status()
    assert status["told"] == 12 and status["failed"] == 1 and status["finished"] and status["spent"] == 6.0
    hist = study.history().set_index("ticket")
    assert hist.loc[raised[0], "state"] == "failed" and (hist["arm"] == "m1").sum() >= 2


def test_optimize_ctrl_c_tells_what_returned(tmp_path, capsys):
    """Ctrl-C (SIGINT) during optimize: no new tickets, the running evaluations are told, nothing left pending."""
    import signal
    import threading
    import time as clock

    study = mb.Study.create(tmp_path / "s", _spec(horizon=1000), seed=0)
    calls = []
    lock = threading.Lock()

    def evaluate(ticket):
        with lock:
            calls.append(ticket.id)
            if len(calls) == 5:
                os.kill(os.getpid(), signal.SIGINT)
        clock.sleep(0.05)
        return MEANS[ticket.index].tolist()

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, whatever the runner inherited
    try:
        study.optimize(evaluate, workers=2, progress=False)
    finally:
        signal.signal(signal.SIGINT, before)
    status = study.status()
    assert status["pending"] == 0 and status["told"] == len(calls) and 5 <= len(calls) < 20
    assert "stopped (Ctrl-C)" in capsys.readouterr().err


def test_a_batch_counts_pending_tickets_as_told_means_in_the_policys_scale(tmp_path):
    """Constant liar with bounds other than [0, 1]: each pending ticket counts as a pull of its arm's told mean as the
    policy sees it (scaled once by the bounds), checked against the policy looped in plain Python."""
    seed, scale = 2, 10.0
    study = mb.Study.create(tmp_path / "s", _spec(lower=[0.0, 0.0], upper=[scale, scale]), seed=seed)
    for _ in range(6):  # every arm told once
        (t,) = study.ask()
        study.tell(t, (scale * MEANS[t.index]).tolist())
    batch = study.ask(4)
    ctx = mb.Context.of(mb.make_env({"kind": "stochastic", "means": MEANS.tolist(), "noise": "bernoulli"}), 40,
                        np.eye(2))
    policy, params, _ = mb.make_policy("prefucb", ctx)
    select, update = jax.jit(policy.select), jax.jit(policy.update)
    key_pol = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), 0), 1)
    state, zero = policy.init(params), jnp.float32(0.0)
    for a in range(6):  # the forced first round pulls the arms in order
        state = update(state, jnp.int32(a), Observation(jnp.asarray(MEANS[a], jnp.float32), zero), params)
    picks = []
    for t in range(6, 10):
        a = int(select(jax.random.fold_in(key_pol, t), state, params))
        state = update(state, jnp.int32(a), Observation(jnp.asarray(MEANS[a], jnp.float32), zero), params)
        picks.append(a)
    assert [t.index for t in batch] == picks
