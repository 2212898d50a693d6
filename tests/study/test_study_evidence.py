"""What a study tells its user: the rule that ended it and where its budget went (re-planned phases spend what the
evaluations measured), refusals of a budget below a method's first phase in the user's units, the Pareto order by
default, consecutive ticket ids, plain numbers, "did you mean", and the command line's cost and re-open messages."""
import json

import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax.cli import main

ARMS = [f"m{i}" for i in range(6)]
MEANS = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.4, 0.4], [0.2, 0.2], [0.6, 0.3]])
COSTS = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0]


def _budgeted(name, B, replan=True):
    return {"study": {"arms": ARMS, "objectives": ["acc", "speed"]},
            "budget": {"B": B, "cost": COSTS, "replan": replan}, "policies": [{"name": name}]}


def _drive(study, seed=0, factor=(0.5, 0.7)):
    """Tell every ticket noisy values of MEANS and a cost of ``factor`` times the arm's expected cost."""
    rng = np.random.default_rng(seed)
    for _ in range(10_000):
        tickets = study.ask(50)
        if not tickets:
            break
        for t in tickets:
            study.tell(t, np.clip(MEANS[t.index] + rng.normal(0, 0.2, 2), 0, 1).tolist(),
                       cost=COSTS[t.index] * rng.uniform(*factor))
    return study.status()


@pytest.mark.parametrize("name", ["psi_sr", "copsi", "ege_sh", "uniform_alloc"])
def test_replanned_study_spends_the_budget_its_evaluations_measured(tmp_path, name):
    """Evaluations at 0.5 to 0.7 of their expected cost: re-planned at each barrier, the study spends >= 95% of B
    (at most one evaluation's cost over it), ends by its phases or the budget and says so; every arm was evaluated."""
    B = 120.0
    study = mb.Study.create(tmp_path / "s", _budgeted(name, B), seed=0)
    status = _drive(study)
    assert status["finished"] and 0.95 * B <= status["spent"] <= B + 0.7 * max(COSTS)
    assert status["ended_by"] in ("phases", "budget") and status["unevaluated"] == []
    assert status["budget_note"].startswith(f"spent {status['spent']:.6g} of 120 (")
    assert (study.arms().pulls >= 1).all()


def test_without_replanning_the_planned_phases_leave_budget_and_the_note_says_why(tmp_path):
    spent = {}
    for replan in (True, False):
        study = mb.Study.create(tmp_path / str(replan), _budgeted("psi_sr", 120.0, replan), seed=0)
        status = _drive(study)
        spent[replan] = status["spent"]
        assert status["ended_by"] == "phases"
    assert spent[False] < 0.8 * 120 <= 0.95 * 120 <= spent[True]
    assert "planned at the expected costs ([budget] replan = false)" in status["budget_note"]


def test_ended_by_names_the_horizon_the_budget_and_the_stopping_rule(tmp_path):
    spec = {"study": {"arms": ARMS, "objectives": ["acc", "speed"], "horizon": 4}, "policies": [{"name": "prefucb"}]}
    study = mb.Study.create(tmp_path / "h", spec, seed=0)
    assert study.status()["ended_by"] is None and study.status()["budget_note"] is None
    _drive(study)
    assert study.status()["ended_by"] == "horizon" and study.status()["told"] == 4
    spec = {"study": {"arms": ARMS[:4], "objectives": ["acc", "speed"]}, "budget": {"B": 3.0, "cost": 1.0},
            "policies": [{"name": "cohv_ucb"}]}
    study = mb.Study.create(tmp_path / "b", spec, seed=0)
    for t in study.ask(10):
        study.tell(t, [0.5, 0.5], cost=1.0)
    status = study.status()
    assert status["ended_by"] == "budget" and status["budget_note"] == ("spent 3 of 3 (100%); the 0 left does not "
                                                                         "pay for the next evaluation the method "
                                                                         "asked for")
    spec = {"study": {"arms": ARMS, "objectives": ["acc", "speed"]},
            "policies": [{"name": "naive_elimination", "L": 2}]}
    study = mb.Study.create(tmp_path / "c", spec, seed=0)
    for _ in range(2):
        for t in study.ask(10):
            study.tell(t, MEANS[t.index].tolist())
    assert study.status()["ended_by"] == "stopping_rule"


def test_a_study_budget_below_the_first_phase_is_refused_in_the_users_units(tmp_path):
    """Six models of 0.5 to 5 seconds, B = 60: CoPSI's first phase needs L_{K,lambda} C_1 = 75.8355 seconds."""
    lam = 0.1
    L = 1 + sum(1 / (1 + (ell - 1) * lam) for ell in range(2, 7))
    assert 75.8354 < L * sum(COSTS) <= 75.8355  # shown rounded up, so that the number given is enough
    with pytest.raises(mb.StudyError) as err:
        mb.Study.create(tmp_path / "s", _budgeted("copsi", 60.0))
    assert str(err.value) == ("policy 'copsi': budget.B = 60 cost units is below the 75.8355 cost units its first "
                              "phase needs to evaluate each of the 6 arms once: give budget.B >= 75.8355")
    assert mb.Study.create(tmp_path / "ok", _budgeted("copsi", 75.8355)).status()["told"] == 0
    with pytest.raises(mb.StudyError, match=r"^policy 'psi_sr': budget\.B = 6 cost units is below the 18\.0834 cost "
                                            r"units .*give budget\.B >= 18\.0834$"):
        mb.Study.create(tmp_path / "t", _budgeted("psi_sr", 6.0))


def test_an_online_study_without_preference_takes_the_pareto_order(tmp_path):
    base = {"study": {"arms": ARMS, "objectives": ["acc", "speed"], "horizon": 12}, "policies": [{"name": "prefucb"}]}
    asked = []
    for i, spec in enumerate((base, base | {"preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}})):
        study = mb.Study.create(tmp_path / str(i), spec, seed=1)
        rng = np.random.default_rng(0)
        arms = []
        while tickets := study.ask():
            arms.append(tickets[0].arm)
            study.tell(tickets[0], np.clip(MEANS[tickets[0].index] + rng.normal(0, 0.1, 2), 0, 1).tolist())
        asked.append((arms, study.recommend()))
    assert asked[0] == asked[1] and len(asked[0][0]) == 12


def test_ticket_ids_number_the_tickets(tmp_path):
    study = mb.Study.create(tmp_path / "s", {"study": {"arms": ARMS, "objectives": ["acc", "speed"]},
                                             "policies": [{"name": "prefucb"}]}, seed=0)
    ids = []
    for _ in range(3):
        batch = study.ask(2)
        ids += [t.id for t in batch]
        for t in batch:
            study.tell(t, [0.5, 0.5])
    failed = study.ask()[0]
    study.fail(failed)
    ids += [failed.id, study.ask()[0].id]
    assert ids == [f"t{i}" for i in range(1, 9)]
    # a study written when ids numbered the events (t1 asked at event 1 and told at 2, t3 asked at event 3) keeps them
    old = mb.Study.create(tmp_path / "old", {"study": {"arms": ARMS, "objectives": ["acc", "speed"]},
                                             "policies": [{"name": "prefucb"}]}, seed=0)
    with old._store.lock():
        old._store.append(1, "ask", "t1", None, 0)
        old._store.append(2, "tell", "t1", None, 0, vals=[0.5, 0.5])
        old._store.append(3, "ask", "t3", None, 1)
    old = mb.Study.load(tmp_path / "old")
    assert [t.id for t in old.ask(2)] == ["t4", "t5"] and sorted(old.history().ticket) == ["t1", "t3", "t4", "t5"]


def test_messages_show_plain_numbers_and_did_you_mean(tmp_path):
    study = mb.Study.create(tmp_path / "s", {"study": {"arms": ARMS, "objectives": ["acc", "speed"]},
                                             "policies": [{"name": "prefucb"}]}, seed=0)
    (t,) = study.ask()
    with pytest.raises(mb.StudyError) as err:
        study.tell(t, np.array([1.5, 0.5]))
    assert str(err.value) == "ticket t1: acc = 1.5 lies outside its bounds [0.0, 1.0] (study.lower / study.upper)"
    with pytest.raises(mb.StudyError) as err:
        study.tell(t, [0.5, 0.5], cost=np.float64(-2.0))
    assert str(err.value) == "ticket t1: cost = -2.0 must be a finite number >= 0"
    cases = [({"study": {"arms": ARMS, "objectivs": ["a"]}}, "did you mean 'objectives'?"),
             ({"study": {"arms": ARMS, "objectives": ["a"]}, "budgett": {}}, "did you mean 'budget'?"),
             ({"study": {"arms": ARMS, "objectives": ["a"]}, "budget": {"B": 1, "costs": 1}}, "did you mean 'cost'?"),
             ({"study": {"arms": ARMS, "objectives": ["a"], "horizon": np.int64(0)}}, "study.horizon = 0 must")]
    for spec, words in cases:
        with pytest.raises(mb.StudyError) as err:
            mb.Study.create(tmp_path / "x", spec | {"policies": [{"name": "prefucb"}]})
        assert words in str(err.value) and "\n" not in str(err.value) and "np." not in str(err.value)


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_command_line_cost_and_reopening(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text('[study]\narms = ["a", "b", "c"]\nobjectives = ["acc", "speed"]\n[budget]\nB = 10.0\n'
                    'cost = [1.0, 2.0, 3.0]\n[[policies]]\nname = "cohv_ucb"\n')
    d = str(tmp_path / "s")
    code, out, _ = _cli(capsys, "study", "new", str(spec), d)
    assert code == 0 and out.startswith(f"study at {d}: 3 arms")
    code, out, _ = _cli(capsys, "study", "new", str(spec), d)
    assert code == 0 and out.startswith(f"opened the existing study at {d} (the same spec and seed): 0 told")
    ticket = json.loads(_cli(capsys, "study", "ask", d)[1])
    code, out, err = _cli(capsys, "study", "tell", d, ticket["id"], "--values", "0.5,0.5")
    assert code == 2 and err.count("\n") == 1 and "give --cost" in err and "--cost expected" in err
    assert _cli(capsys, "study", "tell", d, ticket["id"], "--values", "0.5,0.5", "--cost", "expected")[0] == 0
    status = json.loads(_cli(capsys, "study", "status", d)[1])
    assert status["spent"] == [1.0, 2.0, 3.0][["a", "b", "c"].index(ticket["arm"])] and status["ended_by"] is None
    code, _, err = _cli(capsys, "study", "tell", d, ticket["id"], "--values", "0.5,0.5", "--cost", "cheap")
    assert code == 2 and "--cost 'cheap' must be a number or 'expected'" in err


def test_the_papers_copsi_schedule_says_it_recommends_arms_it_never_evaluated(tmp_path, capsys):
    """CoPSI not re-planned at B = 20 (one sweep costs 15.5, its first phase needs 75.8): it runs, pulls nothing
    (every target floors to 0) and recommends all six arms; new, status, arms() and recommend say so."""
    spec = tmp_path / "spec.toml"
    spec.write_text('[study]\narms = ["m0", "m1", "m2", "m3", "m4", "m5"]\nobjectives = ["acc", "speed"]\n'
                    '[budget]\nB = 20.0\ncost = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0]\nreplan = false\n'
                    '[[policies]]\nname = "copsi"\n')
    d = str(tmp_path / "s")
    code, _, err = _cli(capsys, "study", "new", str(spec), d)
    assert code == 0 and err == ("warning: policy 'copsi': budget.B = 20 cost units is below the 75.8355 cost units "
                                 "its first phase needs to evaluate each of the 6 arms once: the paper's schedule "
                                 "runs as it is, and may recommend arms it never evaluated\n")
    study = mb.Study.load(d)
    status = study.status()
    assert study.ask() == [] and status["ended_by"] == "phases" and status["unevaluated"] == ARMS
    frame = study.arms()
    assert frame.recommended.all() and (frame.state == "unevaluated").all()
    code, out, err = _cli(capsys, "study", "recommend", d)
    assert out.split() == ARMS and err == ("warning: recommended but never evaluated (the method's rule recommends "
                                           "them unseen): m0, m1, m2, m3, m4, m5\n")
