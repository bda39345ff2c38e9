"""doccano's JSONL to and from a :class:`~attnwidget.annotations.Store`.

The format, as doccano's documentation describes it ("Export data" and
"Import dataset" in the tutorial, sequence labeling): one JSON object per
line, ``{"id": ..., "text": "...", "label": [[start, end, "TAG"], ...]}``
with character offsets, end exclusive. doccano's intent detection and slot
filling projects write the spans as ``"entities"`` and the text's classes as
``"cats": ["..."]``; both layouts are read. doccano exports one file per user
(``<username>.jsonl`` in its zip) unless its collaborative mode merges them,
so a file holds one annotator.

Mapping onto a store: a line is an item (id: the line's ``id``, else its line
number; label: ``"item_label"`` when present) and one annotation of the
file's annotator (``annotator=``, by default the file's stem: ``ana.jsonl``
is ``ana``'s). Every span is rationale, whatever its tag (``span_label``
picks one tag); the annotation's label is the first of ``cats``. A folder is
read file by file (``*.jsonl``, each its stem's), all in one import.

Export writes that folder: one ``<annotator>.jsonl`` per annotator (or one
file for ``annotator=``), a line per saved annotation with ``id``, ``text``,
``label`` (spans tagged ``span_label``) and ``cats`` when it has a label.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnwidget.annotations import validate as _validate
from attnwidget.annotations._files import write_atomically
from attnwidget.annotations.formats import _common
from attnwidget.annotations.formats._common import ImportReport, Record
from attnwidget.errors import InputError

if TYPE_CHECKING:
    from attnwidget.annotations.store import Store

_FILE_NAME = re.compile(r"[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]*")


def _spans(value: Any, where: str, span_label: str | None) -> list[tuple[int, int]]:
    if not isinstance(value, list):
        raise InputError(f"{where}: the spans are {value!r:.60}, not a list of [start, end, tag]")
    out = []
    for number, triple in enumerate(value):
        at = f"{where}[{number}]"
        if not isinstance(triple, list) or len(triple) != 3:
            raise InputError(f"{at} is {triple!r:.60}; each span is [start, end, 'TAG']")
        start = _common.offset(triple[0], at, "start")
        end = _common.offset(triple[1], at, "end")
        if span_label is None or triple[2] == span_label:
            out.append((start, end))
    return out


def _read(path: Path, annotator: str, span_label: str | None) -> list[Record]:
    records = []
    for number, line in _common.read_jsonl(path):
        where = f"{path.name} line {number}"
        text = _common.need(line, "text", str, where)
        key = "label" if "label" in line else "entities"
        if key not in line:
            raise InputError(f"{where}: no 'label' (or 'entities') key (keys: {sorted(line)})")
        spans = _spans(line[key], f"{where}, {key!r}", span_label)
        cats = line.get("cats") or []
        if not isinstance(cats, list):
            raise InputError(f"{where}: 'cats' is {cats!r:.60}, not a list of class names")
        item = _common.item(line.get("id", number), text, line.get("item_label"), None, where)
        label = str(cats[0]) if cats else None
        records.append(Record(item, annotator, tuple(spans), label, where))
    return records


def import_doccano(
    store: Store,
    path: str | Path,
    *,
    annotator: str | None = None,
    span_label: str | None = None,
    on_conflict: str = "refuse",
) -> ImportReport:
    """Read a doccano JSONL file (or a folder of them, one per annotator) into ``store``.

    ``annotator``: whose annotations a file holds (None: the file's stem; not
    allowed with a folder). ``span_label``: only spans with this tag (None:
    all). ``on_conflict`` and the all-or-nothing checks: see
    :mod:`attnwidget.annotations.formats`. Returns an :class:`ImportReport`.
    """
    source = Path(path)
    if source.is_dir():
        if annotator is not None:
            raise InputError(
                f"{source} is a folder: its files are read as their stems' annotators; "
                "pass one file with annotator=..., or the folder without"
            )
        files = sorted(source.glob("*.jsonl"))
        if not files:
            raise InputError(f"{source} holds no *.jsonl file")
    else:
        files = [source]
    records = []
    for file in files:
        who = _validate.annotator(file.stem if annotator is None else annotator)
        records += _read(file, who, span_label)
    return _common.apply(store, records, ImportReport(str(path), "doccano"), on_conflict)


def _lines(store: Store, annotator: str, span_label: str) -> str:
    lines = []
    for item, row in _common.saved_rows(store, annotator):
        record: dict[str, Any] = {"id": item.id, "text": item.text}
        record["label"] = [[s, e, span_label] for s, e in _common.char_spans(item, row)]
        if row.label is not None:
            record["cats"] = [row.label]
        if item.label is not None:
            record["item_label"] = item.label
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return "".join(lines)


def export_doccano(
    store: Store, path: str | Path, *, annotator: str | None = None, span_label: str = "RATIONALE"
) -> Path:
    """Write doccano JSONL: ``annotator``'s annotations to the file ``path``, or
    (``annotator=None``) one ``<annotator>.jsonl`` per annotator in the folder ``path``.

    Annotator names that are not safe file names are refused for the folder
    (export them one by one with ``annotator=``). Returns ``path``.
    """
    target = Path(path)
    if annotator is not None:
        who = _validate.annotator(annotator)
        write_atomically(target, _lines(store, who, span_label))
        return target
    names = store.annotators()
    bad = [name for name in names if not _FILE_NAME.fullmatch(name)]
    if bad:
        raise InputError(
            f"annotator names {bad} cannot be file names; export each with "
            "export_doccano(path, annotator=name)"
        )
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        write_atomically(target / f"{name}.jsonl", _lines(store, name, span_label))
    return target
