"""How a study steps its policy: the driver protocol (:mod:`.base`) and one driver per kind of family.

``online`` (an online :class:`~mobandit_jax.types.Policy`, with constant-liar batches) and ``stepwise`` (an
identifier's step-wise form, between barriers). :func:`make_driver` picks one by the policy's family.
"""
from __future__ import annotations

from ...registry import IDENTIFIER
from .base import Choice, Driver, policy_key
from .online import OnlineDriver
from .stepwise import StepwiseDriver

__all__ = ["Choice", "Driver", "OnlineDriver", "StepwiseDriver", "make_driver", "policy_key"]


def make_driver(built, spec, seed: int) -> Driver:
    """The driver of a study's policy.

    Args:
      built: the policy (:class:`~..policy.Built`).
      spec: the study's :class:`~..spec.StudySpec`.
      seed: the study's seed.

    Returns:
      A :class:`StepwiseDriver` for an identifier's family, an :class:`OnlineDriver` for any other.
    """
    if built.family.kind == IDENTIFIER:
        return StepwiseDriver(built, spec, seed)
    return OnlineDriver(built, spec, seed)
