"""A study that starts from what is known: evaluations added (``study.add``, ``add_csv``), arms enqueued
(``study.enqueue``) and per-ticket attributes, for an online policy (PrefUCB, against the policy looped in plain
Python on the same pulls) and for an identifier (PSI-SR, against the bulk run on the same table)."""
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax.kernels.prefix import prefix_sums
from mobandit_jax.policies.identification import psi_sr
from mobandit_jax.types import Observation

MEANS = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.4, 0.4], [0.2, 0.2], [0.6, 0.3]])


def _spec(policy="prefucb", arms=6, **study):
    return {"study": {"arms": [f"m{i}" for i in range(arms)], "objectives": ["acc", "speed"], **study},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": policy}]}


def _write_csv(path, rows, header):
    path.write_text("\n".join([",".join(header), *[",".join(str(c) for c in r) for r in rows]]) + "\n")


def test_online_study_uses_added_and_enqueued_pulls_as_the_loop_does(tmp_path):
    """prefucb: five evaluations added from a CSV (two attribute columns), two enqueued arms handed out first and told
    with attributes; every later ask equals the policy looped in plain Python over the same pulls in the same order,
    with the engine's keys at round = pulls so far; arms() counts the added pulls; history() shows the attributes."""
    seed, T = 4, 30
    rng = np.random.default_rng(0)
    added = [(0, [0.8, 0.2]), (1, [0.1, 0.7]), (1, [0.2, 1.0]), (3, [0.4, 0.3]), (5, [0.6, 0.4])]
    _write_csv(tmp_path / "known.csv", [(f"m{a}", v[0], v[1], "a100", f"r{i}") for i, (a, v) in enumerate(added)],
               ["arm", "acc", "speed", "gpu", "run"])
    study = mb.Study.create(tmp_path / "s", _spec(horizon=T), seed=seed)
    ids = study.add_csv(tmp_path / "known.csv")
    assert ids == ["t1", "t2", "t3", "t4", "t5"]
    assert study.enqueue("m4") == "t6" and study.enqueue("m2") == "t7"
    assert study.status()["queued"] == 2 and study.history()["state"].tolist()[5:] == ["queued", "queued"]

    ctx = mb.Context.of(mb.make_env({"kind": "stochastic", "means": MEANS.tolist(), "noise": "bernoulli"}), T,
                        np.eye(2))
    policy, params, _ = mb.make_policy("prefucb", ctx)
    select, update = jax.jit(policy.select), jax.jit(policy.update)
    key_pol = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), 0), 1)
    dtype = study._driver.dtype
    state = policy.init(params)

    def pull(state, arm, values):
        return update(state, jnp.int32(arm), Observation(jnp.asarray(values, dtype), jnp.asarray(0.0, dtype)), params)

    for arm, v in added:
        state = pull(state, arm, v)
    first = study.ask(2, worker="w")
    assert [(t.id, t.arm) for t in first] == [("t6", "m4"), ("t7", "m2")]
    for t, gpu in zip(first, ["h100", "h200"], strict=True):
        v = rng.uniform(size=2).round(3).tolist()
        study.tell(t, v, attrs={"gpu": gpu, "seed": 7})
        state = pull(state, t.index, v)
    n = len(added) + 2
    while True:
        tickets = study.ask()
        if not tickets:
            break
        want = int(select(jax.random.fold_in(key_pol, n), state, params))
        assert tickets[0].index == want, n
        v = rng.binomial(1, MEANS[want]).astype(float).tolist()
        study.tell(tickets[0], v)
        state = pull(state, want, v)
        n += 1
    assert n == T and study.status()["ended_by"] == "horizon"

    arms = study.arms().set_index("arm")
    hist = study.history()
    told = hist[hist["state"] == "told"]
    assert arms["pulls"].sum() == T and arms.loc["m1", "pulls"] == np.sum(told["arm"] == "m1") >= 2
    np.testing.assert_allclose(arms.loc["m3", "acc"], told[told["arm"] == "m3"]["acc"].mean())
    assert hist["source"].tolist()[:8] == ["added"] * 5 + ["enqueued"] * 2 + ["asked"]
    assert hist["attrs.gpu"].tolist()[:7] == ["a100"] * 5 + ["h100", "h200"]
    assert hist["attrs.run"].tolist()[:5] == ["r0", "r1", "r2", "r3", "r4"] and hist["attrs.seed"].tolist()[5] == 7
    assert hist["attrs.gpu"].isna().tolist()[7:] == [True] * (T - 7)
    with pytest.raises(mb.StudyError, match="horizon of 30 evaluations is reached"):
        study.add("m0", [0.5, 0.5])
    reloaded = mb.Study.load(tmp_path / "s")  # the replay of the events gives the same study
    assert reloaded.history().drop(columns=["asked", "told"]).equals(hist.drop(columns=["asked", "told"]))
    assert reloaded.recommend() == study.recommend()


def test_enqueued_arm_is_handed_out_once_across_processes(tmp_path):
    """An enqueued arm is an event: a second process sees it and hands it out; the first then does not."""
    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    tid = study.enqueue("m3")
    code = ("import mobandit_jax as mb, json, sys; s = mb.Study.load(sys.argv[1]); "
            "print(json.dumps([t.id for t in s.ask(worker='other')]))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s")], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [tid]
    (mine,) = study.ask()
    assert mine.id != tid and study.status()["queued"] == 0
    assert study.history().set_index("ticket").loc[tid, ["state", "worker", "arm"]].tolist() == ["pending", "other",
                                                                                                    "m3"]


@pytest.mark.parametrize("bad, word", [
    (dict(arm="m9", values=[0.5, 0.5]), "unknown arm 'm9'"),
    (dict(arm="m1", values=[0.5]), "values has shape [1]"),
    (dict(arm="m1", values=[0.5, 1.5]), "outside its bounds"),
    (dict(arm="m1", values=[0.5, 0.5], attrs={"x": {1, 2}}), "is not JSON"),
    (dict(arm="m1", values=[0.5, 0.5], attrs=[1, 2]), "must be a JSON object"),
    (dict(arm="m1", values=[0.5, 0.5], cost=-1.0), "cost = -1.0"),
])
def test_bad_add_is_one_line_and_writes_nothing(tmp_path, bad, word):
    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    study.add("m0", [0.5, 0.5])
    before = len(study._store.events())
    with pytest.raises(mb.StudyError) as err:
        study.add(**bad)
    assert word in str(err.value) and "\n" not in str(err.value)
    assert len(study._store.events()) == before and study.status()["told"] == 1
    with pytest.raises(mb.StudyError, match="is not JSON"):
        study.tell(study.ask()[0], [0.5, 0.5], attrs={"bad": float("nan")})
    with pytest.raises(mb.StudyError, match=r"unknown arm 'm10' \(did you mean 'm1'\?\)"):
        study.enqueue("m10")
    assert len(study._store.events()) == before + 1  # the ask only


def _table(K=6, n=64, seed=5):
    rng = np.random.default_rng(seed)
    return rng.binomial(1, MEANS[:, None, :].repeat(n, 1)).astype(float)


def _psi_spec(costs, scale):
    spec = _spec("psi_sr") | {"budget": {"B": 40 * scale, "cost": (costs * scale).tolist(), "replan": False}}
    del spec["preference"]
    return spec


def test_psi_sr_takes_owed_evaluations_and_refuses_others(tmp_path):
    """psi_sr: the first phase's allocation added from a CSV (with costs) is taken, one evaluation more of an arm is
    refused naming the arm, the phase and its allocation (writing nothing, even as the last row of a CSV whose other
    rows are owed), an owed arm enqueued in phase 2 is handed out first; the study then pulls and recommends what the
    bulk run does on the same table, as a study told everything through ask/tell does."""
    K, n, scale = 6, 64, 2.0
    costs = np.array([1.0, 0.5, 0.8, 1.0, 0.6, 0.9])
    values = _table(K, n)
    table = np.concatenate([values, np.repeat(costs[:, None, None] / costs.max(), n, 1)], axis=-1)
    bulk = psi_sr(K, n, lambda key, p, jmax: prefix_sums(jnp.asarray(table, jnp.float32)), "sr", dim=2)

    probe = mb.Study.create(tmp_path / "probe", _psi_spec(costs, scale), seed=0)
    alloc = np.bincount([t.index for t in probe.ask(1000)], minlength=K)  # phase 1's allocation of each arm
    assert alloc.min() >= 1
    rows = [(f"m{a}", *values[a, j], costs[a] * scale, "leaderboard") for a in range(K) for j in range(alloc[a])]
    header = ["arm", "acc", "speed", "cost", "source_name"]
    study = mb.Study.create(tmp_path / "s", _psi_spec(costs, scale), seed=0)
    _write_csv(tmp_path / "over.csv", [rows[0], *[r for r in rows if r[0] == "m0"], rows[-1]], header)
    with pytest.raises(mb.StudyError) as err:
        study.add_csv(tmp_path / "over.csv")
    msg = str(err.value)
    assert f"row {alloc[0] + 2}:" in msg and "'m0'" in msg and "phase 1" in msg
    assert f"allocates it {alloc[0]} evaluation(s)" in msg and "\n" not in msg
    assert study._store.events() == [] and study.status()["told"] == 0

    _write_csv(tmp_path / "known.csv", rows, header)
    study.add_csv(tmp_path / "known.csv")
    pulls = alloc.copy()
    assert study.arms()["pulls"].tolist() == alloc.tolist()
    owed = int(np.flatnonzero(study._driver.need > 0)[-1])
    tid = study.enqueue(f"m{owed}")
    (t,) = study.ask()
    assert (t.id, t.index) == (tid, owed)
    tickets = [t]
    for _ in range(1000):
        for t in tickets:
            v = table[t.index, pulls[t.index]]
            study.tell(t, v[:2].tolist(), cost=float(v[2] * costs.max() * scale), attrs={"phase_seen": True})
            pulls[t.index] += 1
        tickets = study.ask(7)
        if not tickets:
            break
    result = bulk.identify(None, None, None, study._built.params)
    assert study.status()["finished"]
    np.testing.assert_array_equal(pulls, np.asarray(result.pulls))
    assert study.recommend() == [f"m{i}" for i in np.flatnonzero(np.asarray(result.recommended))]
    with pytest.raises(mb.StudyError, match="cannot enqueue 'm1': the method has ended"):
        study.enqueue("m1")


def test_command_line_add_enqueue_and_attrs(tmp_path, capsys):
    """mobandit study add --csv / ARM --values, enqueue, tell --attrs; each bad input one line, exit 2, nothing
    written."""
    from mobandit_jax.cli import main

    def run(*argv):
        code = main(["study", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    d = str(tmp_path / "s")
    mb.Study.create(d, _spec(), seed=0)
    _write_csv(tmp_path / "known.csv", [("m0", 0.5, 0.25, "p1", 3), ("m2", 0.75, 1.0, "p2", 4)],
               ["arm", "acc", "speed", "prompts", "shots"])
    code, out, _ = run("add", d, "--csv", str(tmp_path / "known.csv"))
    assert code == 0 and out.split() == ["t1", "t2"]
    assert run("add", d, "m1", "--values", "0.1,0.2", "--attrs", '{"run": "x9"}')[:2] == (0, "t3\n")
    code, out, _ = run("enqueue", d, "m4")
    assert code == 0 and json.loads(out) == {"id": "t4", "arm": "m4"}
    code, out, _ = run("ask", d)
    ticket = json.loads(out)
    assert (ticket["id"], ticket["arm"]) == ("t4", "m4")
    assert run("tell", d, "t4", "--values", "0.3,0.3", "--attrs", '{"gpu": "h100"}')[0] == 0
    events = len(mb.Study.load(d)._store.events())
    bads = [("add", d, "m9", "--values", "0.1,0.2"), ("add", d, "m1", "--values", "0.1"),
            ("add", d, "m1", "--values", "0.1,0.2", "--attrs", "{gpu}"), ("add", d, "m1", "--values", "0.1,0.2",
                                                                           "--attrs", "[1]"),
            ("add", d), ("add", d, "m1"), ("add", d, "--csv", str(tmp_path / "missing.csv")), ("enqueue", d, "x"),
            ("tell", d, "t4", "--values", "0.3,0.3", "--attrs", "nope")]
    for bad in bads:
        code, out, err = run(*bad)
        assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and out == "", bad
    _write_csv(tmp_path / "bad.csv", [("m0", 0.5, 0.25), ("m3", "high", 0.5)], ["arm", "acc", "speed"])
    code, _, err = run("add", d, "--csv", str(tmp_path / "bad.csv"))
    assert code == 2 and "row 3: acc = 'high' must be a number" in err
    assert len(mb.Study.load(d)._store.events()) == events
    hist = mb.Study.load(d).history().set_index("ticket")
    assert hist.loc["t1", "attrs.prompts"] == "p1" and hist.loc["t2", "attrs.shots"] == 4
    assert hist.loc["t3", "attrs.run"] == "x9" and hist.loc["t4", "attrs.gpu"] == "h100"
    assert hist["source"].tolist() == ["added", "added", "added", "enqueued"]
    code, out, _ = run("history", d)
    assert code == 0 and out.splitlines()[0].endswith("source,attrs.prompts,attrs.shots,attrs.run,attrs.gpu")


KILLED = """
import sys, mobandit_jax as mb
study = mb.Study.load(sys.argv[1])
for i in range(10_000):
    if i % 2:
        print("enqueue", study.enqueue("m%d" % (i % 6)), flush=True)
    else:
        print("add", study.add("m%d" % (i % 6), [0.25, 0.5], attrs={"i": i}), flush=True)
"""


def test_killed_writer_loses_no_acknowledged_add_or_enqueue(tmp_path):
    """A writer adding and enqueueing, killed with SIGKILL after 40 acknowledged calls: the reloaded study holds every
    acknowledged one (added: told with its attrs; enqueued: queued), and asks hand the queued arms out in order."""
    mb.Study.create(tmp_path / "s", _spec(horizon=100_000), seed=0)
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(tmp_path / "s")], stdout=subprocess.PIPE, text=True)
    acked = [proc.stdout.readline().split() for _ in range(40)]
    proc.kill()
    proc.wait()
    study = mb.Study.load(tmp_path / "s")
    hist = study.history().set_index("ticket")
    for i, (kind, tid) in enumerate(acked):
        if kind == "add":
            assert (hist.loc[tid, "state"], hist.loc[tid, "arm"], hist.loc[tid, "attrs.i"]) == ("told", f"m{i % 6}", i)
        else:
            assert (hist.loc[tid, "state"], hist.loc[tid, "arm"]) == ("queued", f"m{i % 6}")
    queued = hist.index[hist["state"] == "queued"].tolist()
    assert len(queued) >= 20 and [t.id for t in study.ask(len(queued))] == queued


def test_batched_updates_compile_once_and_match_the_serial_replay(tmp_path):
    """Batches of 1 to 40 pending tickets told by a second process (so an ask applies up to 80 observations: three
    blocks): the block function compiles once, every ask equals that of a study told the same values in its own
    process (catching up one tell at a time), and the state equals the serial replay of the told events bit for
    bit."""
    from _study_replay import assert_serial_replay

    from mobandit_jax.study.drivers import online

    spec = _spec(arms=50, horizon=10_000)
    a = mb.Study.create(tmp_path / "a", spec, seed=1)
    b = mb.Study.create(tmp_path / "b", spec, seed=1)
    rng = np.random.default_rng(2)
    for n in [1, 3, 40, 2, 33, 1, 17]:
        ta, tb = a.ask(n), b.ask(n)
        assert [t.index for t in ta] == [t.index for t in tb]
        other = mb.Study.load(tmp_path / "a")  # another process's tells: a catches up on its next ask
        for t, u in zip(ta, tb, strict=True):
            v = rng.uniform(size=2).round(3).tolist()
            other.tell(t.id, v)
            b.tell(u, v)
            b.status()  # b catches up one tell at a time
    assert [t.index for t in a.ask(40)] == [t.index for t in b.ask(40)]
    assert a._driver._advance._cache_size() == 1 and online.BLOCK == 32
    assert_serial_replay(a)


def test_a_study_with_added_evaluations_is_format_3_which_a_version_2_reader_refuses(tmp_path, monkeypatch):
    """A format-2 study.db gains format 3 with its first add (or enqueue); a package that reads format 2 at most then
    refuses it in one line instead of misreading the new events."""
    import sqlite3

    from mobandit_jax.study.storage import base
    from mobandit_jax.study.storage.base import StorageError

    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    (t,) = study.ask()
    study.tell(t, [0.5, 0.5])
    study.close()
    con = sqlite3.connect(tmp_path / "s" / "study.db")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'version'")  # as a format-2 package wrote it
    con.commit()
    study = mb.Study.load(tmp_path / "s")
    assert study._store.meta()["version"] == "2"  # reading it changes nothing
    study.add(study.spec.arms[1], [0.25, 0.75])
    study.close()
    assert con.execute("SELECT value FROM meta WHERE key = 'version'").fetchone() == ("3",)
    con.close()
    monkeypatch.setattr(base, "VERSION", "2")
    with pytest.raises(StorageError, match=r"format version 3, newer than this mobandit_jax reads \(up to 2\)"):
        mb.Study.load(tmp_path / "s")
