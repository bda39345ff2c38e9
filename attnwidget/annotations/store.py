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
:meth:`Store.history` lists every version an annotator saved. Nothing is
ever deleted: an undo (:meth:`Store.revert`) and an adjudication
(:meth:`Store.adjudicate`, :mod:`._adjudicate`) are revisions too; item
assignment is in :mod:`._assign`, character spans in :mod:`._chars`.

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

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._adjudicate import AdjudicateMixin
from attnwidget.annotations._assign import AssignMixin
from attnwidget.annotations._chars import char_vector
from attnwidget.annotations._frames import annotations_frame
from attnwidget.annotations._head_notes import HeadNotesMixin
from attnwidget.annotations._ratings import RatingsMixin
from attnwidget.annotations._revisions import RevisionsMixin
from attnwidget.annotations._rows import (
    Annotation,
    Progress,
    add_items_in,
    annotation_from_row,
    columns,
    lookup,
    lookup_text,
    rationale_vector,
    save_in,
    with_sources,
)
from attnwidget.annotations.validate import Item
from attnwidget.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


class Store(RevisionsMixin, AssignMixin, AdjudicateMixin, HeadNotesMixin, RatingsMixin):
    """Human rationales for a list of items, kept in the SQLite file at ``path``.

    ``Store(path)`` creates the file when it does not exist and opens it
    otherwise (upgrading an older schema). A file, folder or mount that cannot
    be written is opened read-only, as is any store with ``read_only=True``:
    reads work, a save raises ``InputError`` (see :mod:`._open`). ``labels`` restricts item and
    annotation labels to a fixed list, kept in the file: reopening with a
    different list is refused, ``labels=None`` takes the stored one.
    The same file keeps people's notes on attention heads and flow edges
    (:meth:`save_head_note`, :meth:`head_notes`) and their ratings of
    explanations (:meth:`ratings`, :func:`~attnwidget.annotations.rating_summary`).
    See the module docstring for durability, concurrency and history.

    >>> with Store("rationales.sqlite", labels=["pos", "neg"]) as store:  # doctest: +SKIP
    ...     store.add_items([{"id": "r1", "text": "a truly great film", "label": "pos"}])
    ...     store.save("r1", annotator="ana", spans=[(1, 3)], label="pos")
    """

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
        spans: Any = None,
        label: str | None = None,
        note: str | None = None,
        confidence: float | None = None,
        char_spans: Any = None,
        no_evidence: bool = False,
        guidelines_version: str | None = None,
        seconds: float | None = None,
        suggestion_shown: str | None = None,
        granularity: str | None = None,
    ) -> Annotation:
        """Save ``annotator``'s rationale for an item as a new revision (it becomes current).

        The marks, one of: ``spans``, ``(start, end)`` word indices (into
        ``text.split()``), end exclusive, not overlapping; ``char_spans``,
        ``(start, end)`` character offsets into the text (for text without
        spaces, or marks finer than a word: see :mod:`._chars` for how they
        are checked, merged, and turned into words); or ``spans=[]`` with
        ``no_evidence=True``: the annotator says nothing in the text is
        evidence (kept apart from "not yet annotated"). Empty marks without
        ``no_evidence=True`` are refused, and so are marks with it.

        Recorded with it: ``guidelines_version`` (e.g. a hash of the
        guidelines shown), ``seconds`` spent on the item, ``suggestion_shown``
        (the method whose suggestion was shown) and ``granularity``
        (``"word"``, ``"token"`` or ``"char"``: what the annotator marked;
        default ``"word"`` for ``spans``, ``"char"`` for ``char_spans``).
        Returns the saved annotation once it is committed; on bad input raises
        ``InputError`` and writes nothing.
        """
        ident = _validate.item_id(item_id)
        who = _validate.annotator(annotator)
        where = f"item {ident!r}"
        chosen = _validate.label(label, self._labels, where)
        text = _validate.note(note, where)
        sure = _validate.confidence(confidence, where)
        now = datetime.now(timezone.utc)
        with self._transaction() as conn:
            return save_in(
                conn,
                ident,
                who,
                spans,
                chosen,
                text,
                sure,
                now,
                char_spans=char_spans,
                no_evidence=no_evidence,
                guidelines_version=guidelines_version,
                seconds=seconds,
                suggestion_shown=suggestion_shown,
                granularity=granularity,
            )

    def _read(self, table: str, item_id: str, annotator: str) -> list[Annotation]:
        ident = _validate.item_id(item_id)
        who = _validate.annotator(annotator)
        with self._transaction("DEFERRED") as conn:
            idx, _ = lookup(conn, ident)
            rows = conn.execute(
                f"SELECT {columns(table)} FROM {table} a JOIN items i ON i.idx = a.item_idx"
                " WHERE a.item_idx = ? AND a.annotator = ? ORDER BY a.revision",
                (idx, who),
            ).fetchall()
            return with_sources(conn, [annotation_from_row(row) for row in rows])

    def load(self, item_id: str, *, annotator: str) -> Annotation | None:
        """``annotator``'s current annotation of the item, or None when there is none."""
        found = self._read("annotations", item_id, annotator)
        return found[0] if found else None

    def history(self, item_id: str, *, annotator: str) -> list[Annotation]:
        """Every version ``annotator`` saved for the item, oldest first (reverts and
        adjudications included: each is a revision)."""
        return self._read("history", item_id, annotator)

    def rationale(self, item_id: str, *, annotator: str) -> np.ndarray | None:
        """The annotation as a 0/1 vector over the item's words (None: not annotated).

        A word is 1 when a marked span covers it; for character spans, when a
        span overlaps at least one of its characters (:mod:`._chars`). A
        no-evidence annotation gives all zeros.
        """
        found = self.load(item_id, annotator=annotator)
        if found is None:
            return None
        with self._lock:
            _, n_words = lookup(self._connection(), found.item_id)
        return rationale_vector(found.spans, n_words)

    def char_rationale(self, item_id: str, *, annotator: str) -> np.ndarray | None:
        """The annotation as a 0/1 vector over the item text's characters
        (``len(text)`` long; None: not annotated). Word spans mark their words'
        characters and the spaces between words of one span."""
        found = self.load(item_id, annotator=annotator)
        if found is None:
            return None
        with self._lock:
            _, _, text = lookup_text(self._connection(), found.item_id)
        return char_vector(found.char_spans, len(text))

    def char_spans(self, item_id: str, *, annotator: str) -> tuple[tuple[int, int], ...] | None:
        """The current annotation's ``(start_char, end_char)`` spans (None: not annotated)."""
        found = self.load(item_id, annotator=annotator)
        return None if found is None else found.char_spans

    def annotators(self) -> list[str]:
        """Names of everyone with at least one saved annotation, sorted."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT DISTINCT annotator FROM annotations ORDER BY annotator"
            )
            return [name for (name,) in rows]

    def progress(self, annotator: str, *, assigned_only: bool = False) -> Progress:
        """``(done, total)``: items ``annotator`` has saved, and items in the store
        (``assigned_only=True``: of the items :meth:`assign` gave them).

        A :class:`Progress`: it unpacks and compares as the pair, and
        ``.no_evidence`` says how many of the ``done`` were saved as no evidence.
        """
        who = _validate.annotator(annotator)
        _validate.flag(assigned_only, "assigned_only")
        with self._transaction("DEFERRED") as conn:
            if assigned_only:
                self._check_assigned(conn, who)
                row = conn.execute(
                    "SELECT count(a.item_idx), count(*), coalesce(sum(a.no_evidence), 0)"
                    " FROM assignments s LEFT JOIN annotations a ON a.item_idx = s.item_idx"
                    " AND a.annotator = s.annotator WHERE s.annotator = ?",
                    (who,),
                ).fetchone()
                return Progress(row[0], row[1], row[2])
            (done,) = conn.execute(
                "SELECT count(*) FROM annotations WHERE annotator = ?", (who,)
            ).fetchone()
            (nothing,) = conn.execute(
                "SELECT count(*) FROM annotations WHERE annotator = ? AND no_evidence = 1", (who,)
            ).fetchone()
            (total,) = conn.execute("SELECT count(*) FROM items").fetchone()
        return Progress(done, total, nothing)

    def first_unannotated(
        self, annotator: str, *, start: int = 0, assigned_only: bool = False
    ) -> int | None:
        """Index (in :meth:`items` order) of the first item at or after ``start``
        that ``annotator`` has not saved, or None when there is none
        (``assigned_only=True``: the first such item assigned to them)."""
        who = _validate.annotator(annotator)
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise InputError(f"start={start!r}: pass an item index, an int >= 0")
        _validate.flag(assigned_only, "assigned_only")
        source = "assignments s JOIN items i ON i.idx = s.item_idx" if assigned_only else "items i"
        only = " AND s.annotator = ?" if assigned_only else ""
        with self._transaction("DEFERRED") as conn:
            if assigned_only:
                self._check_assigned(conn, who)
            row = conn.execute(
                f"SELECT i.idx FROM {source} WHERE i.idx >= ?{only} AND NOT EXISTS (SELECT 1"
                " FROM annotations a WHERE a.annotator = ? AND a.item_idx = i.idx)"
                " ORDER BY i.idx LIMIT 1",
                (start, who, who) if assigned_only else (start, who),
            ).fetchone()
        return None if row is None else int(row[0])

    def to_dataframe(self, annotator: str | None = None, *, vectors: bool = False) -> pd.DataFrame:
        """One row per saved (item, annotator), in item order then annotator name.

        Columns: ``item_id``, ``annotator``, ``spans`` (tuple of pairs), ``label``,
        ``note``, ``confidence``, ``saved_at`` (UTC), ``revision``, ``item_label``,
        ``n_words``, ``no_evidence``, ``char_spans``, ``guidelines_version``,
        ``seconds``, ``suggestion_shown``, ``granularity``; with
        ``vectors=True`` also ``rationale``, the 0/1 word vector.
        """
        with self._transaction("DEFERRED") as conn:
            return annotations_frame(conn, annotator, vectors)

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

    # -- other tools' formats and agreement (attnwidget.annotations.formats, .annotator_agreement)
    # Thin wrappers: each returns what the function it names returns (an ImportReport
    # for imports, the path for exports, a datasets.Dataset, an Agreement).

    def import_label_studio(self, path: str | Path, **options: Any) -> Any:
        """Read a Label Studio JSON export; see :func:`.formats.import_label_studio`."""
        from attnwidget.annotations import formats

        return formats.import_label_studio(self, path, **options)

    def export_label_studio(self, path: str | Path, **options: Any) -> Path:
        """Write a Label Studio JSON export; see :func:`.formats.export_label_studio`."""
        from attnwidget.annotations import formats

        return formats.export_label_studio(self, path, **options)

    def import_doccano(self, path: str | Path, **options: Any) -> Any:
        """Read doccano JSONL (a file or a folder); see :func:`.formats.import_doccano`."""
        from attnwidget.annotations import formats

        return formats.import_doccano(self, path, **options)

    def export_doccano(self, path: str | Path, **options: Any) -> Path:
        """Write doccano JSONL; see :func:`.formats.export_doccano`."""
        from attnwidget.annotations import formats

        return formats.export_doccano(self, path, **options)

    def import_prodigy(self, path: str | Path, **options: Any) -> Any:
        """Read Prodigy JSONL; see :func:`.formats.import_prodigy`."""
        from attnwidget.annotations import formats

        return formats.import_prodigy(self, path, **options)

    def export_prodigy(self, path: str | Path, **options: Any) -> Path:
        """Write Prodigy JSONL; see :func:`.formats.export_prodigy`."""
        from attnwidget.annotations import formats

        return formats.export_prodigy(self, path, **options)

    def to_dataset(self, **options: Any) -> Any:
        """A ``datasets.Dataset``, a row per annotation; see :func:`.formats.to_dataset`."""
        from attnwidget.annotations import formats

        return formats.to_dataset(self, **options)

    def agreement(self, **options: Any) -> Any:
        """The annotators' agreement; see :func:`attnwidget.annotations.agreement`."""
        from attnwidget.annotations.annotator_agreement import agreement

        return agreement(self, **options)
