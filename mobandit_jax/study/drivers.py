"""How a study steps its policy: an online policy one ticket at a time with constant-liar batches, an identifier
through its step-wise form between barriers (:mod:`.study` says what each does; this module holds the state).

Each driver keeps the replayed state in memory and calls the policy's functions jitted once. An online policy applies
the observations it has not applied yet (the tells of other processes since its last step, then the constant-liar
pulls of the pending tickets) in blocks of :data:`BLOCK`, one jitted call a block (:func:`make_advance`: a
``lax.scan`` of ``update`` over the block, padded, whose padding steps a ``lax.cond`` skips), so that an ask of one of
up to 16 workers costs one ``update`` call and one ``select`` call, and one shape compiles, once per process (a new
shape met under the write lock would hold every worker for its compile); a lone observation (one worker) goes through
``update`` itself, which a 32-step block would slow by about 0.3 ms."""
from __future__ import annotations

import io
from enum import StrEnum

import jax
import jax.numpy as jnp
import numpy as np

from ..types import Final, Observation
from .errors import StudyError
from .policy import fold

BLOCK = 32  # observations one call of make_advance's function applies (fewer are padded; more go in several calls)


class ArmState(StrEnum):
    """Where an arm stands in a study (``study.arms()``'s ``state``): an identifier's accepted, rejected or still
    active arm; an online policy's arms are active; an arm never told a value is unevaluated, whatever the policy."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    ACTIVE = "active"
    UNEVALUATED = "unevaluated"


class EndedBy(StrEnum):
    """Which rule ended a study (``status()["ended_by"]``): an identifier's schedule of phases completed, the horizon
    (evaluations, or a fixed-confidence method's round cap), a fixed-confidence stopping rule, or the budget."""

    PHASES = "phases"
    HORIZON = "horizon"
    STOPPING_RULE = "stopping_rule"
    BUDGET = "budget"


def _masks(state):
    """An identifier state's ``(accepted, active)`` masks (on the state or the method's state it wraps), or None."""
    for s in (state, getattr(state, "state", None)):
        if s is not None and hasattr(s, "accepted") and hasattr(s, "active"):
            return np.asarray(s.accepted, bool), np.asarray(s.active, bool)
    return None


def make_advance(update):
    """The jitted batched form of an online policy's ``update`` (module docstring).

    Args:
      update: ``update(state, action, reward, cost) -> state`` for one observation.

    Returns:
      ``advance(state, actions, rewards, costs, n_kept, n) -> (kept, final)``: the state after the first ``n`` of the
      stacked observations (the rest are padding, skipped) and, as ``kept``, after the first ``n_kept``.
    """

    def advance(state, actions, rewards, costs, n_kept, n):
        def step(carry, x):
            s, kept = carry
            i, action, reward, cost = x
            s = jax.lax.cond(i < n, lambda s: update(s, action, reward, cost), lambda s: s, s)
            kept = jax.tree_util.tree_map(lambda a, b: jnp.where(i == n_kept - 1, a, b), s, kept)
            return (s, kept), None

        steps = jnp.arange(actions.shape[0])
        (final, kept), _ = jax.lax.scan(step, (state, state), (steps, actions, rewards, costs))
        return kept, final

    return jax.jit(advance)


def _stack(obs: list, size: int, template) -> tuple:
    """``obs`` (``(action, reward, cost)`` triples) stacked and padded with copies of ``template`` to ``size``."""
    rows = obs + [template] * (size - len(obs))
    return tuple(np.stack([r[j] for r in rows]) for j in range(3))


def _keys(seed: int):
    """The policy stream of seed index 0 of a run of ``seed`` (:mod:`mobandit_jax.engine`)."""
    seed_key = jax.random.fold_in(jax.random.PRNGKey(seed), 0)
    return jax.random.fold_in(seed_key, 1)


class OnlineDriver:
    """An online :class:`~mobandit_jax.types.Policy` (one arm, or a slate, per ticket)."""

    def __init__(self, built, spec, seed: int):
        self.built, self.spec = built, spec
        policy, params = built.policy, built.params
        self.key_pol = _keys(seed)
        self._select = jax.jit(lambda key, state: policy.select(key, state, params))
        def update(state, action, reward, cost):
            return policy.update(state, action, Observation(reward, cost), params)

        self._update = jax.jit(update)  # one observation (a lone worker's step): no block to pad
        self._advance = make_advance(update)
        self._state = jax.jit(policy.init)(params)
        self._told: list = []  # told observations not yet applied to the state
        K = len(spec.arms)
        self.counts = np.zeros(K, np.int64)
        self.sums = np.zeros((K, built.dim))
        self.last = None
        self.slate = policy.slate_size > 0 or spec.slate > 0
        self.dtype = np.dtype(jax.dtypes.canonicalize_dtype(jnp.float64))

    def round_of_ask(self, study) -> int:
        return study._told + len(study._pending)

    def on_ask(self, study, rec):
        pass

    def on_enqueue(self, study, rec):
        pass

    def queue_open(self, study) -> bool:
        """Whether an enqueued arm may be handed out now: the horizon has room for it."""
        return study._told + len(study._pending) < self.spec.horizon

    def check_known(self, study, arm: int, how: str):
        """Refuse (:class:`StudyError`) an enqueued or added evaluation past the horizon; an online policy takes any
        other as a pull of its arm."""
        planned = study._told + len(study._pending) + len(study._queue)
        if planned >= self.spec.horizon:
            raise StudyError(f"cannot {how} {self.spec.arms[arm]!r}: the study's horizon of {self.spec.horizon} "
                             f"evaluations is reached ({study._told} told, {len(study._pending)} pending, "
                             f"{len(study._queue)} queued)")

    def on_fail(self, study, rec):
        pass

    def settle(self, study):
        pass

    def _obs(self, action, values, cost_total):
        arms = np.atleast_1d(action)
        reward = self.built.to_policy(np.asarray(values, float))
        cost = np.full(len(arms), (cost_total or 0.0) / len(arms) / self.built.cost_scale)
        if not self.slate:
            cost = cost[0]
        return np.asarray(action, np.int32), np.asarray(reward, self.dtype), np.asarray(cost, self.dtype)

    def _apply(self, virtual: list):
        """The state after every told event (kept: the told ones are applied once) and after ``virtual`` pulls too,
        one :func:`make_advance` call a :data:`BLOCK` of observations."""
        told, self._told = self._told, []
        obs, state = told + virtual, self._state
        if len(obs) == 1:
            state = self._update(state, *obs[0])
            if told:
                self._state = state
            return state
        for start in range(0, len(obs), BLOCK):
            block = obs[start:start + BLOCK]
            n_kept = min(max(len(told) - start, 0), len(block))
            kept, state = self._advance(state, *_stack(block, BLOCK, block[0]), n_kept, len(block))
            if start < len(told) <= start + BLOCK:  # the last told observation is in this block
                self._state = kept
        return state

    @property
    def state(self):
        """The policy state after every told event (applying those told since the last read)."""
        return self._apply([])

    def snapshot(self) -> bytes:
        """The policy state as bytes (``.npz`` of its leaves)."""
        buf = io.BytesIO()
        np.savez(buf, *[np.asarray(x) for x in jax.tree_util.tree_leaves(self.state)])
        return buf.getvalue()

    def restore(self, data: bytes) -> bool:
        """Set the policy state from :meth:`snapshot`'s bytes (with no told event pending); False if they do not fit
        this policy's state (another dtype or shape), which is then left as it is."""
        leaves, treedef = jax.tree_util.tree_flatten(self._state)
        with np.load(io.BytesIO(data)) as z:
            saved = [z[f"arr_{i}"] for i in range(len(z.files))]
        if len(saved) != len(leaves) or any(np.shape(a) != np.shape(b) or np.asarray(a).dtype != b.dtype
                                            for a, b in zip(leaves, saved, strict=False)):
            return False
        self._state = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(x) for x in saved])
        self._told = []
        return True

    def on_tell(self, study, rec):
        action, reward, cost = self._obs(rec.action, rec.values, rec.cost)
        self._told.append((action, reward, cost))
        arms = np.atleast_1d(rec.action)
        self.counts[arms] += 1
        self.sums[arms] += np.reshape(np.asarray(reward), (len(arms), -1))
        self.last = rec.action

    def _liar(self, arm) -> np.ndarray:
        """The arm's current estimate in the policy's space (module docstring of :mod:`.study`)."""
        if self.counts[arm] > 0:
            return self.sums[arm] / self.counts[arm]
        if self.counts.sum() > 0:
            return self.sums.sum(0) / self.counts.sum()
        return np.full(self.built.dim, 0.5 if self.spec.noise is None else 0.0)

    def _virtual(self, study):
        """The state after the told events and a constant-liar pull of each pending ticket (one batched call)."""
        virtual = []
        for tid in study._pending:
            rec = study._tickets[tid]
            arms = np.atleast_1d(rec.action)
            est = np.stack([self._liar(a) for a in arms])
            cost = sum(study.expected_cost(a) for a in arms)
            virtual.append(self._obs(rec.action, est if self.slate else est[0], cost))
        return self._apply(virtual)

    def _choose(self, study):
        told, pending = study._told, len(study._pending)
        if told >= self.spec.horizon:
            return None, "finished"
        if told + pending >= self.spec.horizon:
            return None, "pending"
        state = self._virtual(study)
        action = np.asarray(self._select(fold(self.key_pol, told + pending), state))
        action = [int(a) for a in action] if action.ndim else int(action)
        cost = sum(study.expected_cost(a) for a in np.atleast_1d(action))
        if not study.affordable(cost):
            return None, "budget"
        return action, None

    def next_action(self, study):
        return self._choose(study)[0]

    def reason(self, study):
        return self._choose(study)[1]

    def recommend(self, study):
        means = self.sums / np.maximum(self.counts, 1)[:, None]
        last = np.asarray(self.last if self.last is not None else 0, np.int32)
        final = Final(self.state, jnp.asarray(last), jnp.asarray(self.counts, jnp.int32),
                      jnp.asarray(means, self.dtype))
        if self.last is None and self.slate:
            return np.zeros(len(self.spec.arms), bool)
        return self.built.family.recommended(final, self.built.ctx)

    def confident(self, study):
        return None

    def ended_by(self, study):
        """The :class:`EndedBy` rule that ended the study, or None while it runs."""
        if study._pending:
            return None
        return {"finished": EndedBy.HORIZON, "budget": EndedBy.BUDGET}.get(self.reason(study))

    def arm_states(self, recommended) -> list:
        """Every arm is active for an online policy (:class:`ArmState`)."""
        return [ArmState.ACTIVE] * len(self.spec.arms)


class StepwiseDriver:
    """An identifier's :class:`~mobandit_jax.types.Stepwise` form, between barriers."""

    def __init__(self, built, spec, seed: int):
        from ..policies.identification import schedule_of

        self.built, self.spec = built, spec
        step, self.params = built.policy.stepwise, built.params
        self.step = step
        self.key_pol = _keys(seed)
        self._select = jax.jit(step.select)
        self._update = jax.jit(step.update)
        self._short = jax.jit(step.short)
        self._stopped = jax.jit(step.stopped)
        self._recommend = jax.jit(step.recommend)
        self._confident = None if step.confident is None else jax.jit(step.confident)
        # re-planning (spec [budget] replan): the phases' schedule, re-planned at each barrier from measured costs
        self.schedule = schedule_of(step) if spec.replan and spec.budget is not None else None
        self.state = jax.jit(step.init)(self.params)
        self.dtype = np.dtype(jax.dtypes.canonicalize_dtype(jnp.float64))
        self.b = 0
        self.by_budget = False
        self._new_round()

    def _new_round(self):
        K = len(self.spec.arms)
        self.need = np.asarray(self._select(fold(self.key_pol, self.b), self.state, self.params)).astype(np.int64)
        self.handed = np.zeros(K, np.int64)
        self.told_n = np.zeros(K, np.int64)
        self.rs = np.zeros((K, self.built.dim))
        self.cs = np.zeros(K)
        self.done = bool(self._stopped(self.state, self.params))

    def round_of_ask(self, study) -> int:
        return self.b

    def on_ask(self, study, rec):
        self.handed[rec.action] += 1

    def on_enqueue(self, study, rec):
        self.handed[rec.action] += 1  # the pull it owes is reserved for the queued ticket

    def queue_open(self, study) -> bool:
        """An enqueued arm was owed a pull by the current phase or round, which waits for it: always."""
        return not self.done

    def check_known(self, study, arm: int, how: str):
        """Take an enqueued or added evaluation of ``arm`` only where the current phase (fixed budget) or round
        (fixed confidence) still owes the arm a pull, so that the method's allocation, and its guarantee, are kept;
        refuse it otherwise (:class:`StudyError` naming the arm, the phase and its allocation)."""
        name = self.spec.arms[arm]
        if self.done:
            raise StudyError(f"cannot {how} {name!r}: the method has ended ({self.reason(study)}); an evaluation "
                             "beyond its schedule would not change its recommendation")
        if self.handed[arm] < self.need[arm]:
            return
        what = "round" if self._confident is not None else "phase"
        raise StudyError(f"cannot {how} {name!r}: {what} {self.b + 1} allocates it {int(self.need[arm])} "
                         f"evaluation(s), all handed out or told already ({int(self.told_n[arm])} told); a "
                         f"{what} takes only the pulls its allocation owes (a pull beyond it would break the "
                         f"method's guarantee): {how} it while a {what} owes it one")

    def on_fail(self, study, rec):
        self.handed[rec.action] -= 1

    def on_tell(self, study, rec):
        a = rec.action
        self.told_n[a] += 1
        self.rs[a] += self.built.to_policy(np.asarray(rec.values, float))
        self.cs[a] += (rec.cost or 0.0) / self.built.cost_scale

    def _apply_round(self, study):
        if self.schedule is not None:
            self._replan(study)
        self.state = self._update(self.state, self.told_n.astype(np.int32), self.rs.astype(self.dtype),
                                  self.cs.astype(self.dtype), self.params)
        self.b += 1
        self._new_round()

    def _replan(self, study):
        """Re-plan the rest of the phases from the measured mean costs and the budget left (:func:`replan`)."""
        from ..policies.identification import replan

        scale = self.built.cost_scale
        costs = np.array([study.expected_cost(i) for i in range(len(self.spec.arms))]) / scale
        left = (self.spec.budget - study._spent) / scale
        self.params = replan(self.schedule, self.state, self.built.params, costs, left, pulls=self.told_n)

    def _next(self):
        """The next arm to hand out and the expected cost of the rest of its sweep, or None."""
        open_ = self.handed < self.need
        if not open_.any():
            return None
        level = self.handed[open_].min()
        arm = int(np.flatnonzero(open_ & (self.handed == level))[0])
        return arm, level

    def _fits(self, study, nxt) -> bool:
        """Whether the next arm may be handed out: the rest of its sweep fits in the budget, or, re-planning in the
        last phase, the arm itself does (the last sweep is handed out arm by arm as the budget allows)."""
        arm, level = nxt
        if study.affordable(self._sweep_cost(study, level)):
            return True
        last = self.schedule is not None and int(self.state.r) >= self.schedule.phases
        return last and study.affordable(study.expected_cost(arm))

    def _sweep_cost(self, study, level) -> float:
        rest = (self.need > level) & (self.handed == level)
        return sum(study.expected_cost(i) for i in np.flatnonzero(rest))

    def settle(self, study):
        for _ in range(10_000):
            if self.done:
                return
            if (self.handed > self.told_n).any():
                return
            if self.need.sum() > 0 and (self.told_n == self.need).all():
                self._apply_round(study)
                continue
            nxt = self._next()
            if nxt is not None and self._fits(study, nxt):
                return
            if self.told_n.sum() > 0:
                self._apply_round(study)
                continue
            self.state = self._short(self.state, self.params)
            self._new_round()
            if self.done:
                self.by_budget = True

    def _choose(self, study):
        if self.done:
            return None, "budget" if self.by_budget else "finished"
        nxt = self._next()
        if nxt is None:
            return None, "pending"
        if not self._fits(study, nxt):
            return None, "budget"
        return nxt[0], None

    def next_action(self, study):
        return self._choose(study)[0]

    def reason(self, study):
        return self._choose(study)[1]

    def recommend(self, study):
        return self._recommend(self.state, self.params)

    def confident(self, study):
        return None if self._confident is None else bool(self._confident(self.state, self.params))

    def ended_by(self, study):
        """The :class:`EndedBy` rule that ended the study, or None while it runs."""
        if not self.done or study._pending:
            return None
        if self.by_budget:
            return EndedBy.BUDGET
        confident = self.confident(study)
        if confident is None:
            return EndedBy.PHASES
        return EndedBy.STOPPING_RULE if confident else EndedBy.HORIZON

    def arm_states(self, recommended) -> list:
        """Each arm's :class:`ArmState` from the state's accepted and active masks; once the method has ended, its
        recommended arms are accepted and the others rejected."""
        K = len(self.spec.arms)
        if self.done:
            return [ArmState.ACCEPTED if m else ArmState.REJECTED for m in recommended]
        masks = _masks(self.state)
        if masks is None:
            return [ArmState.ACTIVE] * K
        accepted, active = masks
        return [ArmState.ACCEPTED if a else ArmState.ACTIVE if b else ArmState.REJECTED
                for a, b in zip(accepted, active, strict=True)]
