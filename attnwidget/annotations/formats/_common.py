"""What the format modules share: character ↔ word spans (the one place that
knows the store keeps word spans), reading JSON lines, and applying an import
(check everything, then write)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations.validate import Item, Span
from attnwidget.errors import InputError

if TYPE_CHECKING:
    from attnwidget.annotations.store import Store

ON_CONFLICT = ("refuse", "replace", "keep")


@dataclass(frozen=True)
class RoundedSpan:
    """A character span that did not fall on word boundaries, and the words it became
    (``word_span`` None: it covered no word, only whitespace, and was dropped)."""

    where: str
    item_id: str
    annotator: str
    char_span: Span
    word_span: Span | None
    text: str


@dataclass
class ImportReport:
    """What an import did: counts, records left out (``skipped``: ``"where: why"``)
    and character spans moved to word boundaries (``rounded``)."""

    path: str
    format: str
    items_added: int = 0
    saved: int = 0
    unchanged: int = 0
    replaced: int = 0
    kept: int = 0
    skipped: list[str] = field(default_factory=list)
    rounded: list[RoundedSpan] = field(default_factory=list)


@dataclass(frozen=True)
class Record:
    """One annotation read from a file: character spans on ``item.text``."""

    item: Item
    annotator: str
    char_spans: tuple[Span, ...]
    label: str | None
    where: str


# -- characters and words ---------------------------------------------------------------------


def word_offsets(text: str) -> list[Span]:
    """``(start, end)`` character offsets of each word of ``text.split()``."""
    out: list[Span] = []
    start = None
    for position, char in enumerate(text):
        if char.isspace():
            if start is not None:
                out.append((start, position))
                start = None
        elif start is None:
            start = position
    if start is not None:
        out.append((start, len(text)))
    return out


def keeps_chars(store: Store) -> bool:
    """Whether ``store.save`` takes ``char_spans`` (stores of schema 3 on): then
    imports save the file's characters as they are, else the words they overlap.
    The one place that chooses."""
    return "char_spans" in inspect.signature(store.save).parameters


def normalise_chars(text: str, spans: Iterable[Span], where: str) -> tuple[Span, ...]:
    """Checked character spans as the store keeps them: overlapping or touching
    spans merged (sorted), then whitespace at their ends dropped, and spans of
    whitespace only dropped."""
    checked: list[Span] = []
    for start, end in spans:
        if not 0 <= start < end <= len(text):
            raise InputError(
                f"{where}: character span ({start}, {end}) is outside the text's "
                f"{len(text)} characters (0 <= start < end <= {len(text)}, end exclusive)"
            )
        checked.append((start, end))
    merged: list[Span] = []
    for start, end in sorted(checked):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    out: list[Span] = []
    for start, end in merged:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            out.append((start, end))
    return tuple(out)


def char_spans_to_words(
    text: str, spans: Iterable[Span], where: str
) -> tuple[tuple[Span, ...], list[tuple[Span, Span | None]]]:
    """Word spans marking every word a character span overlaps (merged where they
    overlap), and ``(char span, word span or None)`` for each span not on word boundaries."""
    offsets = word_offsets(text)
    marked: list[Span] = []
    rounded: list[tuple[Span, Span | None]] = []
    for start, end in spans:
        if not 0 <= start < end <= len(text):
            raise InputError(
                f"{where}: character span ({start}, {end}) is outside the text's "
                f"{len(text)} characters (0 <= start < end <= {len(text)}, end exclusive)"
            )
        words = [k for k, (ws, we) in enumerate(offsets) if ws < end and start < we]
        if not words:
            rounded.append(((start, end), None))
            continue
        span = (words[0], words[-1] + 1)
        if (start, end) != (offsets[words[0]][0], offsets[words[-1]][1]):
            rounded.append(((start, end), span))
        marked.append(span)
    merged: list[Span] = []
    for start, end in sorted(marked):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged), rounded


def char_spans(item: Item, found: Any) -> list[Span]:
    """An annotation's character spans: those the store kept (schema 3 on), else
    each word span's characters (first word's start to last word's end).
    ``found`` is an Annotation or a ``to_dataframe`` row."""
    kept = getattr(found, "char_spans", None)
    if isinstance(kept, (tuple, list)) and (kept or not found.spans):
        return [(int(s), int(e)) for s, e in kept]
    offsets = word_offsets(item.text)
    return [(offsets[start][0], offsets[end - 1][1]) for start, end in found.spans]


def save(store: Store, item_id: str, annotator: str, marks: tuple[Span, ...], label: Any) -> None:
    """One save through the public API: ``marks`` are character spans when the
    store keeps them (:func:`keeps_chars`), else word spans; an empty rationale
    is an explicit ``no_evidence=True`` where the store asks for it."""
    extra: dict[str, Any] = {}
    if not marks and "no_evidence" in inspect.signature(store.save).parameters:
        extra["no_evidence"] = True
    if marks and keeps_chars(store):
        extra["char_spans"] = list(marks)
    else:
        extra["spans"] = list(marks)
    store.save(item_id, annotator=annotator, label=label, **extra)


# -- files -----------------------------------------------------------------------------------


def read_json(path: str | Path) -> Any:
    source = Path(path)
    if not source.is_file():
        raise InputError(f"{source} is not a file")
    try:
        return json.loads(source.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputError(
            f"{source.name} is not JSON: line {error.lineno}, column {error.colno}: {error.msg}"
        ) from None
    except UnicodeDecodeError as error:
        raise InputError(f"{source.name} is not UTF-8 text ({error.reason})") from None


def read_jsonl(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line; a bad line names its number."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"{source} is not a file")
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise InputError(f"{source.name} is not UTF-8 text ({error.reason})") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{source.name} line {number} is not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise InputError(f"{source.name} line {number} is not a JSON object")
        out.append((number, record))
    return out


def need(record: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``record[key]``, refused with the key's name when missing or of the wrong type."""
    if key not in record:
        raise InputError(f"{where}: no {key!r} key (keys: {sorted(record)})")
    value = record[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError(f"{where}: {key!r} is {value!r:.60}, a {type(value).__name__}")
    return value


def item(ident: Any, text: Any, label: Any, text_pair: Any, where: str) -> Item:
    """A checked :class:`Item` (as ``Store.add_items`` checks it), errors prefixed by ``where``."""
    raw = {"id": ident, "text": text, "label": label, "text_pair": text_pair}
    try:
        return _validate.coerce_item(raw, 0)
    except InputError as error:
        raise InputError(f"{where}: {error}") from None


def offset(value: Any, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: {key!r} is {value!r}; character offsets are integers")
    return value


@dataclass(frozen=True)
class Saved:
    """One saved annotation as the exports read it (from ``Store.to_dataframe``)."""

    annotator: str
    spans: tuple[Span, ...]
    label: str | None
    char_spans: tuple[Span, ...] | None
    saved_at: Any


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None  # the DataFrame's missing label is NaN


def saved_rows(store: Store, annotator: str | None = None) -> list[tuple[Item, Saved]]:
    """``(item, saved)`` for every saved annotation (of ``annotator``), in item order."""
    items = {item.id: item for item in store.items()}
    frame = store.to_dataframe(annotator)
    has_chars = "char_spans" in frame.columns
    out = []
    for row in frame.itertuples(index=False):
        chars = None
        if has_chars and isinstance(row.char_spans, (tuple, list)):
            chars = tuple((int(s), int(e)) for s, e in row.char_spans)
        spans = tuple((int(s), int(e)) for s, e in row.spans)
        saved = Saved(row.annotator, spans, _text(row.label), chars, row.saved_at)
        out.append((items[row.item_id], saved))
    return out


# -- applying an import ------------------------------------------------------------------------


def apply(
    store: Store, records: list[Record], report: ImportReport, on_conflict: str = "refuse"
) -> ImportReport:
    """Check every record, then write: new items in one ``add_items``, then the saves.

    Nothing is written when any record is refused. After the checks the saves
    cannot be refused, so only a crash can interrupt them; importing the same
    file again then saves the rest (what was saved is ``unchanged``).
    """
    if on_conflict not in ON_CONFLICT:
        raise InputError(f"on_conflict={on_conflict!r}: pass one of {list(ON_CONFLICT)}")
    chars = keeps_chars(store)
    stored = {item.id: item for item in store.items()}
    new: dict[str, Item] = {}
    seen: dict[tuple[str, str], str] = {}
    planned: list[tuple[Record, tuple[Span, ...]]] = []
    for record in records:
        item, where = record.item, record.where
        who = _validate.annotator(record.annotator)
        _validate.label(record.label, store.labels, where)
        _validate.label(item.label, store.labels, where)
        known = stored.get(item.id) or new.get(item.id)
        if known is None:
            new[item.id] = item
        elif (known.text, known.text_pair) != (item.text, item.text_pair):
            what = "text" if known.text != item.text else "text_pair"
            raise InputError(
                f"{where}: item {item.id!r} is already in the store (or earlier in the file) "
                f"with a different {what} ({getattr(known, what)!r:.50} vs "
                f"{getattr(item, what)!r:.50}); an id names one text for good"
            )
        key = (item.id, who)
        if key in seen:
            raise InputError(
                f"{where}: a second annotation of item {item.id!r} by {who!r} (the first is at "
                f"{seen[key]}); a store keeps one annotation per item and annotator"
            )
        seen[key] = where
        spans, rounded = char_spans_to_words(item.text, record.char_spans, where)
        for char_span, word_span in rounded:
            text = item.text[char_span[0] : char_span[1]]
            report.rounded.append(RoundedSpan(where, item.id, who, char_span, word_span, text))
        if chars:
            spans = normalise_chars(item.text, record.char_spans, where)
        planned.append((record, spans))
    writes: list[tuple[Record, tuple[Span, ...]]] = []
    conflicts: list[str] = []
    for record, spans in planned:
        old = None
        if record.item.id in stored:
            old = store.load(record.item.id, annotator=record.annotator)
        if old is None:
            writes.append((record, spans))
        elif (tuple(old.char_spans if chars else old.spans), old.label) == (spans, record.label):
            report.unchanged += 1
        elif on_conflict == "keep":
            report.kept += 1
        else:
            conflicts.append(
                f"{record.where}: item {record.item.id!r} by {record.annotator!r} is stored "
                f"with spans {list(old.char_spans if chars else old.spans)} label "
                f"{old.label!r}, the file has "
                f"{list(spans)} label {record.label!r}"
            )
            writes.append((record, spans))
    if conflicts and on_conflict == "refuse":
        raise InputError(
            f"{len(conflicts)} annotation(s) in the file differ from those in the store; "
            "nothing was written. Pass on_conflict='replace' to save the file's (history "
            f"keeps the old) or on_conflict='keep' to keep the store's. First: {conflicts[0]}"
        )
    report.replaced = len(conflicts) if on_conflict == "replace" else 0
    report.items_added = store.add_items(list(new.values())) if new else 0
    for record, spans in writes:
        save(store, record.item.id, record.annotator, spans, record.label)
        report.saved += 1
    return report
