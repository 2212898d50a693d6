"""The driver protocol (mobandit_jax.study.drivers.base): a driver is called when the protocol says, with what it
says (an immutable ticket record or a frozen StudyView, never the study), and the view's budget arithmetic is the
hand-computed one; the words a study hands out are plain strings equal to the states' enums."""
import json

import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax.study import EndReason, TicketSource, TicketState, drivers
from mobandit_jax.study import study as study_module
from mobandit_jax.study.drivers import OnlineDriver
from mobandit_jax.study.storage.memory import MemoryStorage
from mobandit_jax.study.tickets import TicketRecord
from mobandit_jax.study.view import StudyView

ARMS = ["a", "b", "c", "d"]
COSTS = [1.0, 2.0, 4.0, 0.5]


def _spec(**extra):
    return {"study": {"arms": ARMS, "objectives": ["acc", "speed"], "horizon": 12},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}], **extra}


class Spy(OnlineDriver):
    """An online driver that writes down each protocol call: its name, the state of the record it got, the view's
    pending count, or what the study's own fields would have shown."""

    calls: list = []

    def _note(self, name, arg):
        if isinstance(arg, TicketRecord):
            self.calls.append((name, arg.id, arg.state))
        else:
            assert isinstance(arg, StudyView), f"{name} got {type(arg).__name__}, not a StudyView"
            self.calls.append((name, len(arg.pending)))

    def on_enqueue(self, rec):
        self._note("on_enqueue", rec)
        return super().on_enqueue(rec)

    def on_ask(self, rec):
        self._note("on_ask", rec)
        return super().on_ask(rec)

    def on_tell(self, rec):
        self._note("on_tell", rec)
        return super().on_tell(rec)

    def on_fail(self, rec):
        self._note("on_fail", rec)
        return super().on_fail(rec)

    def settle(self, view):
        self._note("settle", view)
        return super().settle(view)

    def choose(self, view):
        self._note("choose", view)
        return super().choose(view)

    def check_known(self, view, arm, how):
        self._note("check_known", view)
        return super().check_known(view, arm, how)

    def ended_by(self, view):
        self._note("ended_by", view)
        return super().ended_by(view)

    def snapshot(self):
        self.calls.append(("snapshot",))
        return super().snapshot()


@pytest.fixture
def spied(monkeypatch):
    monkeypatch.setattr(drivers, "make_driver", lambda built, spec, seed: Spy(built, spec, seed))
    monkeypatch.setattr(study_module, "SNAPSHOT_EVERY", 2)
    Spy.calls = []
    return Spy.calls


def test_a_driver_is_called_as_the_protocol_says(spied):
    study = mb.Study.create(None, _spec(), seed=1, storage=MemoryStorage())
    assert isinstance(study._driver, Spy) and spied == [("settle", 0)]  # the replay of nothing ends with a settle
    spied.clear()
    t1, t2 = study.ask(2)
    # every call first replays what other writers appended (here nothing), ending with a settle; then, for each
    # ticket, the policy chooses with the tickets handed out so far pending, and the ask event is replayed
    assert spied == [("settle", 0), ("choose", 0), ("on_ask", "t1", "pending"), ("choose", 1),
                     ("on_ask", "t2", "pending")]
    spied.clear()
    study.tell(t1, [0.5, 0.25])
    study.fail(t2)
    assert spied == [("settle", 2), ("on_tell", "t1", "told"), ("settle", 1),
                     ("settle", 1), ("on_fail", "t2", "failed"), ("settle", 0)]
    spied.clear()
    study.enqueue("c")
    assert spied == [("settle", 0), ("check_known", 0), ("on_enqueue", "t3", "queued")]
    spied.clear()
    (t3,) = study.ask()  # the enqueued ticket: handed out with no new on_ask (its pull was counted when queued)
    assert t3.id == "t3" and t3.arm == "c" and spied == [("settle", 0)]
    spied.clear()
    study.add("d", [0.75, 0.5])
    # the added ticket is handed out and told in one event: on_ask, on_tell, then a settle; the second tell snapshots
    assert spied == [("settle", 1), ("check_known", 1), ("on_ask", "t4", "pending"), ("on_tell", "t4", "told"),
                     ("settle", 1), ("snapshot",)]
    spied.clear()
    study.status()  # a ticket is pending: the rule that ended the study is not asked
    assert spied == [("settle", 1), ("choose", 1)]
    study.tell(t3, [0.1, 0.9])
    spied.clear()
    study.status()
    assert spied == [("settle", 0), ("choose", 0), ("ended_by", 0), ("choose", 0)]  # the online rule reads choose


def test_the_view_is_frozen_and_its_budget_is_the_hand_computed_one():
    spec = _spec(budget={"B": 20.0, "cost": COSTS})
    spec["policies"] = [{"name": "cohv_ucb"}]
    spec.pop("preference")
    study = mb.Study.create(None, spec, seed=0, storage=MemoryStorage())
    tickets = study.ask(3)
    study.tell(tickets[0], [0.5, 0.5], cost=3.0)
    view = study._view()
    told_arm = tickets[0].index
    expected = [3.0 if i == told_arm else COSTS[i] for i in range(len(ARMS))]
    assert [view.expected_cost(i) for i in range(len(ARMS))] == expected
    reserved = sum(expected[t.index] for t in tickets[1:])
    assert view.pending == tuple(study._tickets[t.id] for t in tickets[1:]) and view.reserved() == reserved
    assert view.spent == 3.0 and view.told == 1
    room = 20.0 - 3.0 - reserved
    assert view.affordable(room) and not view.affordable(room + 1e-6)
    with pytest.raises(AttributeError):
        view.spent = 0.0
    with pytest.raises(ValueError, match="read-only"):
        view.cost_sums[told_arm] = 0.0
    study.tell(tickets[1], [0.25, 0.75], cost=1.0)  # the study moves on; the view it gave keeps what it saw
    assert view.told == 1 and len(view.pending) == 2 and view.pending[0].state == TicketState.PENDING


def test_status_and_history_hand_out_plain_words():
    study = mb.Study.create(None, _spec(), seed=2, storage=MemoryStorage())
    t1, t2, t3 = study.ask(3)
    study.tell(t1, [0.5, 0.5])
    study.fail(t2, retry=False)
    study.enqueue("a")
    status = study.status()
    assert status["reason"] is None and status["ended_by"] is None
    history = study.history()
    assert history["state"].tolist() == ["told", "abandoned", "pending", "queued"]
    assert history["source"].tolist() == ["asked", "asked", "asked", "enqueued"]
    words = history["state"].tolist() + history["source"].tolist()
    assert all(type(w) is str for w in words)  # the plain words, not the enums
    assert [TicketState(w) for w in history["state"]][1] is TicketState.ABANDONED
    assert TicketSource("enqueued") == "enqueued"
    study.tell(t3, [0.5, 0.5])
    while tickets := study.ask(4):
        for t in tickets:
            study.tell(t, [0.25, 0.25])
    status = study.status()
    assert status["reason"] == EndReason.FINISHED and type(status["reason"]) is str
    assert type(status["ended_by"]) is str and json.loads(json.dumps(status))["ended_by"] == "horizon"
    assert np.all(study.history()["state"].isin(["told", "abandoned"]))
