"""The driver of an online :class:`~mobandit_jax.types.Policy` (one arm, or a slate, per ticket), with constant-liar
batches (module docstring of :mod:`..study`; the protocol: :mod:`.base`).

The driver keeps the replayed state in memory. An ask costs one jitted call (:func:`make_advance`): it applies the
observations the state has not seen (the tells of other processes since its last step, then the constant-liar pulls
of the pending tickets), a block of :data:`BLOCK` padded, in a ``lax.fori_loop`` over the block's first ``n`` (the
padding is never applied), and selects at the state it reaches. One shape, so one compile a process, made by the first
ask or read of the state (a new shape met under the write lock would hold every worker for its compile; a separate
``update`` or ``select`` compiled on first use did, for 1.5 s, at the first snapshot or the first batched ask).
"""
from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np

from ...types import Final, Observation
from ..errors import StudyError
from ..states import ArmState, EndedBy, EndReason
from .base import Choice, Driver, policy_key

BLOCK = 32  # observations one call of make_advance's function applies (fewer are padded; more go in several calls)


def make_advance(update, select):
    """The jitted step of an online study: apply a block of observations, then select (module docstring).

    Args:
      update: ``update(state, action, reward, cost) -> state`` for one observation.
      select: ``select(key, state) -> action``.

    Returns:
      ``advance(state, actions, rewards, costs, n_kept, n, key, t) -> (kept, final, action)``: ``final``, the state
      after the first ``n`` of the stacked observations (the rest are padding, never applied); ``kept``, after the
      first ``n_kept``; ``action``, ``select(fold_in(key, t), final)``.
    """

    def advance(state, actions, rewards, costs, n_kept, n, key, t):
        def body(i, s):
            return update(s, actions[i], rewards[i], costs[i])

        kept = jax.lax.fori_loop(0, n_kept, body, state)
        final = jax.lax.fori_loop(n_kept, n, body, kept)
        return kept, final, select(jax.random.fold_in(key, t), final)

    return jax.jit(advance)


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

        def update(state, action, reward, cost):
            return policy.update(state, action, Observation(reward, cost), params)

        def select(key, state):
            return policy.select(key, state, params)

        self._advance = make_advance(update, select)
        self._state = jax.jit(policy.init)(params)
        self._new: list = []  # the told tickets' records not yet counted (:meth:`_count`)
        self._told: list = []  # told observations, stacked (:meth:`_observations`), not yet applied to the state
        K = len(spec.arms)
        self.counts = np.zeros(K, np.int64)
        self.sums = np.zeros((K, built.dim))
        self.last = None
        self.slate = policy.slate_size > 0 or spec.slate > 0
        self.dtype = np.dtype(jax.dtypes.canonicalize_dtype(jnp.float64))
        action = jax.eval_shape(select, self.key_pol, self._state).shape  # () for one arm, (slate size,) for a slate
        self._pad = (np.zeros((BLOCK, *action), np.int32), np.zeros((BLOCK, *action, built.dim), self.dtype),
                     np.zeros((BLOCK, *(action if self.slate else ())), self.dtype))  # a block of no observation

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

    def _observations(self, actions, rewards, costs):
        """Observations stacked as the policy's ``update`` takes them, one row each: ``actions (n,)`` (a slate's:
        ``(n, s)``) int32, ``rewards (n, [s,] dim)`` in the policy's space and ``costs (n, [s])``, a slate's told
        cost shared by its arms, in units of the largest expected cost."""
        actions = np.asarray(actions, np.int32)
        share = actions.shape[1] if self.slate else 1
        costs = np.asarray(costs, float) / share / self.built.cost_scale
        if self.slate:
            costs = np.repeat(costs[:, None], share, axis=1)
        return actions, np.asarray(rewards, self.dtype), costs.astype(self.dtype)

    def _count(self):
        """Turn the told tickets kept by :meth:`on_tell` into observations (one numpy pass for all of them), to be
        applied at the next step, and add them to the per-arm counts and sums in the order they were told."""
        if not self._new:
            return
        new, self._new = self._new, []
        rewards = self.built.to_policy(np.asarray([rec.values for rec in new], float))
        obs = self._observations([rec.action for rec in new], rewards, [rec.cost or 0.0 for rec in new])
        self._told.append(obs)
        arms = obs[0].reshape(-1)
        np.add.at(self.counts, arms, 1)
        np.add.at(self.sums, arms, obs[1].reshape(len(arms), -1))

    def _apply(self, virtual=None, t: int = 0):
        """Apply every told observation not yet applied (kept: the told ones are applied once) and the ``virtual``
        pulls (stacked observations, or None) after them, one :func:`make_advance` call a :data:`BLOCK` of
        observations (one call where there are none).

        Returns:
          ``(state, action)``: the state after them all, and the policy's ``select`` there at round ``t``.
        """
        self._count()
        told, self._told = self._told, []
        n_told = sum(len(block[0]) for block in told)
        blocks = told + ([virtual] if virtual is not None else [])
        obs = [np.concatenate(column) for column in zip(*blocks, strict=True)] if blocks else []
        n, state, action = len(obs[0]) if obs else 0, self._state, None
        for start in range(0, max(n, 1), BLOCK):
            size = min(n - start, BLOCK)
            arrays = [pad.copy() for pad in self._pad]
            for column, values in zip(arrays, obs, strict=False):  # no observation: the padding alone
                column[:size] = values[start:start + size]
            n_kept = min(max(n_told - start, 0), size)
            kept, state, action = self._advance(state, *arrays, n_kept, size, self.key_pol, np.uint32(t))
            if start < n_told <= start + BLOCK:  # the last told observation is in this block
                self._state = kept
        return state, action

    @property
    def state(self):
        """The policy state after every told event (applying those told since the last read)."""
        return self._apply()[0] if self._told or self._new else self._state

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
        self._count()  # counted, but their observations are in the restored state
        self._told = []
        return True

    def on_tell(self, rec) -> None:
        """Keep the told ticket, an observation of its arm (or slate) counted and applied at the next step.

        Args:
          rec: the told ticket's record.

        Returns:
          None.
        """
        self._new.append(rec)
        self.last = rec.action

    def _liars(self, arms) -> np.ndarray:
        """The arms' current estimates in the policy's space, ``(..., dim)`` for ``arms (...)`` (module docstring
        of :mod:`..study`): an arm's told mean, else the mean of every told value, else the middle of the range."""
        if self.counts.sum() > 0:
            fallback = self.sums.sum(0) / self.counts.sum()
        else:
            fallback = np.full(self.built.dim, 0.5 if self.spec.noise is None else 0.0)
        n = self.counts[arms][..., None]
        return np.where(n > 0, self.sums[arms] / np.maximum(n, 1), fallback)

    def _virtual(self, view, t: int):
        """The policy's ``select`` at round ``t`` after the told events and a constant-liar pull of each pending
        ticket (one batched call)."""
        self._count()
        virtual = None
        if view.pending:
            actions = np.asarray([rec.action for rec in view.pending], np.int32)
            costs = [sum(view.expected_cost(a) for a in np.atleast_1d(rec.action)) for rec in view.pending]
            virtual = self._observations(actions, self._liars(actions), costs)
        return self._apply(virtual, t)[1]

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
        action = np.asarray(self._virtual(view, told + pending))
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
        self._count()
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
