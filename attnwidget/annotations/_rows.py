"""Rows of the store: the :class:`Annotation` record and the writes that run inside
a caller's transaction (shared by :class:`~.store.Store` and :mod:`.eraser`)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations.validate import Item, Span
from attnwidget.errors import InputError

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Annotation:
    """One saved rationale: the words ``spans`` (``(start, end)``, end exclusive)
    of an item that one annotator marked, with their label, note and confidence."""

    item_id: str
    annotator: str
    spans: tuple[Span, ...]
    label: str | None
    note: str | None
    confidence: float | None
    saved_at: datetime
    revision: int


def rationale_vector(spans: Any, n_words: int) -> np.ndarray:
    """A 0/1 ``uint8`` array of length ``n_words``: 1 on the words inside ``spans``."""
    import numpy as np

    vector = np.zeros(n_words, dtype=np.uint8)
    for start, end in spans:
        vector[start:end] = 1
    return vector


def annotation_from_row(row: tuple[Any, ...]) -> Annotation:
    item_id, annotator, spans, label, note, confidence, saved_at, revision = row
    return Annotation(
        item_id,
        annotator,
        tuple((int(s), int(e)) for s, e in json.loads(spans)),
        label,
        note,
        confidence,
        datetime.fromisoformat(saved_at),
        int(revision),
    )


COLUMNS = "i.item_id, a.annotator, a.spans, a.label, a.note, a.confidence, a.saved_at"


def lookup(conn: sqlite3.Connection, item_id: str) -> tuple[int, int]:
    row = conn.execute("SELECT idx, n_words FROM items WHERE item_id = ?", (item_id,)).fetchone()
    if row is None:
        (count,) = conn.execute("SELECT count(*) FROM items").fetchone()
        raise InputError(
            f"item {item_id!r} is not in the store (it holds {count} items): register it "
            f"first with store.add_items([{{'id': {item_id!r}, 'text': ...}}])"
        )
    return int(row[0]), int(row[1])


def add_items_in(
    conn: sqlite3.Connection,
    items: list[Item],
    labels: list[str] | None,
    *,
    keep_existing_label: bool = False,
) -> int:
    """Insert ``items`` inside the caller's transaction; return how many were new.

    An id already present (in the store or earlier in ``items``) must come with
    the same text, text_pair and label, or the whole call is refused. With
    ``keep_existing_label`` a stored item's label wins over the given one.
    """
    (next_idx,) = conn.execute("SELECT coalesce(max(idx), -1) + 1 FROM items").fetchone()
    seen: dict[str, Item] = {}
    added = 0
    for item in items:
        _validate.label(item.label, labels, f"item {item.id!r}")
        old: Item | None = seen.get(item.id)
        if old is None:
            row = conn.execute(
                "SELECT text, label, text_pair FROM items WHERE item_id = ?", (item.id,)
            ).fetchone()
            old = None if row is None else Item(item.id, row[0], row[1], row[2])
        if old is not None:
            for name in ("text", "text_pair") + (() if keep_existing_label else ("label",)):
                if getattr(old, name) != getattr(item, name):
                    raise InputError(
                        f"item {item.id!r} is already in the store with a different {name} "
                        f"({getattr(old, name)!r:.60} vs {getattr(item, name)!r:.60}): an id "
                        "names one text for good; give the new item a new id"
                    )
            continue
        conn.execute(
            "INSERT INTO items (idx, item_id, text, label, text_pair, words, n_words)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                next_idx,
                item.id,
                item.text,
                item.label,
                item.text_pair,
                json.dumps(item.words),
                len(item.words),
            ),
        )
        seen[item.id] = item
        next_idx += 1
        added += 1
    return added


def save_in(
    conn: sqlite3.Connection,
    item_id: str,
    annotator: str,
    spans: Any,
    label: str | None,
    note: str | None,
    confidence: float | None,
    saved_at: datetime,
) -> Annotation:
    """Write one annotation inside the caller's transaction (spans checked here)."""
    idx, n_words = lookup(conn, item_id)
    checked = _validate.spans(spans, n_words, f"item {item_id!r}")
    row = conn.execute(
        "SELECT revision FROM annotations WHERE item_idx = ? AND annotator = ?", (idx, annotator)
    ).fetchone()
    revision = 1 if row is None else int(row[0]) + 1
    values = (
        idx,
        annotator,
        json.dumps(checked),
        label,
        note,
        confidence,
        saved_at.isoformat(timespec="microseconds"),
        revision,
    )
    conn.execute(
        "INSERT OR REPLACE INTO annotations"
        " (item_idx, annotator, spans, label, note, confidence, saved_at, revision)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )
    conn.execute(
        "INSERT INTO history"
        " (item_idx, annotator, spans, label, note, confidence, saved_at, revision)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )
    return Annotation(item_id, annotator, checked, label, note, confidence, saved_at, revision)
