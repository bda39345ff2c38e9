"""Opening a store's SQLite file, writable or read-only, and explaining write failures.

Read-only. A store on a read-only mount, or a file (or folder) the user may
not write, is opened read-only instead of failing: reads work, a save raises
:class:`~attnwidget.errors.InputError` saying the file is read-only.
``Store(path, read_only=True)`` asks for the same on a writable file.
SQLite's ``mode=ro`` opens a WAL file read-only when it can create or use the
``-shm`` index beside it; on a read-only mount it cannot, and SQLite answers
"unable to open database file", so the file is then opened ``immutable=1``
(no locks, no ``-shm``), which is sound there because nobody can change a
file on a read-only mount.

Full disk. SQLite reports ``SQLITE_FULL`` and rolls the transaction back, so
the save that hit it is not written and every committed save stays in the
file; :func:`write_error` turns it into an ``InputError`` that says so.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from attnwidget.annotations import _schema
from attnwidget.errors import InputError


def _code(error: sqlite3.Error) -> str:
    return str(getattr(error, "sqlite_errorname", ""))


def is_full(error: sqlite3.Error) -> bool:
    """Whether SQLite failed because the disk (or a quota) is full."""
    return _code(error) == "SQLITE_FULL" or "disk is full" in str(error)


def _is_read_only(error: sqlite3.Error) -> bool:
    return _code(error).startswith("SQLITE_READONLY") or "readonly" in str(error)


def full_disk(path: Path, what: str) -> InputError:
    return InputError(
        f"the disk holding {path} is full: {what} was not written, and everything saved "
        f"before is still in the file. Free some space there (see `df -h {path.parent}`) "
        "and try again, or open a store on another disk"
    )


def read_only_error(path: Path, why: str) -> InputError:
    return InputError(
        f"{path} is open read-only ({why}), so nothing can be saved to it; the annotations "
        "already in it can be read. To annotate, copy the file to a writable folder and open "
        "the copy with Store(copy_path), or make its mount or folder writable"
    )


def write_error(path: Path, error: sqlite3.Error, what: str) -> InputError | None:
    """The ``InputError`` for a write SQLite refused (full disk, read-only), else None."""
    if is_full(error):
        return full_disk(path, what)
    if _is_read_only(error):
        return read_only_error(path, "the file, its folder or its disk became read-only")
    return None


def writable(path: Path) -> bool:
    """Whether SQLite can write the store: the file (if it exists) and its folder,
    which holds the ``-wal`` and ``-shm`` files beside it. ``os.access`` answers
    for the real user, including root on a read-only mount (``EROFS``)."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.exists() and not os.access(path, os.W_OK):
        return False
    return os.access(folder, os.W_OK)


def connect(path: Path, timeout: float, read_only: bool) -> tuple[sqlite3.Connection, bool, str]:
    """A connection to the store at ``path``: (connection, read-only?, why read-only).

    A file or mount we cannot write is opened read-only, not refused: reading a
    shared, read-only data set of rationales is a normal use.
    """
    if read_only:
        return connect_read_only(path, timeout), True, "opened with read_only=True"
    if path.exists() and not writable(path):
        why = "the file, its folder or its disk is not writable"
        return connect_read_only(path, timeout), True, why
    if not writable(path):  # a new file in a folder (or on a mount) we cannot write
        folder = path.parent
        state = "does not exist" if not folder.is_dir() else "is read-only (or on a read-only disk)"
        raise InputError(
            f"cannot create {path}: its folder {folder} {state}; check that its folder exists "
            "and is writable, or pass read_only=True to open an existing store"
        )
    try:
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    except sqlite3.OperationalError as error:
        raise InputError(
            f"cannot open or create {path} ({error}): check that its folder exists and is writable"
        ) from None
    return conn, False, ""


def connect_read_only(path: Path, timeout: float) -> sqlite3.Connection:
    """A read-only connection to the existing store at ``path`` (see the module docstring)."""
    if not path.exists():
        raise InputError(
            f"{path} does not exist: read_only=True opens an existing store; pass the path of "
            "one, or read_only=False to create a new store there"
        )
    uri = path.resolve().as_uri()
    for flags in ("mode=ro", "immutable=1"):
        conn = sqlite3.connect(
            f"{uri}?{flags}",
            uri=True,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError as error:
            conn.close()
            if "unable to open" not in str(error) or flags != "mode=ro":
                raise InputError(
                    f"cannot open {path} read-only ({error}): check that the file is readable"
                ) from None
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def prepare_read_only(
    conn: sqlite3.Connection, path: Path, labels: list[str] | None
) -> list[str] | None:
    """Check a store opened read-only (no upgrade is possible) and return its labels."""
    version = _schema.inspect(conn, path)
    if version == 0:
        raise InputError(
            f"{path} is empty, not a store yet, and it is opened read-only: open it once "
            "writable (Store(path)) to create the store"
        )
    if version < _schema.SCHEMA_VERSION:
        raise InputError(
            f"{path} is an annotation store of schema version {version}; this attnwidget "
            f"reads version {_schema.SCHEMA_VERSION} after migrating the file, which needs "
            "writing it, and a store opened read-only is never migrated. To migrate it, open "
            "it once writable (Store(path), nothing is lost: every annotation is kept), or "
            "copy it to a writable folder and open the copy with Store(copy_path)"
        )
    return _schema.check_labels(conn, path, labels)
