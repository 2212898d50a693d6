"""Where a study keeps its events: the protocol (:mod:`.base`) and one file per backend.

``sqlite`` (``DIR/study.db``, the default), ``postgres`` (a ``postgresql://`` address), ``memory`` (one process).
:func:`open_storage` picks one from a folder or an address, or takes a backend instance as it is.
"""
from __future__ import annotations

import os

from .base import COLUMNS, KINDS, MEMBERS, VERSION, Event, RetryError, Storage, StorageError, check_version, new_event

__all__ = ["COLUMNS", "KINDS", "MEMBERS", "VERSION", "Event", "RetryError", "Storage", "StorageError", "check_version",
           "is_postgres", "new_event", "open_storage"]


def is_postgres(path) -> bool:
    """Whether ``path`` names a PostgreSQL study.

    Args:
      path: a folder, an address or a backend instance.

    Returns:
      True for a ``postgresql://`` or ``postgres://`` address.
    """
    return isinstance(path, str | os.PathLike) and str(path).startswith(("postgresql://", "postgres://"))


def open_storage(where, create: bool = False):
    """The storage of a study.

    Args:
      where: a folder, a ``postgresql://`` address, or a backend instance (:class:`~.base.Storage`).
      create: make the folder and tables (an existing study is opened as it is).

    Returns:
      The backend, its format version checked (:func:`~.base.check_version`).
    """
    from ..errors import StudyError

    if isinstance(where, str | os.PathLike):
        if is_postgres(where):
            from .postgres import PostgresStorage

            store = PostgresStorage(str(where), create)
        else:
            from .sqlite import SqliteStorage

            store = SqliteStorage(where, create)
    else:
        missing = [m for m in MEMBERS if not hasattr(where, m)]
        if missing:
            raise StudyError(f"storage = {type(where).__name__} is neither a folder, an address nor a storage backend "
                             f"(it lacks {', '.join(missing)}; see mobandit_jax.study.storage.base)")
        store = where
    try:
        check_version(store.meta(), store.address)
    except StorageError:
        store.close()
        raise
    return store
