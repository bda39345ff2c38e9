"""Rows of the store: the :class:`Annotation` record and the writes that run inside
a caller's transaction (shared by :class:`~.store.Store` and :mod:`.eraser`)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._chars import (
    chars_from_words,
    check_char_spans,
    word_offsets,
    words_from_chars,
)
from attnwidget.annotations.validate import Item, Span
from attnwidget.errors import InputError

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Annotation:
    """One saved rationale: the words ``spans`` (``(start, end)``, end exclusive)
    of an item that one annotator marked, with their label, note and confidence.

    Also (schema 3): ``no_evidence`` (True: the annotator said nothing in the
    text is evidence; ``spans`` is then empty), ``char_spans`` (the same marks
    as character offsets into the item's text, end exclusive),
    ``guidelines_version``, ``seconds`` (time spent on the item),
    ``suggestion_shown`` (the method whose suggestion was shown, or None),
    ``granularity`` (``"word"``, ``"token"`` or ``"char"``: what the annotator
    marked), ``reverted_from`` (the revision an undo restored, see
    :meth:`Store.revert`), ``sources`` (``(annotator, revision)`` pairs of an
    adjudicated annotation, see :meth:`Store.adjudicate`) and ``id`` (the
    history row of this version: unique in the store).
    """

    item_id: str
    annotator: str
    spans: tuple[Span, ...]
    label: str | None
    note: str | None
    confidence: float | None
    saved_at: datetime
    revision: int
    no_evidence: bool = False
    char_spans: tuple[Span, ...] = ()
    guidelines_version: str | None = None
    seconds: float | None = None
    suggestion_shown: str | None = None
    granularity: str = "word"
    reverted_from: int | None = None
    sources: tuple[tuple[str, int], ...] = ()
    id: int | None = None


@dataclass(frozen=True)
class Draft:
    """Checked values of one version to write (everything but item, annotator, time)."""

    spans: tuple[Span, ...]
    char_spans: tuple[Span, ...]
    no_evidence: bool = False
    label: str | None = None
    note: str | None = None
    confidence: float | None = None
    guidelines_version: str | None = None
    seconds: float | None = None
    suggestion_shown: str | None = None
    granularity: str = "word"
    reverted_from: int | None = None


class Progress(tuple[int, int]):
    """``(done, total)`` as before, with ``.done``, ``.total`` and ``.no_evidence``
    (how many of the ``done`` items were saved as no evidence). It unpacks and
    compares as the pair: ``done, total = store.progress("ana")``."""

    no_evidence: int

    def __new__(cls, done: int, total: int, no_evidence: int = 0) -> Progress:
        made = super().__new__(cls, (int(done), int(total)))
        made.no_evidence = int(no_evidence)
        return made

    def __getnewargs__(self) -> tuple[int, int, int]:
        return self[0], self[1], self.no_evidence

    @property
    def done(self) -> int:
        """Items saved (no-evidence ones included)."""
        return self[0]

    @property
    def total(self) -> int:
        """Items counted (all items, or the assigned ones)."""
        return self[1]

    def __repr__(self) -> str:
        return f"Progress(done={self[0]}, total={self[1]}, no_evidence={self.no_evidence})"


def rationale_vector(spans: Any, n_words: int) -> np.ndarray:
    """A 0/1 ``uint8`` array of length ``n_words``: 1 on the words inside ``spans``."""
    import numpy as np

    vector = np.zeros(n_words, dtype=np.uint8)
    for start, end in spans:
        vector[start:end] = 1
    return vector


def _pairs(text: str) -> tuple[Span, ...]:
    return tuple((int(s), int(e)) for s, e in json.loads(text))


def annotation_from_row(row: tuple[Any, ...]) -> Annotation:
    """An :class:`Annotation` from the 8 columns ``COLUMNS, a.revision`` or the
    16 of :func:`columns` (the first 8, then the schema-3 ones)."""
    item_id, annotator, spans, label, note, confidence, saved_at, revision = row[:8]
    found = Annotation(
        item_id,
        annotator,
        _pairs(spans),
        label,
        note,
        confidence,
        datetime.fromisoformat(saved_at),
        int(revision),
    )
    if len(row) == 8:
        return found
    no_evidence, chars, guidelines, seconds, shown, granularity, reverted, ident = row[8:16]
    return replace(
        found,
        no_evidence=bool(no_evidence),
        char_spans=_pairs(chars),
        guidelines_version=guidelines,
        seconds=seconds,
        suggestion_shown=shown,
        granularity=granularity,
        reverted_from=reverted,
        id=None if ident is None else int(ident),
    )


COLUMNS = "i.item_id, a.annotator, a.spans, a.label, a.note, a.confidence, a.saved_at"


def columns(table: str) -> str:
    """Every column of an annotation, from ``annotations`` or ``history`` aliased ``a``
    (joined with ``items`` aliased ``i``), in :func:`annotation_from_row`'s order."""
    ident = "a.history_id" if table == "annotations" else "a.id"
    return (
        f"{COLUMNS}, a.revision, a.no_evidence, a.char_spans, a.guidelines_version, a.seconds,"
        f" a.suggestion_shown, a.granularity, a.reverted_from, {ident}"
    )


def with_sources(conn: sqlite3.Connection, found: list[Annotation]) -> list[Annotation]:
    """``found`` with the ``sources`` of the adjudicated ones filled in."""
    ids = [a.id for a in found if a.id is not None]
    if not ids:
        return found
    sources: dict[int, list[tuple[str, int]]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows = conn.execute(
            "SELECT history_id, annotator, revision FROM adjudication_sources WHERE history_id"
            f" IN ({', '.join('?' * len(chunk))}) ORDER BY history_id, annotator",
            chunk,
        )
        for ident, annotator, revision in rows:
            sources.setdefault(int(ident), []).append((annotator, int(revision)))
    return [replace(a, sources=tuple(sources[a.id])) if a.id in sources else a for a in found]


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
    stored = _stored_items(conn, [item.id for item in items])
    seen: dict[str, Item] = {}
    rows: list[tuple[Any, ...]] = []
    for item in items:
        if item.label is not None:
            _validate.label(item.label, labels, f"item {item.id!r}")
        old: Item | None = seen.get(item.id) or stored.get(item.id)
        if old is not None:
            for name in ("text", "text_pair") + (() if keep_existing_label else ("label",)):
                if getattr(old, name) != getattr(item, name):
                    raise InputError(
                        f"item {item.id!r} is already in the store with a different {name} "
                        f"({getattr(old, name)!r:.60} vs {getattr(item, name)!r:.60}): an id "
                        "names one text for good; give the new item a new id"
                    )
            continue
        words = item.words
        rows.append(
            (
                next_idx,
                item.id,
                item.text,
                item.label,
                item.text_pair,
                json.dumps(words),
                len(words),
            )
        )
        seen[item.id] = item
        next_idx += 1
    conn.executemany(
        "INSERT INTO items (idx, item_id, text, label, text_pair, words, n_words)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return len(rows)


def _stored_items(conn: sqlite3.Connection, ids: list[str]) -> dict[str, Item]:
    """The stored items among ``ids`` (one query per 500 ids, not one per id)."""
    found: dict[str, Item] = {}
    if conn.execute("SELECT 1 FROM items LIMIT 1").fetchone() is None:
        return found  # an empty store: the usual first call
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for ident, text, label, pair in conn.execute(
            f"SELECT item_id, text, label, text_pair FROM items WHERE item_id IN ({marks})", chunk
        ):
            found[ident] = Item(ident, text, label, pair)
    return found


def lookup_text(conn: sqlite3.Connection, item_id: str) -> tuple[int, int, str]:
    """``(idx, n_words, text)`` of an item (unknown ids raise as :func:`lookup` does)."""
    idx, n_words = lookup(conn, item_id)
    (text,) = conn.execute("SELECT text FROM items WHERE idx = ?", (idx,)).fetchone()
    return idx, n_words, str(text)


def marks(
    spans: Any, char_spans: Any, no_evidence: Any, n_words: int, text: str, where: str
) -> tuple[tuple[Span, ...], tuple[Span, ...], bool, str]:
    """Checked ``(word spans, char spans, no_evidence, default granularity)`` of a save."""
    if not isinstance(no_evidence, bool):
        raise InputError(f"{where}: no_evidence={no_evidence!r}; pass True or False")
    if spans is not None and char_spans is not None:
        raise InputError(
            f"{where}: pass spans= (word indices) or char_spans= (character offsets), not both"
        )
    offsets = word_offsets(text)
    if char_spans is not None:
        chars = check_char_spans(char_spans, text, where)
        words, granularity = words_from_chars(chars, offsets), "char"
    elif spans is not None:
        words = _validate.spans(spans, n_words, where)
        chars, granularity = chars_from_words(words, offsets), "word"
    elif no_evidence:
        words, chars, granularity = (), (), "word"
    else:
        raise InputError(
            f"{where}: nothing to save: pass spans=[(start, end), ...] (word indices), "
            "char_spans=[...] (character offsets), or spans=[], no_evidence=True when the "
            "text holds no evidence"
        )
    if no_evidence and words:
        raise InputError(
            f"{where}: no_evidence=True says no word is evidence, but {len(words)} spans are "
            "marked: pass spans=[] with no_evidence=True, or the spans without it"
        )
    if not no_evidence and not words:
        raise InputError(
            f"{where}: spans is empty. To record that the text holds no evidence, pass "
            "no_evidence=True (save(item_id, annotator=..., spans=[], no_evidence=True)); "
            "an item not saved stays 'not yet annotated'"
        )
    return words, chars, no_evidence, granularity


def save_in(
    conn: sqlite3.Connection,
    item_id: str,
    annotator: str,
    spans: Any,
    label: str | None,
    note: str | None,
    confidence: float | None,
    saved_at: datetime,
    *,
    char_spans: Any = None,
    no_evidence: bool = False,
    guidelines_version: Any = None,
    seconds: Any = None,
    suggestion_shown: Any = None,
    granularity: Any = None,
) -> Annotation:
    """Write one annotation inside the caller's transaction.

    ``annotator``, ``label``, ``note`` and ``confidence`` come checked; the
    marks (``spans`` or ``char_spans``, ``no_evidence``) and the schema-3
    values are checked here (see :meth:`Store.save`).
    """
    idx, n_words, text = lookup_text(conn, item_id)
    where = f"item {item_id!r}"
    words, chars, nothing, default = marks(spans, char_spans, no_evidence, n_words, text, where)
    draft = Draft(
        words,
        chars,
        nothing,
        label,
        note,
        confidence,
        _validate.optional_name(guidelines_version, "guidelines_version", where),
        _validate.seconds(seconds, where),
        _validate.optional_name(suggestion_shown, "suggestion_shown", where),
        _validate.granularity(granularity, where) or default,
    )
    return write_in(conn, idx, item_id, annotator, draft, saved_at)


_WRITTEN = (
    "item_idx, annotator, spans, label, note, confidence, saved_at, revision, no_evidence,"
    " char_spans, guidelines_version, seconds, suggestion_shown, granularity, reverted_from"
)


def write_in(
    conn: sqlite3.Connection,
    idx: int,
    item_id: str,
    annotator: str,
    draft: Draft,
    saved_at: datetime,
) -> Annotation:
    """Append ``draft`` as the next revision of (item, annotator) and make it current."""
    row = conn.execute(
        "SELECT revision FROM annotations WHERE item_idx = ? AND annotator = ?", (idx, annotator)
    ).fetchone()
    revision = 1 if row is None else int(row[0]) + 1
    values = (
        idx,
        annotator,
        json.dumps(draft.spans),
        draft.label,
        draft.note,
        draft.confidence,
        saved_at.isoformat(timespec="microseconds"),
        revision,
        int(draft.no_evidence),
        json.dumps(draft.char_spans),
        draft.guidelines_version,
        draft.seconds,
        draft.suggestion_shown,
        draft.granularity,
        draft.reverted_from,
    )
    marks_ = ", ".join("?" * len(values))
    ident = conn.execute(f"INSERT INTO history ({_WRITTEN}) VALUES ({marks_})", values).lastrowid
    conn.execute(
        f"INSERT OR REPLACE INTO annotations ({_WRITTEN}, history_id) VALUES ({marks_}, ?)",
        (*values, ident),
    )
    return Annotation(
        item_id,
        annotator,
        draft.spans,
        draft.label,
        draft.note,
        draft.confidence,
        saved_at,
        revision,
        draft.no_evidence,
        draft.char_spans,
        draft.guidelines_version,
        draft.seconds,
        draft.suggestion_shown,
        draft.granularity,
        draft.reverted_from,
        (),
        ident,
    )
