"""``mb.Study``: a live ask/tell study whose state is the replay of its told events through the policy's pure steps.

A study asks which arm (configuration, model) to evaluate next, the user evaluates it and tells the values (one per
objective) and the cost back. Its events are rows of an append-only table (:mod:`.storage`); its state is the
policy's ``init`` followed by ``update`` of every told event in the order told (:mod:`.policy` builds the policy
through the registry), so a study is a function of its seed and its events: the same seed and the same told values
make the same asks, whether or not the study was reloaded in between. The seed plays the part of seed index 0 of a
simulated run of ``seed``: the policy's randomness at round ``t`` is ``fold_in(fold_in(fold_in(PRNGKey(seed), 0), 1),
t)``, as the engine's (:mod:`mobandit_jax.engine`), so a study told the rewards a simulated run draws makes that run's
choices.

The study keeps the tickets (:mod:`.tickets`) and the budget's counts; its driver (:mod:`.drivers`, the protocol in
:mod:`.drivers.base`) keeps the policy's state and decides, reading the study through a frozen
:class:`~.view.StudyView`. Batches (``ask(n)``, or several workers):

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

import contextlib
import gc
import json
import os
import threading

import numpy as np

from .. import errors
from .atomic import atomic
from .checks import check_attrs, check_cost, check_tellable, check_values
from .errors import StudyError
from .history import arms_frame, evaluated, history_frame
from .known import KNOWN_VERSION, check_add, check_enqueue
from .spec import StudySpec, load_spec
from .states import EndedBy, EndReason, TicketSource, TicketState
from .storage import VERSION, StorageError, is_postgres, open_storage
from .storage.base import raise_version
from .tickets import Ticket, TicketRecord, ticket_of
from .view import StudyView

COLLECT_AFTER = 10_000  # events a replay applies before it runs the garbage collector once (see _replay)
SNAPSHOT_EVERY = 1000  # tells between snapshots of an online policy's state (a load replays the tells after the last)

__all__ = ["SNAPSHOT_EVERY", "Study", "Ticket"]


class Study:
    """A live ask/tell study (module docstring). Make one with :meth:`create` or open one with :meth:`load`.

    Args:
      store: its opened storage backend (:class:`~.storage.base.Storage`).
      spec: its :class:`~.spec.StudySpec`.
      seed: the seed of its policy's randomness.
    """

    # ------------------------------------------------------------------ opening

    def __init__(self, store, spec: StudySpec, seed: int):
        from .policy import build

        self._store, self.spec, self.seed = store, spec, int(seed)
        self.existed = True  # an opened study (Study.create sets whether it found one)
        self.path = store.address
        self._built = build(spec)
        self._lock = threading.RLock()
        self._replay()

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

    def close(self) -> None:
        """Close the study's storage (its database connection).

        Returns:
          None.
        """
        self._store.close()

    @property
    def built(self):
        """The policy the study drives (:class:`~.policy.Built`: its registered name, family, params, and the warnings
        its building raised, ``notes``)."""
        return self._built

    @property
    def storage(self):
        """The study's storage backend (:class:`~.storage.base.Storage`)."""
        return self._store

    def reload(self) -> None:
        """Forget what this object replayed and replay its storage from the start: what a call does by itself when
        its storage step was not kept (:mod:`.atomic`).

        Returns:
          None. Where the storage cannot be read now, the next call goes on replaying it.
        """
        with self._lock, contextlib.suppress(StorageError):
            self._replay()

    # ------------------------------------------------------------------ replay

    def _replay(self):
        """Reset the replay (a new driver) and replay every event, from the driver's latest snapshot where it keeps
        them."""
        from .drivers import make_driver

        self._driver = make_driver(self._built, self.spec, self.seed)
        self._seen = 0
        self._tickets: dict = {}  # id -> TicketRecord, in the order the tickets were made
        self._next_id = 1  # the least number a new ticket's id may take (_new_id)
        self._pending: list = []  # ticket ids in ask order
        self._queue: list = []  # enqueued ticket ids not yet handed out, in enqueue order
        self._spent = 0.0
        self._cost_n = _read_only(np.zeros(len(self.spec.arms)))  # per arm: the told costs, replaced at each tell
        self._cost_sum = _read_only(np.zeros(len(self.spec.arms)))
        self._told = self._failed = 0
        self._sync(self._store.snapshot() if self._driver.snapshots else None)
        if self._seen >= COLLECT_AFTER:  # a long history's records, collected once now rather than in a later step
            gc.collect()  # (a full collection of them took up to 200 ms, in whichever ask or tell it fell)

    def _sync(self, snapshot=None, *, again: bool = False):
        """Apply the events written since the last sync (by this process or another), then let the driver settle;
        ``snapshot``, ``(seq, data)``: the driver's state after event ``seq``, restored when the replay reaches it;
        ``again``: a sync right after another (a step's, inside the storage's lock), which settles only where it
        found events (a settle with no event since the last changes nothing)."""
        found = False
        for ev in self._store.events(self._seen):
            self._apply(ev)
            self._seen, found = ev.seq, True
            if snapshot is not None and ev.seq == snapshot[0]:
                self._driver.restore(snapshot[1])  # the policy state after these events, kept by a tell
        if found or not again:
            self._driver.settle(self._view())

    def _apply(self, ev):
        """Apply one event: the ticket's record and the counts, then the driver."""
        if ev.kind == "enqueue":  # a queued ticket, handed out by the next ask (its arm owed a pull: on_enqueue)
            rec = TicketRecord(ev.ticket, ev.arm, None, TicketState.QUEUED, TicketSource.ENQUEUED, ev.at)
            self._tickets[rec.id] = rec
            self._queue.append(rec.id)
            self._driver.on_enqueue(rec)
            return
        if ev.kind in ("ask", "add"):
            self._hand_out(ev)
            if ev.kind == "ask":
                return
        self._pending.remove(ev.ticket)
        if ev.kind in ("tell", "add"):
            self._apply_told(ev)
        else:
            state = TicketState.FAILED if ev.kind == "fail" else TicketState.ABANDONED
            rec = self._tickets[ev.ticket] = self._tickets[ev.ticket]._replace(state=state, told=ev.at)
            self._failed += 1
            self._driver.on_fail(rec)
        self._driver.settle(self._view())

    def _hand_out(self, ev):
        """An ``ask`` or ``add`` event: an enqueued ticket handed out (its pull counted when queued), or a new one."""
        rec = self._tickets.get(ev.ticket)
        if rec is not None:
            self._queue.remove(ev.ticket)
            self._tickets[ev.ticket] = rec._replace(state=TicketState.PENDING, worker=ev.worker, asked=ev.at)
        else:
            action = json.loads(ev.slate) if ev.slate is not None else ev.arm
            source = TicketSource.ADDED if ev.kind == "add" else TicketSource.ASKED
            rec = self._tickets[ev.ticket] = TicketRecord(ev.ticket, action, ev.worker, TicketState.PENDING, source,
                                                          ev.at)
            self._driver.on_ask(rec)
        self._pending.append(ev.ticket)

    def _apply_told(self, ev):
        """A ``tell`` or ``add`` event: the ticket told, its cost spent and shared by its arms."""
        rec = self._tickets[ev.ticket] = self._tickets[ev.ticket]._replace(
            state=TicketState.TOLD, values=json.loads(ev.vals), cost=ev.cost, told=ev.at,
            attrs=None if ev.attrs is None else json.loads(ev.attrs))
        self._told += 1
        self._spent += ev.cost or 0.0
        counts, sums = self._cost_n.copy(), self._cost_sum.copy()  # new arrays: the views made before keep theirs
        arms = rec.action if isinstance(rec.action, list) else [rec.action]
        for a in arms:
            counts[a] += 1
            sums[a] += (ev.cost or 0.0) / len(arms)
        self._cost_n, self._cost_sum = _read_only(counts), _read_only(sums)
        self._driver.on_tell(rec)

    def _view(self) -> StudyView:
        """What the driver reads of the study now (:class:`~.view.StudyView`)."""
        tickets = self._tickets
        return StudyView(self.spec, self._built, self._told, tuple(tickets[t] for t in self._pending),
                         tuple(tickets[t] for t in self._queue), self._spent, self._cost_n, self._cost_sum)

    @contextlib.contextmanager
    def _read(self):
        """The thread lock, with the events written since the last sync applied."""
        with self._lock:
            self._sync()
            yield

    @contextlib.contextmanager
    def _step(self):
        """One write step: the thread lock and the storage's atomic step, with every event written before applied.
        The events already committed are applied before queuing for the storage's lock, so that the step itself
        applies only those written while it queued (other writers wait on what it does inside)."""
        with self._lock:
            self._sync()
            with self._store.lock():
                self._sync(again=True)
                yield

    def _write(self, kind, tid, worker, arm, **fields):
        """Append and apply one event (inside :meth:`_step`); every :data:`SNAPSHOT_EVERY` tells, keep the driver's
        state beside it where it keeps snapshots."""
        ev = self._store.append(self._seen + 1, kind, tid, worker, arm, **fields)
        self._apply(ev)
        self._seen = ev.seq
        if kind in ("tell", "add") and self._told % SNAPSHOT_EVERY == 0 and self._driver.snapshots:
            self._store.put_snapshot(ev.seq, self._driver.snapshot())
        return ev

    def _new_id(self) -> str:
        """The next ticket's id: ``t1, t2, ...`` numbering the tickets (a study written when ids numbered the events
        keeps its ids; a new one skips any of them)."""
        n = max(self._next_id, len(self._tickets) + 1)  # every number below it was taken when it was found
        while f"t{n}" in self._tickets:
            n += 1
        self._next_id = n
        return f"t{n}"

    def _record(self, ticket_or_id) -> TicketRecord:
        tid = ticket_or_id.id if isinstance(ticket_or_id, Ticket) else ticket_or_id
        if not isinstance(tid, str) or tid not in self._tickets:
            raise StudyError(f"unknown ticket {tid!r}: tell or fail a ticket that ask returned")
        return self._tickets[tid]

    # ------------------------------------------------------------------ asking and telling

    @atomic
    def ask(self, n: int = 1, worker: str | None = None) -> list:
        """Up to ``n`` tickets to evaluate: the worker's own unanswered ones first, then the enqueued ones, then new
        ones the policy chooses.

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
        with self._step():
            out = []
            if worker is not None:
                out = [ticket_of(self.spec, self._tickets[t]) for t in self._pending
                       if self._tickets[t].worker == worker][:n]
            while len(out) < n:
                view = self._view()
                if self._queue and self._driver.queue_open(view):  # an enqueued arm goes before the policy chooses
                    tid = self._queue[0]
                    action = self._tickets[tid].action
                else:
                    tid, action = self._new_id(), self._driver.choose(view).action
                if action is None:
                    break
                arm = action[0] if isinstance(action, list) else action
                self._write("ask", tid, worker, arm, slate=action if isinstance(action, list) else None)
                out.append(ticket_of(self.spec, self._tickets[tid]))
            return out

    @atomic
    def tell(self, ticket_or_id, values, cost: float | None = None, attrs: dict | None = None) -> None:
        """Tell a ticket's values (one per objective; a slate: one row per arm) and its cost.

        Args:
          ticket_or_id: a :class:`Ticket` or its id.
          values: the evaluation's values.
          cost: what it cost, in the budget's units. None charges the arm's expected cost (its mean told cost, else
            the spec's): give the measured cost where you have it (``mobandit study tell`` requires ``--cost`` in a
            budgeted study; ``--cost expected`` charges the expected one).
          attrs: the ticket's attributes (a JSON object: the prompt set, the GPU, a run id), shown by :meth:`history`.

        Returns:
          None. A bad ticket, value, cost or attrs raises :class:`StudyError` in one line and writes nothing; telling
          a told ticket the same values again does nothing.
        """
        with self._step():
            rec = self._record(ticket_or_id)
            vals = check_values(self.spec, f"ticket {rec.id}", rec.action, values)
            cost = check_cost(f"ticket {rec.id}", cost)
            attrs = check_attrs(attrs, f"ticket {rec.id}")
            if not check_tellable(rec, vals, cost):
                return
            if cost is None and self.spec.costs:
                view = self._view()
                cost = sum(view.expected_cost(a) for a in np.atleast_1d(rec.action))
            self._write("tell", rec.id, rec.worker, np.atleast_1d(rec.action)[0], vals=vals, cost=cost, attrs=attrs)

    @atomic
    def fail(self, ticket_or_id, retry: bool = True) -> None:
        """Mark a pending ticket failed: its arm may be asked again (``retry``), or it is abandoned.

        Args:
          ticket_or_id: a :class:`Ticket` or its id.
          retry: False abandons it (never counted as an observation).

        Returns:
          None. A ticket that is not pending is refused in one :class:`StudyError` line.
        """
        with self._step():
            rec = self._record(ticket_or_id)
            if rec.state != TicketState.PENDING:
                raise StudyError(f"ticket {rec.id} is {rec.state}, not pending; only a pending ticket can fail")
            self._write("fail" if retry else "abandon", rec.id, rec.worker, np.atleast_1d(rec.action)[0])

    def ticket(self, ticket_id: str) -> Ticket:
        """The ticket of an id.

        Args:
          ticket_id: the id (``t3``).

        Returns:
          Its :class:`Ticket`; an unknown id is one :class:`StudyError` line.
        """
        with self._read():
            return ticket_of(self.spec, self._record(ticket_id))

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
        with self._step():
            index = check_enqueue(self._view(), self._driver, arm)
            tid = self._new_id()
            raise_version(self._store, KNOWN_VERSION)
            self._write("enqueue", tid, None, index)
            return tid

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
          where: the file they came from, named in messages with the row's number (its header is row 1).

        Returns:
          The new tickets' ids. A refused row is one :class:`StudyError` line naming it, and nothing is written.
        """
        ids = []
        try:
            with self._step():
                for i, row in enumerate(rows):
                    tid = self._new_id()
                    try:
                        known = check_add(self._view(), self._driver, row, tid)
                    except StudyError as err:
                        raise StudyError(f"{where} row {i + 2}: {err}" if where else str(err)) from None
                    raise_version(self._store, KNOWN_VERSION)
                    self._write("add", tid, None, known.index, vals=known.values, cost=known.cost, attrs=known.attrs)
                    ids.append(tid)
            return ids
        except StudyError as err:
            if ids and not isinstance(err, StorageError):
                self.reload()  # the rows before the refused one were applied in memory, never written
            raise

    # ------------------------------------------------------------------ reading

    def recommend(self) -> list:
        """The recommended set of arms (the family's reading of the current state).

        Returns:
          The arms' names, in the spec's order.
        """
        with self._read():
            mask = np.asarray(self._driver.recommend())
            return [a for a, m in zip(self.spec.arms, mask, strict=True) if m]

    def arms(self):
        """One row per arm (a pandas DataFrame): what was told of it and where it stands
        (:func:`.history.arms_frame`: pulls, each objective's mean and 95% interval, cost, ``recommended`` and
        ``state``, one of ``accepted``, ``rejected``, ``active`` or ``unevaluated``).

        Returns:
          The DataFrame, in the spec's arm order.
        """
        with self._read():
            records = list(self._tickets.values())
            recommended = np.asarray(self._driver.recommend(), bool)
            states = self._driver.arm_states(recommended)
        return arms_frame(self.spec, records, recommended, states)

    def history(self):
        """One row per ticket (a pandas DataFrame, :func:`.history.history_frame`): ``ticket``, ``state``
        (``queued``, ``pending``, ``told``, ``failed``, ``abandoned``), ``worker``, ``arm``, one column per
        objective, ``cost``, ``asked`` and ``told`` (UTC times), ``source`` (``asked``; ``enqueued``; ``added``: a
        finished evaluation added), then one column ``attrs.KEY`` per attribute told with any ticket.

        Returns:
          The DataFrame, in the order the tickets were made.
        """
        with self._read():
            records = list(self._tickets.values())
        return history_frame(self.spec, records)

    def status(self) -> dict:
        """Where the study stands, as plain data (what ``mobandit study status`` prints as JSON).

        Returns:
          A dict: ``told``, ``pending``, ``queued`` (enqueued, not handed out yet), ``failed`` (failed or abandoned
          tickets), ``spent``, ``budget``, ``finished``, ``reason`` (why ``ask`` would hand out nothing now, an
          :class:`~.states.EndReason`'s value: ``"pending"``, ``"budget"``, ``"finished"``, or None), ``ended_by``
          (the rule that ended it, an :class:`~.states.EndedBy`'s value: ``"phases"``, an identifier's schedule
          complete; ``"horizon"``; ``"stopping_rule"``; ``"budget"``; None while it runs), ``budget_note`` (with a
          budget: what was spent of ``B`` and why the rest was not; else None), ``unevaluated`` (recommended arms
          never told a value: the method's rule recommends them unseen) and, for a fixed-confidence method,
          ``stopped`` (its stopping rule fired).
        """
        with self._read():
            view = self._view()
            reason = self._driver.choose(view).reason
            ended = None if view.pending else self._driver.ended_by(view)
            out = dict(told=self._told, pending=len(view.pending), queued=len(view.queued), failed=self._failed,
                       spent=self._spent, budget=self.spec.budget,
                       finished=reason in (EndReason.BUDGET, EndReason.FINISHED) and not view.pending,
                       reason=None if reason is None else str(reason), ended_by=None if ended is None else str(ended),
                       budget_note=_budget_note(self.spec, self._spent, ended), unevaluated=self._unevaluated())
            stopped = self._driver.confident()
            if stopped is not None:
                out["stopped"] = stopped
            return out

    def _unevaluated(self) -> list:
        """The recommended arms never told a value."""
        mask = np.asarray(self._driver.recommend(), bool) & ~evaluated(self.spec, self._tickets.values())
        return [a for a, m in zip(self.spec.arms, mask, strict=True) if m]

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
        """Evaluate tickets until the study is finished, ``timeout`` seconds have passed or ``max_evals`` were told
        (:func:`.optimize.optimize`).

        Args:
          evaluate: ``evaluate(ticket) -> values`` or ``-> (values, cost)``.
          workers: evaluations in flight at once.
          executor: a :class:`concurrent.futures.Executor` to run ``evaluate`` on (default: a thread pool).
          timeout: seconds after which the loop returns, failing (retry) what still runs.
          max_evals: the most evaluations to tell.
          progress: report progress.

        Returns:
          The list of ``(ticket, exception)`` of the evaluations that raised or outlived ``timeout``.
        """
        from .optimize import optimize

        return optimize(self, evaluate, workers=workers, executor=executor, timeout=timeout, max_evals=max_evals,
                        progress=progress)


def _budget_note(spec, spent: float, ended) -> str | None:
    """What was spent of ``B`` and why the rest was not (None without a budget)."""
    B = spec.budget
    if B is None:
        return None
    left = B - spent
    head = f"spent {_plain(spent)} of {_plain(B)} ({_plain(100 * spent / B, 3)}%)"
    if left < 0:
        head += f", {_plain(-left)} over B (told costs above the expected ones)"
        left = 0.0
    if ended is None:
        return f"{head}; running"
    if ended == EndedBy.BUDGET:
        return f"{head}; the {_plain(left)} left does not pay for the next evaluation the method asked for"
    if ended == EndedBy.PHASES:
        why = ("its phases were re-planned at each barrier from the measured costs" if spec.replan
               else "its phases were planned at the expected costs ([budget] replan = false)")
        return f"{head}; the schedule is complete with {_plain(left)} left: {why}"
    rule = "the horizon" if ended == EndedBy.HORIZON else "the stopping rule"
    return f"{head}; {rule} ended it with {_plain(left)} left"


def _read_only(array: np.ndarray) -> np.ndarray:
    """``array``, made read-only (what a :class:`~.view.StudyView` is given)."""
    array.flags.writeable = False
    return array


def _plain(x: float, digits: int = 6) -> str:
    """A number as the user reads it (``1.5``, never ``np.float64(1.5)``)."""
    return f"{float(x):.{digits}g}"
