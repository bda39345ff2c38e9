"""Undo as revisions: :meth:`Store.revert` restores an earlier version as a new one.

Nothing in a store is ever deleted or rewritten: ``history`` keeps every
version an annotator saved, and an undo appends one more, a copy of the
version asked for. A page's "undo" is therefore ``revert(item, annotator,
to_revision=current - 1)``, and a later "redo" another revert.
"""

from __future__ import annotations

import operator
from datetime import datetime, timezone
from typing import Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._base import StoreBase
from attnwidget.annotations._rows import (
    Annotation,
    Draft,
    annotation_from_row,
    columns,
    lookup,
    with_sources,
    write_in,
)
from attnwidget.errors import InputError


def revision_number(value: Any, what: str = "to_revision") -> int:
    """A revision number: an int >= 1."""
    if isinstance(value, bool):
        raise InputError(f"{what}={value!r}: pass a revision number (an int >= 1)")
    try:
        number = operator.index(value)
    except TypeError:
        raise InputError(
            f"{what}={value!r}: pass a revision number (an int >= 1), as history() lists them"
        ) from None
    if number < 1:
        raise InputError(f"{what}={number}: revisions count from 1; pass an int >= 1")
    return number


class RevisionsMixin(StoreBase):
    """:meth:`revert`, for :class:`~.store.Store`."""

    def revert(self, item_id: str, annotator: str, *, to_revision: int) -> Annotation:
        """Make ``annotator``'s revision ``to_revision`` of the item current again,
        as a NEW revision (an undo that deletes nothing: history grows by one).

        The new revision copies that version's marks (``spans``, ``char_spans``,
        ``no_evidence``), ``label``, ``note``, ``confidence``,
        ``guidelines_version``, ``suggestion_shown`` and ``granularity``; its
        ``reverted_from`` is ``to_revision``, its ``seconds`` None (no time was
        spent on it) and ``saved_at`` now. An adjudicated version keeps its
        rule, reason and sources. Reverting to the current revision is allowed
        (the copy is one more revision). Returns the new annotation once
        committed; an unknown item, an annotator with no annotation of it, or a
        revision not in :meth:`history` raises ``InputError``, writing nothing.
        """
        ident = _validate.item_id(item_id)
        who = _validate.annotator(annotator)
        wanted = revision_number(to_revision)
        with self._transaction() as conn:
            idx, _ = lookup(conn, ident)
            row = conn.execute(
                f"SELECT {columns('history')} FROM history a JOIN items i ON i.idx = a.item_idx"
                " WHERE a.item_idx = ? AND a.annotator = ? AND a.revision = ?",
                (idx, who, wanted),
            ).fetchone()
            if row is None:
                raise self._no_revision(conn, idx, ident, who, wanted)
            old = annotation_from_row(row)
            draft = Draft(
                old.spans,
                old.char_spans,
                old.no_evidence,
                old.label,
                old.note,
                old.confidence,
                old.guidelines_version,
                None,
                old.suggestion_shown,
                old.granularity,
                reverted_from=wanted,
            )
            new = write_in(conn, idx, ident, who, draft, datetime.now(timezone.utc))
            conn.execute(
                "INSERT INTO adjudications (history_id, rule, reason)"
                " SELECT ?, rule, reason FROM adjudications WHERE history_id = ?",
                (new.id, old.id),
            )
            conn.execute(
                "INSERT INTO adjudication_sources (history_id, annotator, revision, source_id)"
                " SELECT ?, annotator, revision, source_id FROM adjudication_sources"
                " WHERE history_id = ?",
                (new.id, old.id),
            )
            return with_sources(conn, [new])[0]

    @staticmethod
    def _no_revision(conn: Any, idx: int, ident: str, who: str, wanted: int) -> InputError:
        (last,) = conn.execute(
            "SELECT max(revision) FROM history WHERE item_idx = ? AND annotator = ?", (idx, who)
        ).fetchone()
        if last is None:
            names = [
                name
                for (name,) in conn.execute(
                    "SELECT DISTINCT annotator FROM history WHERE item_idx = ? ORDER BY 1", (idx,)
                )
            ]
            return InputError(
                f"annotator {who!r} has saved nothing for item {ident!r}, so there is nothing "
                f"to revert (annotators of this item: {', '.join(map(repr, names)) or 'none'})"
            )
        return InputError(
            f"item {ident!r} by {who!r} has revisions 1 to {last}; to_revision={wanted} is not "
            f"one of them (store.history({ident!r}, annotator={who!r}) lists them)"
        )
