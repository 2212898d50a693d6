"""A study's call as one atomic step of its storage (:mod:`.storage.base`): decided again when the storage asks for it,
and the in-memory replay rewound when the storage could not keep the step.

A call (``ask``, ``tell``, ``fail``) reads the new events, decides, applies its own events to the in-memory state and
appends them inside one :meth:`~.storage.base.Storage.lock` step. If the step is not kept (a full disk, a read-only
folder, a server unreachable past its reconnect bound: :class:`~.storage.base.StorageError`; an interrupt; a user
backend's own exception), the events it applied in memory were never acknowledged, so the study replays its storage
again (:meth:`~.study.Study.reload`) before the error reaches the caller (bad input, a plain
:class:`~.errors.StudyError`, is refused before anything is applied); if the storage restored a lost connection after
other writers appended (:class:`~.storage.base.RetryError`), the study replays and runs the call again, at most
:data:`RETRIES` times.
"""
from __future__ import annotations

import functools

from .errors import StudyError
from .storage import RetryError, StorageError

RETRIES = 20


def atomic(method):
    """Wrap a :class:`~.study.Study` method that writes in one storage step (module docstring).

    Args:
      method: ``method(study, *args, **kwargs)``.

    Returns:
      The wrapped method.
    """

    @functools.wraps(method)
    def step(study, *args, **kwargs):
        for _ in range(RETRIES):
            try:
                return method(study, *args, **kwargs)
            except RetryError:
                study.reload()
            except StorageError:
                study.reload()
                raise
            except StudyError:
                raise  # bad input: refused before anything was applied
            except BaseException:
                study.reload()  # an interrupt or a backend's own error in the middle of the step
                raise
        raise StorageError(f"{study.path!r}: other writers kept appending while the connection was restored "
                           f"({RETRIES} tries); nothing was written")

    return step
