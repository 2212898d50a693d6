"""``mb.Study``: a live ask/tell study whose state is the replay of its told events through the policy's pure steps.

A study asks which arm (configuration, model) to evaluate next, the user evaluates it and tells the values (one per
objective) and the cost back. Its events are rows of an append-only table (:mod:`.store`); its state is the policy's
``init`` followed by ``update`` of every told event in the order told (:mod:`.policy` builds the policy through the
registry), so a study is a function of its seed and its events: the same seed and the same told values make the same
asks, whether or not the study was reloaded in between. The seed plays the part of seed index 0 of a simulated run of
``seed``: the policy's randomness at round ``t`` is ``fold_in(fold_in(fold_in(PRNGKey(seed), 0), 1), t)``, as the
engine's (:mod:`mobandit_jax.engine`), so a study told the rewards a simulated run draws makes that run's choices.

Batches (``ask(n)``, or several workers):

- an online policy (a :class:`~mobandit_jax.types.Policy`) chooses a batch one ticket after another, each pending
  ticket counted as a virtual pull of its arm at the arm's current estimate (the "constant liar": its told mean, or
  the mean of every told value before the arm has one, or the middle of the bounds before anything is told);
  ticket ``j`` of a batch is chosen at round ``told + pending``;
- an identifier (through its :class:`~mobandit_jax.types.Stepwise` form) hands out the pulls its ``select`` asks for
  before its next barrier (a phase's remaining allocation in sweeps of one pull of each arm, or a round's arms) and
  waits there (reason ``"pending"``) until they are all told; ``update`` then takes them at once.

Budget: a pending ticket reserves its arm's expected cost (the arm's mean told cost, else ``[budget] cost``) and a
tell settles the actual one; a ticket is handed out only if the cost spent, the reservations and its own expected
cost (an identifier: its whole sweep's) fit in ``B``, so ``B`` is never exceeded while evaluations cost what was
expected of them (one that costs more overshoots by its excess: a live cost is known once spent). An identifier
whose next sweep cannot fit, with nothing pending, is ``short``: it does what its budget makes it do in simulation
(end the phase; halt).

Every :data:`SNAPSHOT_EVERY` tells, the online policy's state is kept beside the events (a cached snapshot, written in
the same transaction as the tell), so that a load replays the policy's ``update`` over the tells after it only.
"""
from __future__ import annotations

import json
import math
import os
import threading
import time
from typing import NamedTuple

import numpy as np

from .. import errors
from .atomic import atomic
from .errors import StudyError
from .known import check_attrs
from .spec import StudySpec, load_spec
from .storage import VERSION, is_postgres, open_storage

REASONS = ("pending", "budget", "finished")
SNAPSHOT_EVERY = 1000  # tells between snapshots of an online policy's state (a load replays the tells after the last)


class Ticket(NamedTuple):
    """One evaluation to make: ``id``, the arm's name and index, its configuration (the CSV's other columns) and, for a
    slate policy, the names of the slate's arms (``arm`` and ``index`` are then the slate's first)."""

    id: str
    arm: str
    index: int
    config: dict
    slate: list | None = None


class _Record:
    """What the replay keeps of one ticket: ``source`` is how it came (``asked``, ``enqueued``, ``added``)."""

    __slots__ = ("id", "action", "worker", "state", "values", "cost", "asked", "told", "t", "source", "attrs")

    def __init__(self, id, action, worker, asked, t, source="asked", state="pending"):
        self.id, self.action, self.worker, self.asked, self.t = id, action, worker, asked, t
        self.state, self.values, self.cost, self.told = state, None, None, None
        self.source, self.attrs = source, None


class Study:
    """A live ask/tell study (module docstring). Make one with :meth:`create` or open one with :meth:`load`."""

    # ------------------------------------------------------------------ opening

    def __init__(self, store, spec: StudySpec, seed: int):
        from .policy import build

        self._store, self.spec, self.seed = store, spec, int(seed)
        self.existed = True  # an opened study (Study.create sets whether it found one)
        self.path = store.address
        self._built = build(spec)
        self._lock = threading.RLock()
        self._driver = _make_driver(self._built, spec, self.seed)
        self._seen = 0
        self._tickets: dict = {}
        self._pending: list = []  # ticket ids in ask order
        self._queue: list = []  # enqueued ticket ids not yet handed out, in enqueue order
        self._spent = 0.0
        self._cost_n = np.zeros(len(spec.arms))
        self._cost_sum = np.zeros(len(spec.arms))
        self._told = self._failed = 0
        snap = store.snapshot() if hasattr(self._driver, "restore") else None
        self._snap = snap
        self._sync()
        self._snap = None

    @classmethod
    def create(cls, path, spec, *, seed: int = 0, storage=None) -> Study:
        """Create a study at ``path`` (a folder, or a ``postgresql://`` address).

        Args:
          path: where its events are kept (``DIR/study.db``); None when ``storage`` is given.
          spec: a TOML path or a dict (:mod:`.spec`).
          seed: the seed of the policy's randomness.
          storage: a backend instance (:mod:`.storage.base`) or an address, in place of ``path``.

        Returns:
          The new :class:`Study`. An existing study of the same spec and seed is opened as it is (its ``existed`` is
          then True); any other existing study or a non-empty folder that holds none is refused.
        """
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise StudyError(f"seed = {errors.plain(seed)!r} must be a whole number >= 0")
        parsed = load_spec(spec)
        plain = json.dumps(parsed.plain, sort_keys=True)
        path = path if storage is None else storage
        if isinstance(path, str | os.PathLike) and not is_postgres(path) and os.path.isdir(path) and os.listdir(path) \
                and not os.path.exists(os.path.join(path, "study.db")):
            raise StudyError(f"{str(path)!r} is a folder that holds no study; give a new or empty folder")
        cls._check(parsed)
        store = open_storage(path, create=True)
        with store.lock():
            meta = store.meta()
            if not meta:
                store.set_meta({"spec": plain, "seed": str(seed), "version": VERSION})
        if meta and (meta.get("spec") != plain or meta.get("seed") != str(seed)):
            store.close()
            raise StudyError(f"{store.address!r} holds another study (a different spec or seed); open it with "
                             "Study.load or give a new folder")
        study = cls(store, parsed, seed)
        study.existed = bool(meta)
        return study

    @staticmethod
    def _check(parsed):
        from .policy import build

        build(parsed)  # refuse a spec whose policy cannot be built before anything is written

    @classmethod
    def load(cls, path, *, storage=None) -> Study:
        """Open the study at ``path``, replaying its events.

        Args:
          path: its folder or ``postgresql://`` address; None when ``storage`` is given.
          storage: a backend instance (:mod:`.storage.base`) or an address, in place of ``path``.

        Returns:
          The :class:`Study`.
        """
        path = path if storage is None else storage
        store = open_storage(path)
        meta = store.meta()
        if "spec" not in meta:
            raise StudyError(f"{store.address!r} holds no study")
        return cls(store, load_spec(json.loads(meta["spec"])), int(meta["seed"]))

    def close(self):
        """Close the study's database connection."""
        self._store.close()

    # ------------------------------------------------------------------ replay

    def _sync(self):
        """Apply the events written since the last sync (by this process or another)."""
        for ev in self._store.events(self._seen):
            self._apply(ev)
            self._seen = ev.seq
            if self._snap is not None and ev.seq == self._snap[0]:
                self._driver.restore(self._snap[1])  # the policy state after these events, kept by a tell
        self._driver.settle(self)

    def _apply(self, ev):
        drv = self._driver
        if ev.kind == "enqueue":  # a queued ticket, handed out by the next ask (its arm owed a pull: drv.on_enqueue)
            rec = _Record(ev.ticket, ev.arm, None, ev.at, None, source="enqueued", state="queued")
            self._tickets[ev.ticket] = rec
            self._queue.append(ev.ticket)
            drv.on_enqueue(self, rec)
            return
        if ev.kind in ("ask", "add"):
            action = json.loads(ev.slate) if ev.slate is not None else ev.arm
            rec = self._tickets.get(ev.ticket)
            if rec is not None:  # an enqueued ticket handed out
                self._queue.remove(ev.ticket)
                rec.state, rec.worker, rec.asked, rec.t = "pending", ev.worker, ev.at, drv.round_of_ask(self)
            else:
                rec = _Record(ev.ticket, action, ev.worker, ev.at, drv.round_of_ask(self),
                              source="added" if ev.kind == "add" else "asked")
                self._tickets[ev.ticket] = rec
                drv.on_ask(self, rec)
            self._pending.append(ev.ticket)
            if ev.kind == "ask":
                return
        rec = self._tickets[ev.ticket]
        self._pending.remove(ev.ticket)
        if ev.kind in ("tell", "add"):
            rec.state, rec.values, rec.cost, rec.told = "told", json.loads(ev.vals), ev.cost, ev.at
            rec.attrs = None if ev.attrs is None else json.loads(ev.attrs)
            self._told += 1
            self._spent += ev.cost or 0.0
            for a in np.atleast_1d(rec.action):
                self._cost_n[a] += 1
                self._cost_sum[a] += (ev.cost or 0.0) / np.size(rec.action)
            drv.on_tell(self, rec)
        else:
            rec.state, rec.told = ("failed" if ev.kind == "fail" else "abandoned"), ev.at
            self._failed += 1
            drv.on_fail(self, rec)
        drv.settle(self)

    # ------------------------------------------------------------------ helpers

    def expected_cost(self, arm) -> float:
        """An arm's expected cost (user units): its mean told cost, else the spec's; 0 without a budget."""
        if self.spec.costs is None:
            return 0.0
        if self._cost_n[arm] > 0:
            return float(self._cost_sum[arm] / self._cost_n[arm])
        return float(self.spec.costs[arm])

    def reserved(self) -> float:
        """The expected cost of the pending and the queued tickets."""
        return sum(self.expected_cost(a) for t in self._pending + self._queue
                   for a in np.atleast_1d(self._tickets[t].action))

    def affordable(self, cost: float) -> bool:
        """Whether ``cost`` more fits in the budget, counting the pending tickets' reservations."""
        if self.spec.budget is None:
            return True
        return self._spent + self.reserved() + cost <= self.spec.budget * (1 + 1e-12)

    def _new_id(self) -> str:
        """The next ticket's id: ``t1, t2, ...`` numbering the tickets (a study written when ids numbered the events
        keeps its ids; a new one skips any of them)."""
        n = len(self._tickets) + 1
        while f"t{n}" in self._tickets:
            n += 1
        return f"t{n}"

    def _ticket(self, rec) -> Ticket:
        arms = self.spec.arms
        if isinstance(rec.action, list):
            first = rec.action[0]
            return Ticket(rec.id, arms[first], first, dict(self.spec.configs[first]), [arms[a] for a in rec.action])
        return Ticket(rec.id, arms[rec.action], int(rec.action), dict(self.spec.configs[rec.action]), None)

    def _record(self, ticket_or_id):
        tid = ticket_or_id.id if isinstance(ticket_or_id, Ticket) else ticket_or_id
        if not isinstance(tid, str) or tid not in self._tickets:
            raise StudyError(f"unknown ticket {tid!r}: tell or fail a ticket that ask returned")
        return self._tickets[tid]

    # ------------------------------------------------------------------ the public calls

    @atomic
    def ask(self, n: int = 1, worker: str | None = None) -> list:
        """Up to ``n`` tickets to evaluate: the worker's own unanswered ones first, then new ones.

        Args:
          n: how many.
          worker: a name for the caller (its unanswered tickets are handed back to it first).

        Returns:
          A list of :class:`Ticket`; fewer than ``n`` only with a reason in ``status()["reason"]``.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise StudyError(f"n = {errors.plain(n)!r} must be a whole number >= 0")
        if worker is not None and not isinstance(worker, str):
            raise StudyError(f"worker = {worker!r} must be a string")
        with self._lock, self._store.lock():
            self._sync()
            out = []
            if worker is not None:
                out = [self._ticket(self._tickets[t]) for t in self._pending if self._tickets[t].worker == worker][:n]
            while len(out) < n:
                if self._queue and self._driver.queue_open(self):  # an enqueued arm goes before the policy chooses
                    tid = self._queue[0]
                    action = self._tickets[tid].action
                else:
                    tid, action = self._new_id(), self._driver.next_action(self)
                if action is None:
                    break
                arm = action[0] if isinstance(action, list) else action
                ev = self._store.append(self._seen + 1, "ask", tid, worker, arm,
                                        slate=action if isinstance(action, list) else None)
                self._apply(ev)
                self._seen = ev.seq
                out.append(self._ticket(self._tickets[ev.ticket]))
            return out

    def _values(self, rec, values) -> list:
        spec = self.spec
        d = len(spec.objectives)
        rows = len(rec.action) if isinstance(rec.action, list) else 0
        try:
            arr = np.asarray(values, float)
        except (TypeError, ValueError):
            raise StudyError(f"values = {errors.plain(values)!r} must be numbers, one per objective "
                             f"{spec.objectives}") from None
        want = (rows, d) if rows else (d,)
        if arr.shape != want:
            what = f"{rows} rows (one per arm of the slate) of {d}" if rows else f"{d}"
            raise StudyError(f"ticket {rec.id}: values has shape {list(arr.shape)}; give {what} values, one per "
                             f"objective {spec.objectives}")
        if not np.all(np.isfinite(arr)):
            raise StudyError(f"ticket {rec.id}: values {arr.tolist()} must be finite numbers (no NaN or infinity); "
                             "fail the ticket if the evaluation failed")
        if spec.lower is not None:
            lo, up = np.asarray(spec.lower), np.asarray(spec.upper)
            bad = np.argwhere((arr < lo) | (arr > up))
            if len(bad):
                j = int(bad[0][-1])
                value = arr.reshape(-1, d)[bad[0][0] if rows else 0, j]
                raise StudyError(f"ticket {rec.id}: {spec.objectives[j]} = {errors.plain(value)!r} "
                                 f"lies outside its bounds [{lo[j]}, {up[j]}] (study.lower / study.upper)")
        return arr.tolist()

    @staticmethod
    def _cost(rec, cost) -> float | None:
        if cost is not None:
            if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost) or cost < 0:
                raise StudyError(f"ticket {rec.id}: cost = {errors.plain(cost)!r} must be a finite number >= 0")
            cost = float(cost)
        return cost

    @atomic
    def tell(self, ticket_or_id, values, cost: float | None = None, attrs: dict | None = None):
        """Tell a ticket's values (one per objective; a slate: one row per arm) and its cost.

        Args:
          ticket_or_id: a :class:`Ticket` or its id.
          values: the evaluation's values.
          cost: what it cost, in the budget's units. None charges the arm's expected cost (its mean told cost, else
            the spec's): give the measured cost where you have it (``mobandit study tell`` requires ``--cost`` in a
            budgeted study; ``--cost expected`` charges the expected one).
          attrs: the ticket's attributes (a JSON object: the prompt set, the GPU, a run id), shown by :meth:`history`.

        A bad ticket, value, cost or attrs raises :class:`StudyError` in one line and writes nothing; telling a told
        ticket the same values again does nothing.
        """
        with self._lock, self._store.lock():
            self._sync()
            rec = self._record(ticket_or_id)
            vals = self._values(rec, values)
            cost = self._cost(rec, cost)
            attrs = check_attrs(attrs, f"ticket {rec.id}")
            if rec.state == "told":
                if rec.values == vals and (cost is None or cost == rec.cost):
                    return
                raise StudyError(f"ticket {rec.id} was told already with values {rec.values}; a ticket is told once")
            if rec.state == "queued":
                raise StudyError(f"ticket {rec.id} is enqueued and not handed out yet; tell it once ask returned it")
            if rec.state != "pending":
                raise StudyError(f"ticket {rec.id} was {'abandoned' if rec.state == 'abandoned' else 'failed'}; "
                                 "it cannot be told" + ("" if rec.state == "abandoned"
                                                        else " (its arm is asked again under a new ticket)"))
            if cost is None:
                cost = sum(self.expected_cost(a) for a in np.atleast_1d(rec.action)) if self.spec.costs else None
            self._write_told("tell", rec.id, rec.worker, np.atleast_1d(rec.action)[0], vals, cost, attrs)

    def _write_told(self, kind, tid, worker, arm, vals, cost, attrs):
        """Append and apply a ``tell`` or ``add`` event (inside the storage step), keeping a snapshot every
        :data:`SNAPSHOT_EVERY` tells."""
        ev = self._store.append(self._seen + 1, kind, tid, worker, arm, vals=vals, cost=cost, attrs=attrs)
        self._apply(ev)
        self._seen = ev.seq
        if self._told % SNAPSHOT_EVERY == 0 and hasattr(self._driver, "snapshot"):
            self._store.put_snapshot(ev.seq, self._driver.snapshot())

    # ------------------------------------------------------------------ starting from what is known

    @atomic
    def enqueue(self, arm: str) -> str:
        """Have ``arm`` evaluated before the policy chooses: the next :meth:`ask` (of any worker) hands it out once.

        An online policy counts it as a pull of the round it is asked at; an identifier takes it only where its phase
        (fixed budget) or round (fixed confidence) still owes the arm a pull (:mod:`.known`).

        Args:
          arm: the arm's name.

        Returns:
          The id of its ticket (``history()`` shows it ``queued`` until asked). A refusal is one :class:`StudyError`
          line and writes nothing.
        """
        from .known import enqueue

        with self._lock, self._store.lock():
            self._sync()
            return enqueue(self, arm)

    def add(self, arm: str, values, cost: float | None = None, attrs: dict | None = None) -> str:
        """Add a finished evaluation made elsewhere (last week's run, a leaderboard): told as an evaluation of ``arm``.

        An online policy counts it as a pull; an identifier takes it only where its phase or round still owes the arm
        a pull, and refuses it otherwise, naming the arm, the phase and its allocation (:mod:`.known`).

        Args:
          arm: the arm's name.
          values: one number per objective.
          cost: what it cost (None: the arm's expected cost, in a budgeted study).
          attrs: its attributes, a JSON object.

        Returns:
          The id of its ticket. A refusal is one :class:`StudyError` line and writes nothing.
        """
        return self.add_rows([dict(arm=arm, values=values, cost=cost, attrs=attrs)])[0]

    def add_csv(self, path, *, arm_column: str = "arm", cost_column: str = "cost") -> list:
        """Add the evaluations of a CSV file in one step: all rows, or (one refused) none.

        Args:
          path: the file: a column ``arm_column`` with the arm's name, one column per objective, optionally
            ``cost_column``; every other column goes into the ticket's attributes (numbers as numbers).
          arm_column: the arms' column.
          cost_column: the costs' column, if the file has it.

        Returns:
          The new tickets' ids, in the file's order.
        """
        from .spec import read_evaluations

        rows = read_evaluations(path, self.spec.objectives, arm_column, cost_column)
        return self.add_rows(rows, where=repr(str(path)))

    @atomic
    def add_rows(self, rows: list, where: str | None = None) -> list:
        """Add finished evaluations (dicts of ``arm``, ``values``, ``cost``, ``attrs``) in one storage step.

        Args:
          rows: the evaluations, in order.
          where: the file they came from, named in messages with the row's number.

        Returns:
          The new tickets' ids. A refused row is one :class:`StudyError` line naming it, and nothing is written.
        """
        from .known import add_rows

        return add_rows(self, rows, where)

    @atomic
    def fail(self, ticket_or_id, retry: bool = True):
        """Mark a pending ticket failed: its arm may be asked again (``retry``), or it is abandoned.

        Args:
          ticket_or_id: a :class:`Ticket` or its id.
          retry: False abandons it (never counted as an observation).
        """
        with self._lock, self._store.lock():
            self._sync()
            rec = self._record(ticket_or_id)
            if rec.state != "pending":
                raise StudyError(f"ticket {rec.id} is {rec.state}, not pending; only a pending ticket can fail")
            ev = self._store.append(self._seen + 1, "fail" if retry else "abandon", rec.id, rec.worker,
                                    np.atleast_1d(rec.action)[0])
            self._apply(ev)
            self._seen = ev.seq

    def recommend(self) -> list:
        """The recommended set of arms, by name (the family's reading of the current state)."""
        with self._lock:
            self._sync()
            mask = np.asarray(self._driver.recommend(self))
            return [a for a, m in zip(self.spec.arms, mask, strict=True) if m]

    def arms(self):
        """One row per arm (a pandas DataFrame): what was told of it and where it stands.

        Columns: ``arm``; ``pulls`` (values told); for each objective ``NAME``, ``NAME_low`` and ``NAME_high``: the
        mean of the told values and its 95% Student t interval (``mean -/+ t_{0.975, n - 1} s / sqrt(n)``, ``s`` the
        sample standard deviation of the ``n`` told values; NaN bounds with one value, NaN mean with none), in the
        user's units; ``cost``: the mean told cost (a slate's cost shared equally by its arms; NaN if none was told);
        ``recommended`` (the arms of :meth:`recommend`); ``state``: ``accepted``, ``rejected`` or ``active`` (an
        identifier's sets; an online policy's arms are active) or ``unevaluated`` (never told a value, even where the
        method's rule recommends it).

        Returns:
          The DataFrame, in the spec's arm order.
        """
        import pandas as pd
        from scipy import stats

        from .drivers import ArmState

        with self._lock:
            self._sync()
            K, d = len(self.spec.arms), len(self.spec.objectives)
            values, costs = [[] for _ in range(K)], [[] for _ in range(K)]
            for rec in self._tickets.values():
                if rec.state != "told":
                    continue
                arms = np.atleast_1d(rec.action)
                rows = np.reshape(np.asarray(rec.values, float), (len(arms), d))
                for a, row in zip(arms, rows, strict=True):
                    values[a].append(row)
                    if rec.cost is not None:
                        costs[a].append(rec.cost / len(arms))
            recommended = np.asarray(self._driver.recommend(self), bool)
            states = self._driver.arm_states(recommended)
        out = []
        for i, name in enumerate(self.spec.arms):
            v = np.reshape(np.asarray(values[i], float), (-1, d))
            n = len(v)
            mean = v.mean(0) if n else np.full(d, np.nan)
            half = (stats.t.ppf(0.975, n - 1) * v.std(0, ddof=1) / np.sqrt(n)) if n > 1 else np.full(d, np.nan)
            row = dict(arm=name, pulls=n)
            for j, o in enumerate(self.spec.objectives):
                row[o], row[f"{o}_low"], row[f"{o}_high"] = mean[j], mean[j] - half[j], mean[j] + half[j]
            row["cost"] = float(np.mean(costs[i])) if costs[i] else np.nan
            row["recommended"] = bool(recommended[i])
            row["state"] = str(ArmState.UNEVALUATED if n == 0 else states[i])
            out.append(row)
        cols = ["arm", "pulls", *[c for o in self.spec.objectives for c in (o, f"{o}_low", f"{o}_high")], "cost",
                "recommended", "state"]
        return pd.DataFrame(out, columns=cols)

    def status(self) -> dict:
        """Where the study stands, as plain data (what ``mobandit study status`` prints as JSON).

        Returns:
          A dict: ``told``, ``pending``, ``queued`` (enqueued, not handed out yet), ``failed`` (failed or abandoned
          tickets), ``spent``, ``budget``,
          ``finished``, ``reason`` (why ``ask`` would hand out nothing now: ``"pending"``, ``"budget"``,
          ``"finished"``, or None), ``ended_by`` (the rule that ended it: ``"phases"``, an identifier's schedule
          complete; ``"horizon"``; ``"stopping_rule"``; ``"budget"``; None while it runs), ``budget_note`` (with a
          budget: what was spent of ``B`` and why the rest was not; else None), ``unevaluated`` (recommended arms never
          told a value: the method's rule recommends them unseen) and, for a fixed-confidence method, ``stopped``
          (its stopping rule fired).
        """
        with self._lock:
            self._sync()
            reason = self._driver.reason(self)
            ended = self._driver.ended_by(self)
            out = dict(told=self._told, pending=len(self._pending), queued=len(self._queue), failed=self._failed,
                       spent=self._spent,
                       budget=self.spec.budget, finished=reason in ("budget", "finished") and not self._pending,
                       reason=reason, ended_by=None if ended is None else str(ended),
                       budget_note=self._budget_note(ended), unevaluated=self._unevaluated())
            stopped = self._driver.confident(self)
            if stopped is not None:
                out["stopped"] = stopped
            return out

    def _unevaluated(self) -> list:
        """The recommended arms never told a value."""
        told = np.zeros(len(self.spec.arms), bool)
        for rec in self._tickets.values():
            if rec.state == "told":
                told[np.atleast_1d(rec.action)] = True
        mask = np.asarray(self._driver.recommend(self), bool) & ~told
        return [a for a, m in zip(self.spec.arms, mask, strict=True) if m]

    def _budget_note(self, ended) -> str | None:
        """What was spent of ``B`` and why the rest was not (None without a budget)."""
        from .drivers import EndedBy

        B = self.spec.budget
        if B is None:
            return None
        left = B - self._spent
        head = f"spent {_plain(self._spent)} of {_plain(B)} ({_plain(100 * self._spent / B, 3)}%)"
        if left < 0:
            head += f", {_plain(-left)} over B (told costs above the expected ones)"
            left = 0.0
        if ended is None:
            return f"{head}; running"
        if ended == EndedBy.BUDGET:
            return f"{head}; the {_plain(left)} left does not pay for the next evaluation the method asked for"
        if ended == EndedBy.PHASES:
            why = ("its phases were re-planned at each barrier from the measured costs" if self.spec.replan
                   else "its phases were planned at the expected costs ([budget] replan = false)")
            return f"{head}; the schedule is complete with {_plain(left)} left: {why}"
        rule = "the horizon" if ended == EndedBy.HORIZON else "the stopping rule"
        return f"{head}; {rule} ended it with {_plain(left)} left"

    def history(self):
        """One row per ticket (a pandas DataFrame): ``ticket``, ``state`` (``queued``, ``pending``, ``told``,
        ``failed``, ``abandoned``), ``worker``, ``arm``, one column per objective, ``cost``, ``asked`` and ``told``
        (UTC times), ``source`` (``asked``; ``enqueued``; ``added``: a finished evaluation added), then one column
        ``attrs.KEY`` per attribute told with any ticket (empty where a ticket has none)."""
        import pandas as pd

        with self._lock:
            self._sync()
            rows = []
            for rec in self._tickets.values():
                t = self._ticket(rec)
                row = dict(ticket=rec.id, state=rec.state, worker=rec.worker,
                           arm=t.arm if t.slate is None else ",".join(t.slate))
                vals = rec.values
                for j, o in enumerate(self.spec.objectives):
                    row[o] = (None if vals is None else vals[j] if t.slate is None
                              else json.dumps([r[j] for r in vals]))
                row["cost"], row["asked"], row["told"], row["source"] = rec.cost, rec.asked, rec.told, rec.source
                row.update({f"attrs.{k}": v for k, v in (rec.attrs or {}).items()})
                rows.append(row)
            keys = list(dict.fromkeys(k for rec in self._tickets.values() for k in (rec.attrs or {})))
            cols = ["ticket", "state", "worker", "arm", *self.spec.objectives, "cost", "asked", "told", "source",
                    *[f"attrs.{k}" for k in keys]]
            frame = pd.DataFrame(rows, columns=cols)
            for c in ("asked", "told"):
                frame[c] = pd.to_datetime(frame[c], unit="s", utc=True)
            return frame

    def plot(self):
        """The study's figure as it stands now (:func:`.plot.plot`): estimated means with their intervals, the arms'
        states, the budget spent over time and the evaluations per arm.

        Returns:
          A matplotlib Figure.
        """
        from . import plot

        return plot.plot(self)

    def optimize(self, evaluate, *, workers: int | None = None, executor=None, timeout: float | None = None,
                 max_evals: int | None = None, progress: bool = True) -> list:
        """Evaluate tickets with ``evaluate(ticket) -> values`` or ``-> (values, cost)`` until the study is finished,
        ``timeout`` seconds have passed or ``max_evals`` were told: :func:`.optimize.optimize` (its arguments).

        Returns:
          The list of ``(ticket, exception)`` of the evaluations that raised or outlived ``timeout``.
        """
        from .optimize import optimize

        return optimize(self, evaluate, workers=workers, executor=executor, timeout=timeout, max_evals=max_evals,
                        progress=progress)


def _make_driver(built, spec, seed):
    from ..registry import IDENTIFIER

    if built.family.kind == IDENTIFIER:
        from .drivers import StepwiseDriver

        return StepwiseDriver(built, spec, seed)
    from .drivers import OnlineDriver

    return OnlineDriver(built, spec, seed)


def _now() -> float:
    return time.time()


def _plain(x: float, digits: int = 6) -> str:
    """A number as the user reads it (``1.5``, never ``np.float64(1.5)``)."""
    return f"{float(x):.{digits}g}"
