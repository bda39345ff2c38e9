"""The plumbing under :class:`~.store.Store`: opening the file, transactions, closing.

:class:`StoreBase` holds what every part of the store needs (the connection,
its lock, the read-only state); the mixins in ``_revisions``, ``_assign`` and
``_adjudicate`` and :class:`~.store.Store` itself build on it. See
:mod:`.store` for durability and concurrency.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from attnwidget.annotations import _open, _schema
from attnwidget.annotations import validate as _validate
from attnwidget.errors import InputError

_SYNCHRONOUS = ("FULL", "NORMAL", "EXTRA")

_S = TypeVar("_S", bound="StoreBase")


class StoreBase:
    """The connection to a store's file (see :class:`~.store.Store` for the arguments)."""

    def __init__(
        self,
        path: str | Path,
        *,
        labels: list[str] | None = None,
        timeout: float = 30.0,
        synchronous: str = "FULL",
        read_only: bool = False,
    ) -> None:
        self._path = Path(path)
        wanted = _validate.labels_option(labels)
        sync = str(synchronous).upper()
        if sync not in _SYNCHRONOUS:
            raise InputError(f"synchronous={synchronous!r}: pass one of {list(_SYNCHRONOUS)}")
        if not isinstance(read_only, bool):
            raise InputError(f"read_only={read_only!r}: pass True or False")
        if self._path.is_dir():
            example = self._path / "rationales.sqlite"
            raise InputError(f"{self._path} is a folder: pass a file path, e.g. {example}")
        conn, read_only, self._why_read_only = _open.connect(self._path, timeout, read_only)
        try:
            if read_only:
                self._labels = _open.prepare_read_only(conn, self._path, wanted)
            else:
                self._labels = _schema.prepare(conn, self._path, wanted, sync, timeout)
        except sqlite3.OperationalError as error:
            conn.close()
            raise _open.write_error(self._path, error, "the new store") or error from None
        except BaseException:
            conn.close()
            raise
        self._read_only = read_only
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.RLock()

    # -- plumbing --------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise InputError(f"the store {self._path} is closed: open it again with Store(path)")
        return self._conn

    @contextmanager
    def _transaction(self, mode: str = "IMMEDIATE") -> Iterator[sqlite3.Connection]:
        """One transaction: IMMEDIATE to write, DEFERRED for a consistent read."""
        with self._lock:
            conn = self._connection()
            if mode == "IMMEDIATE" and self._read_only:
                raise _open.read_only_error(self._path, self._why_read_only)
            conn.execute(f"BEGIN {mode}")
            try:
                yield conn
                conn.execute("COMMIT")
            except sqlite3.OperationalError as error:
                # A full disk or a mount turned read-only: SQLite has rolled back, so this
                # write is lost and every earlier one is kept; say so instead of a raw error.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise _open.write_error(self._path, error, "this change") or error from None
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    @property
    def path(self) -> Path:
        """The store's file."""
        return self._path

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only (asked for, or the file is not writable)."""
        return self._read_only

    @property
    def labels(self) -> list[str] | None:
        """The allowed labels (None: any string)."""
        return None if self._labels is None else list(self._labels)

    def close(self) -> None:
        """Close the file (every save is already committed). Safe to call twice."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else f"labels={self._labels!r}"
        state += ", read_only=True" if self._read_only else ""
        return f"Store({str(self._path)!r}, {state})"
