"""Content hashes: what a run's fingerprint says of its plugins' source and its data files.

:func:`content_digest` hashes what :func:`mobandit_jax.plugins.load` imported and the data files an
:class:`~mobandit_jax.experiment_spec.ExperimentSpec` names (:func:`mobandit_jax.runner.plans.build`).
"""
from __future__ import annotations

import hashlib


def content_digest(contents) -> str | None:
    """A hash of ``(name, bytes)`` pairs, names and contents in order.

    Args:
      contents: ``(name, bytes)`` pairs.

    Returns:
      16 hex digits, or None if there are no pairs.
    """
    if not contents:
        return None
    h = hashlib.sha256()
    for name, data in contents:
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]
