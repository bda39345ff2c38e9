"""A durable store of human rationales: :class:`Store`, one SQLite file.

Durability. Every :meth:`Store.save` is one ``BEGIN IMMEDIATE … COMMIT``
transaction and returns only after ``COMMIT``. The file is in WAL mode, and
``synchronous`` defaults to ``FULL``: with WAL, ``NORMAL`` already keeps every
committed save through a crash or ``SIGKILL`` of the process (the commit is in
the WAL file, which the next opener replays) but may lose the last saves to a
power cut or OS crash; ``FULL`` also syncs the WAL at each commit, so a save
survives those too. That costs one fsync per save, a few milliseconds, which
nobody notices at the pace a person annotates. Pass ``synchronous="NORMAL"``
for bulk writes where that matters more.

Several writers. Each connection waits up to ``timeout`` seconds (30) for the
write lock instead of failing with "database is locked", and takes the lock
at the start of a save (``BEGIN IMMEDIATE``), so a read-then-write (the
revision counter) can never be interleaved with another process's save.
Several notebooks, kernels or processes may therefore write one file at
once. WAL needs a local file system: not a network share.

History. ``annotations`` holds the current row of each (item, annotator);
each save bumps its ``revision`` and appends a copy to ``history``, so
:meth:`Store.history` lists every version an annotator saved.

Speed, for the Annotator widget (save + load + progress on every item
change). All three use indexes: items by id, annotations by (item, annotator)
and by (annotator, item); none reads all items. To measure::

    import time, tempfile, os
    from attnwidget.annotations import Store
    path = os.path.join(tempfile.mkdtemp(), "bench.sqlite")
    s = Store(path)
    s.add_items({"id": f"i{k}", "text": "a few words " * 60} for k in range(10_000))
    t = time.perf_counter()
    for k in range(200):
        s.save(f"i{k * 37 % 10_000}", annotator="ana", spans=[(1, 4)])
        s.load(f"i{k * 37 % 10_000}", annotator="ana")
        s.progress("ana")
    print((time.perf_counter() - t) / 200 * 1e3, "ms per save + load + progress")

Measured on a busy 2-core machine with 10,000 items: 4-8 ms per save + load +
progress with ``FULL`` (nearly all of it the fsync at COMMIT), 0.3-0.6 ms with
``NORMAL``; with all 10,000 items annotated, ``load`` takes 0.06 ms,
``progress`` 1.3 ms (it counts the annotator's index entries) and
``first_unannotated`` at most ~35 ms (when nothing is left).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import _open, _schema
from attnwidget.annotations import validate as _validate
from attnwidget.annotations._rows import (
    COLUMNS,
    Annotation,
    add_items_in,
    annotation_from_row,
    lookup,
    rationale_vector,
    save_in,
)
from attnwidget.annotations.validate import Item
from attnwidget.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

_SYNCHRONOUS = ("FULL", "NORMAL", "EXTRA")


class Store:
    """Human rationales for a list of items, kept in the SQLite file at ``path``.

    ``Store(path)`` creates the file when it does not exist and opens it
    otherwise (upgrading an older schema). A file, folder or mount that cannot
    be written is opened read-only, as is any store with ``read_only=True``:
    reads work, a save raises ``InputError`` (see :mod:`._open`). ``labels`` restricts item and
    annotation labels to a fixed list, kept in the file: reopening with a
    different list is refused, ``labels=None`` takes the stored one.
    See the module docstring for durability, concurrency and history.

    >>> with Store("rationales.sqlite", labels=["pos", "neg"]) as store:  # doctest: +SKIP
    ...     store.add_items([{"id": "r1", "text": "a truly great film", "label": "pos"}])
    ...     store.save("r1", annotator="ana", spans=[(1, 3)], label="pos")
    """

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

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else f"labels={self._labels!r}"
        state += ", read_only=True" if self._read_only else ""
        return f"Store({str(self._path)!r}, {state})"

    # -- items -----------------------------------------------------------------

    def add_items(self, items: Any) -> int:
        """Register items (``Item`` objects, mappings with ``id``, ``text`` and
        optionally ``label`` and ``text_pair``, or a DataFrame with those columns).

        Adding an item again with the same content does nothing; the same id with
        another text, text_pair or label is refused. All or nothing: one bad item
        and none is added. Returns how many items were new.
        """
        checked = _validate.coerce_items(items)
        with self._transaction() as conn:
            return add_items_in(conn, checked, self._labels)

    def items(self) -> list[Item]:
        """All items, in the order they were added (``first_unannotated`` indexes it)."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT item_id, text, label, text_pair FROM items ORDER BY idx"
            )
            return [Item(*row) for row in rows]

    def item(self, item_id: str) -> Item:
        """One item by id (unknown ids raise ``InputError``)."""
        ident = _validate.item_id(item_id)
        with self._lock:
            conn = self._connection()
            lookup(conn, ident)
            row = conn.execute(
                "SELECT item_id, text, label, text_pair FROM items WHERE item_id = ?", (ident,)
            ).fetchone()
            return Item(*row)

    def __len__(self) -> int:
        with self._lock:
            return int(self._connection().execute("SELECT count(*) FROM items").fetchone()[0])

    # -- annotations -----------------------------------------------------------

    def save(
        self,
        item_id: str,
        *,
        annotator: str,
        spans: Any,
        label: str | None = None,
        note: str | None = None,
        confidence: float | None = None,
    ) -> Annotation:
        """Save ``annotator``'s rationale for an item, replacing their previous one.

        ``spans`` are ``(start, end)`` word indices, end exclusive, not
        overlapping (``[]``: no word marked). Returns the saved annotation once it
        is committed; on bad input raises ``InputError`` and writes nothing.
        """
        ident = _validate.item_id(item_id)
        who = _validate.annotator(annotator)
        where = f"item {ident!r}"
        chosen = _validate.label(label, self._labels, where)
        text = _validate.note(note, where)
        sure = _validate.confidence(confidence, where)
        with self._transaction() as conn:
            return save_in(conn, ident, who, spans, chosen, text, sure, datetime.now(timezone.utc))

    def load(self, item_id: str, *, annotator: str) -> Annotation | None:
        """``annotator``'s current annotation of the item, or None when there is none."""
        ident = _validate.item_id(item_id)
        who = _validate.annotator(annotator)
        with self._lock:
            conn = self._connection()
            idx, _ = lookup(conn, ident)
            row = conn.execute(
                f"SELECT {COLUMNS}, a.revision FROM annotations a JOIN items i"
                " ON i.idx = a.item_idx WHERE a.item_idx = ? AND a.annotator = ?",
                (idx, who),
            ).fetchone()
        return None if row is None else annotation_from_row(row)

    def history(self, item_id: str, *, annotator: str) -> list[Annotation]:
        """Every version ``annotator`` saved for the item, oldest first."""
        ident = _validate.item_id(item_id)
        who = _validate.annotator(annotator)
        with self._lock:
            conn = self._connection()
            idx, _ = lookup(conn, ident)
            rows = conn.execute(
                f"SELECT {COLUMNS}, a.revision FROM history a JOIN items i ON i.idx = a.item_idx"
                " WHERE a.item_idx = ? AND a.annotator = ? ORDER BY a.revision",
                (idx, who),
            ).fetchall()
        return [annotation_from_row(row) for row in rows]

    def rationale(self, item_id: str, *, annotator: str) -> np.ndarray | None:
        """The annotation as a 0/1 vector over the item's words (None: not annotated)."""
        found = self.load(item_id, annotator=annotator)
        if found is None:
            return None
        with self._lock:
            _, n_words = lookup(self._connection(), found.item_id)
        return rationale_vector(found.spans, n_words)

    def annotators(self) -> list[str]:
        """Names of everyone with at least one saved annotation, sorted."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT DISTINCT annotator FROM annotations ORDER BY annotator"
            )
            return [name for (name,) in rows]

    def progress(self, annotator: str) -> tuple[int, int]:
        """``(done, total)``: items ``annotator`` has saved, and items in the store."""
        who = _validate.annotator(annotator)
        with self._transaction("DEFERRED") as conn:
            (done,) = conn.execute(
                "SELECT count(*) FROM annotations WHERE annotator = ?", (who,)
            ).fetchone()
            (total,) = conn.execute("SELECT count(*) FROM items").fetchone()
        return int(done), int(total)

    def first_unannotated(self, annotator: str, *, start: int = 0) -> int | None:
        """Index (in :meth:`items` order) of the first item at or after ``start``
        that ``annotator`` has not saved, or None when there is none."""
        who = _validate.annotator(annotator)
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise InputError(f"start={start!r}: pass an item index, an int >= 0")
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT idx FROM items i WHERE idx >= ? AND NOT EXISTS (SELECT 1 FROM"
                    " annotations a WHERE a.annotator = ? AND a.item_idx = i.idx)"
                    " ORDER BY idx LIMIT 1",
                    (start, who),
                )
                .fetchone()
            )
        return None if row is None else int(row[0])

    def to_dataframe(self, annotator: str | None = None, *, vectors: bool = False) -> pd.DataFrame:
        """One row per saved (item, annotator), in item order then annotator name.

        Columns: ``item_id``, ``annotator``, ``spans`` (tuple of pairs), ``label``,
        ``note``, ``confidence``, ``saved_at`` (UTC), ``revision``, ``item_label``,
        ``n_words``; with ``vectors=True`` also ``rationale``, the 0/1 word vector.
        """
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is in the evaluate extra
            raise ImportError(
                "Store.to_dataframe needs pandas: pip install 'attnwidget[evaluate]'"
            ) from None
        where, args = ("", ()) if annotator is None else ("WHERE a.annotator = ?", (annotator,))
        with self._transaction("DEFERRED") as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS}, a.revision, i.label, i.n_words FROM annotations a"
                f" JOIN items i ON i.idx = a.item_idx {where} ORDER BY i.idx, a.annotator",
                args,
            ).fetchall()
        records = []
        for row in rows:
            found = annotation_from_row(row[:8])
            record = {
                "item_id": found.item_id,
                "annotator": found.annotator,
                "spans": found.spans,
                "label": found.label,
                "note": found.note,
                "confidence": found.confidence,
                "saved_at": found.saved_at,
                "revision": found.revision,
                "item_label": row[8],
                "n_words": int(row[9]),
            }
            if vectors:
                record["rationale"] = rationale_vector(found.spans, int(row[9]))
            records.append(record)
        columns = ["item_id", "annotator", "spans", "label", "note", "confidence", "saved_at"]
        columns += ["revision", "item_label", "n_words"] + (["rationale"] if vectors else [])
        frame = pd.DataFrame.from_records(records, columns=columns)
        frame["saved_at"] = pd.to_datetime(frame["saved_at"], utc=True)
        frame["confidence"] = frame["confidence"].astype("float64")
        return frame

    # -- ERASER ----------------------------------------------------------------

    def export_eraser(
        self, directory: str | Path, *, split: str = "test", annotator: str | None = None
    ) -> Path:
        """Write the store as an ERASER data set; see :func:`.eraser.export_eraser`."""
        from attnwidget.annotations.eraser import export_eraser

        return export_eraser(self, directory, split=split, annotator=annotator)

    def import_eraser(
        self,
        directory: str | Path,
        *,
        annotator: str = "eraser",
        splits: tuple[str, ...] = ("train", "val", "test"),
        query_as_pair: bool = False,
    ) -> int:
        """Read an ERASER data set into the store; see :func:`.eraser.import_eraser`."""
        from attnwidget.annotations.eraser import import_eraser

        return import_eraser(
            self, directory, annotator=annotator, splits=splits, query_as_pair=query_as_pair
        )
