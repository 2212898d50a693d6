"""The driver of an online :class:`~mobandit_jax.types.Policy` (one arm, or a slate, per ticket), with constant-liar
batches (module docstring of :mod:`..study`; the protocol: :mod:`.base`).

The driver keeps the replayed state in memory and calls the policy's functions jitted once. It applies the
observations it has not applied yet (the tells of other processes since its last step, then the constant-liar pulls
of the pending tickets) in blocks of :data:`BLOCK`, one jitted call a block (:func:`make_advance`: a ``lax.scan`` of
``update`` over the block, padded, whose padding steps a ``lax.cond`` skips), so that an ask of one of up to 16
workers costs one ``update`` call and one ``select`` call, and one shape compiles, once per process (a new shape met
under the write lock would hold every worker for its compile); a lone observation (one worker) goes through
``update`` itself, which a 32-step block would slow by about 0.3 ms."""
from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np

from ...types import Final, Observation
from ..errors import StudyError
from ..policy import fold
from ..states import ArmState, EndedBy, EndReason
from .base import Choice, Driver, policy_key

BLOCK = 32  # observations one call of make_advance's function applies (fewer are padded; more go in several calls)


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


class OnlineDriver(Driver):
    """An online :class:`~mobandit_jax.types.Policy` (one arm, or a slate, per ticket).

    Args:
      built: the policy (:class:`~..policy.Built`).
      spec: the study's :class:`~..spec.StudySpec`.
      seed: the study's seed.
    """

    snapshots = True

    def __init__(self, built, spec, seed: int):
        self.built, self.spec = built, spec
        policy, params = built.policy, built.params
        self.key_pol = policy_key(seed)
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

    def queue_open(self, view) -> bool:
        """Whether the horizon has room for an enqueued ticket.

        Args:
          view: the study now.

        Returns:
          True while the told and pending tickets are fewer than the horizon.
        """
        return view.told + len(view.pending) < self.spec.horizon

    def check_known(self, view, arm: int, how: str) -> None:
        """Refuse an enqueued or added evaluation past the horizon; an online policy takes any other as a pull of its
        arm.

        Args:
          view: the study now.
          arm: the arm's index.
          how: ``"enqueue"`` or ``"add"``.

        Returns:
          None where it is taken.
        """
        planned = view.told + len(view.pending) + len(view.queued)
        if planned >= self.spec.horizon:
            raise StudyError(f"cannot {how} {self.spec.arms[arm]!r}: the study's horizon of {self.spec.horizon} "
                             f"evaluations is reached ({view.told} told, {len(view.pending)} pending, "
                             f"{len(view.queued)} queued)")

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
        """The policy state as bytes.

        Returns:
          An ``.npz`` of its leaves.
        """
        buf = io.BytesIO()
        np.savez(buf, *[np.asarray(x) for x in jax.tree_util.tree_leaves(self.state)])
        return buf.getvalue()

    def restore(self, data: bytes) -> bool:
        """Set the policy state from :meth:`snapshot`'s bytes (the observations told before them are dropped).

        Args:
          data: the bytes.

        Returns:
          False where they do not fit this policy's state (another dtype or shape), which is then left as it is.
        """
        leaves, treedef = jax.tree_util.tree_flatten(self._state)
        with np.load(io.BytesIO(data)) as z:
            saved = [z[f"arr_{i}"] for i in range(len(z.files))]
        if len(saved) != len(leaves) or any(np.shape(a) != np.shape(b) or np.asarray(a).dtype != b.dtype
                                            for a, b in zip(leaves, saved, strict=False)):
            return False
        self._state = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(x) for x in saved])
        self._told = []
        return True

    def on_tell(self, rec) -> None:
        """Keep the told values as an observation of the ticket's arm (or slate), applied at the next step.

        Args:
          rec: the told ticket's record.

        Returns:
          None.
        """
        action, reward, cost = self._obs(rec.action, rec.values, rec.cost)
        self._told.append((action, reward, cost))
        arms = np.atleast_1d(rec.action)
        self.counts[arms] += 1
        self.sums[arms] += np.reshape(np.asarray(reward), (len(arms), -1))
        self.last = rec.action

    def _liar(self, arm) -> np.ndarray:
        """The arm's current estimate in the policy's space (module docstring of :mod:`..study`)."""
        if self.counts[arm] > 0:
            return self.sums[arm] / self.counts[arm]
        if self.counts.sum() > 0:
            return self.sums.sum(0) / self.counts.sum()
        return np.full(self.built.dim, 0.5 if self.spec.noise is None else 0.0)

    def _virtual(self, view):
        """The state after the told events and a constant-liar pull of each pending ticket (one batched call)."""
        virtual = []
        for rec in view.pending:
            arms = np.atleast_1d(rec.action)
            est = np.stack([self._liar(a) for a in arms])
            cost = sum(view.expected_cost(a) for a in arms)
            virtual.append(self._obs(rec.action, est if self.slate else est[0], cost))
        return self._apply(virtual)

    def choose(self, view) -> Choice:
        """The policy's next arm (or slate) at round ``told + pending``, the pending tickets counted as constant-liar
        pulls.

        Args:
          view: the study now.

        Returns:
          The :class:`Choice`: none at the horizon (``finished``; ``pending`` while tickets are out) or where its
          expected cost does not fit (``budget``).
        """
        told, pending = view.told, len(view.pending)
        if told >= self.spec.horizon:
            return Choice(None, EndReason.FINISHED)
        if told + pending >= self.spec.horizon:
            return Choice(None, EndReason.PENDING)
        state = self._virtual(view)
        action = np.asarray(self._select(fold(self.key_pol, told + pending), state))
        action = [int(a) for a in action] if action.ndim else int(action)
        cost = sum(view.expected_cost(a) for a in np.atleast_1d(action))
        if not view.affordable(cost):
            return Choice(None, EndReason.BUDGET)
        return Choice(action, None)

    def recommend(self):
        """The family's recommended set, read from the state and the told means as a simulated run's final state.

        Returns:
          A boolean mask over the arms (none before a slate policy's first tell).
        """
        means = self.sums / np.maximum(self.counts, 1)[:, None]
        last = np.asarray(self.last if self.last is not None else 0, np.int32)
        final = Final(self.state, jnp.asarray(last), jnp.asarray(self.counts, jnp.int32),
                      jnp.asarray(means, self.dtype))
        if self.last is None and self.slate:
            return np.zeros(len(self.spec.arms), bool)
        return self.built.family.recommended(final, self.built.ctx)

    def ended_by(self, view):
        """The rule that ended the study.

        Args:
          view: the study now (nothing pending).

        Returns:
          :attr:`EndedBy.HORIZON` or :attr:`EndedBy.BUDGET`, or None while the policy would hand out a ticket.
        """
        return {EndReason.FINISHED: EndedBy.HORIZON, EndReason.BUDGET: EndedBy.BUDGET}.get(self.choose(view).reason)

    def arm_states(self, recommended) -> list:
        """Every arm is active for an online policy.

        Args:
          recommended: :meth:`recommend`'s mask (not read).

        Returns:
          :attr:`ArmState.ACTIVE` for each arm.
        """
        return [ArmState.ACTIVE] * len(self.spec.arms)
