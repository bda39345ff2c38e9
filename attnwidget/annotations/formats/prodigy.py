"""Prodigy's JSONL to and from a :class:`~attnwidget.annotations.Store`.

The format, as Prodigy's documentation describes it ("Annotation task
formats", the ``ner_manual`` / ``spans_manual`` interfaces, and "Multi-user
sessions"): one JSON object per line (``prodigy db-out`` writes these) with
``text``, ``spans: [{start, end, label, token_start?, token_end?}]``
(character offsets, end exclusive; ``token_end`` inclusive), optional
``tokens: [{text, start, end, id}]``, ``answer`` (``accept``, ``reject`` or
``ignore``), ``_annotator_id`` (``<dataset>-<session>`` in multi-user
sessions), ``_session_id`` and ``meta``. A choice interface's selected
classes are ``accept: [...]``.

Mapping onto a store: a line is an item (id: ``meta.id``, else ``id``, else
``_input_hash``; label ``meta.item_label``) and one annotation by
``_annotator_id`` (else ``_session_id``, else ``annotator=``). Only
``accept``-ed lines are imported; ``reject`` / ``ignore`` ones are listed in
the report's ``skipped``. Every span is rationale (``span_label`` picks one
label); token offsets are not used (Prodigy's tokens are spaCy's, the store's
words are whitespace-separated). The annotation's label is the first of
``accept``.

Export writes a line per saved annotation with ``text``, ``tokens`` (the
store's words), ``spans`` (character offsets and ``token_start`` /
``token_end`` into those tokens), ``accept`` (the label, when there is one),
``answer: "accept"``, ``_annotator_id``, ``_session_id`` and ``meta.id``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._files import write_atomically
from attnwidget.annotations.formats import _common
from attnwidget.annotations.formats._common import ImportReport, Record
from attnwidget.errors import InputError

if TYPE_CHECKING:
    from attnwidget.annotations.store import Store

ANSWERS = ("accept", "reject", "ignore")


def _line(
    line: dict[str, Any], where: str, annotator: str | None, span_label: str | None
) -> Record | str:
    text = _common.need(line, "text", str, where)
    answer = line.get("answer", "accept")
    if answer not in ANSWERS:
        raise InputError(f"{where}: 'answer' is {answer!r}; Prodigy answers are {ANSWERS}")
    meta = line.get("meta") or {}
    if not isinstance(meta, dict):
        raise InputError(f"{where}: 'meta' is {meta!r:.60}, not an object")
    ident = meta.get("id", line.get("id", line.get("_input_hash")))
    if ident is None:
        raise InputError(f"{where}: no item id: give 'meta.id', 'id' or '_input_hash'")
    who = line.get("_annotator_id", line.get("_session_id", annotator))
    if who is None:
        raise InputError(
            f"{where}: no '_annotator_id' or '_session_id': pass annotator=... to name "
            "whose annotations the file holds"
        )
    who = _validate.annotator(who)
    if answer != "accept":
        return f"{where}: answer {answer!r} by {who!r} (only accepted lines are imported)"
    spans = []
    for number, span in enumerate(line.get("spans") or []):
        at = f"{where}, spans[{number}]"
        if not isinstance(span, dict):
            raise InputError(f"{at} is not an object with 'start', 'end' and 'label'")
        start = _common.offset(span.get("start"), at, "start")
        end = _common.offset(span.get("end"), at, "end")
        if span_label is None or span.get("label") == span_label:
            spans.append((start, end))
    accepted = line.get("accept") or []
    if not isinstance(accepted, list):
        raise InputError(f"{where}: 'accept' is {accepted!r:.60}, not a list of options")
    label = str(accepted[0]) if accepted else None
    item = _common.item(ident, text, meta.get("item_label"), meta.get("text_pair"), where)
    return Record(item, who, tuple(spans), label, where)


def import_prodigy(
    store: Store,
    path: str | Path,
    *,
    annotator: str | None = None,
    span_label: str | None = None,
    on_conflict: str = "refuse",
) -> ImportReport:
    """Read Prodigy JSONL (e.g. from ``prodigy db-out``) into ``store``.

    ``annotator``: the name for lines with neither ``_annotator_id`` nor
    ``_session_id``. ``span_label``: only spans with this label (None: all).
    ``on_conflict`` and the all-or-nothing checks: see
    :mod:`attnwidget.annotations.formats`. Returns an :class:`ImportReport`.
    """
    name = Path(path).name
    report = ImportReport(str(path), "prodigy")
    records = []
    for number, line in _common.read_jsonl(path):
        found = _line(line, f"{name} line {number}", annotator, span_label)
        if isinstance(found, str):
            report.skipped.append(found)
        else:
            records.append(found)
    return _common.apply(store, records, report, on_conflict)


def export_prodigy(
    store: Store, path: str | Path, *, annotator: str | None = None, span_label: str = "RATIONALE"
) -> Path:
    """Write every saved annotation (of ``annotator``; None: all) as Prodigy JSONL."""
    lines = []
    for item, row in _common.saved_rows(store, annotator):
        offsets = _common.word_offsets(item.text)
        tokens = [
            {"text": item.text[s:e], "start": s, "end": e, "id": k}
            for k, (s, e) in enumerate(offsets)
        ]
        spans = [
            {"start": cs, "end": ce, "label": span_label, "token_start": ws, "token_end": we - 1}
            for (cs, ce), (ws, we) in zip(_common.char_spans(item, row), row.spans, strict=True)
        ]
        meta: dict[str, Any] = {"id": item.id}
        if item.label is not None:
            meta["item_label"] = item.label
        if item.text_pair is not None:
            meta["text_pair"] = item.text_pair
        record: dict[str, Any] = {"text": item.text, "tokens": tokens, "spans": spans}
        if row.label is not None:
            record["accept"] = [row.label]
        record.update(
            answer="accept", _annotator_id=row.annotator, _session_id=row.annotator, meta=meta
        )
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return write_atomically(path, "".join(lines))
