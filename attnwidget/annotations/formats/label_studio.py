"""Label Studio's JSON export to and from a :class:`~attnwidget.annotations.Store`.

The format, as Label Studio's documentation describes it ("Export
annotations and data from Label Studio", the JSON format, and "Label Studio
JSON format of annotated tasks"): a JSON list of tasks; each task has
``data`` (here ``data.text``, the text labelled) and ``annotations``, each
with ``completed_by`` (a user id, or an object with ``id`` and ``email``),
``was_cancelled`` and ``result``, a list of regions. A span region has
``type: "labels"``, ``from_name`` / ``to_name`` (the control and object tags
of the labelling config) and ``value: {start, end, text, labels}`` with
character offsets, end exclusive. A text's class is a ``type: "choices"``
region with ``value: {choices: [...]}``.

Mapping onto a store: a task is an item (id: ``data.id`` when present, else
the task's ``id``; label: ``data.label``; ``data.text_pair``), an annotation
is a (task, annotator) rationale. The annotator is ``completed_by.email``, or
the user id as a string. Every "labels" region whose labels include
``span_label`` (None: any) is part of the rationale; the annotation's label
is its first "choices" value. Cancelled annotations (``was_cancelled``) are
skipped and listed in the report.

Export writes one task per item with ``data: {id, text, label, text_pair}``
and one annotation per saved (item, annotator), ``completed_by: {id, email}``
with the annotator's name as ``email``, a "labels" region per span (tag
``span_label``) and a "choices" region for the label.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnwidget.annotations._files import write_atomically
from attnwidget.annotations.formats import _common
from attnwidget.annotations.formats._common import ImportReport, Record
from attnwidget.errors import InputError

if TYPE_CHECKING:
    from attnwidget.annotations.store import Store


def _annotator(value: Any, where: str) -> str:
    if isinstance(value, dict):
        if isinstance(value.get("email"), str) and value["email"]:
            return str(value["email"])
        value = value.get("id")
    if isinstance(value, (int, str)) and not isinstance(value, bool) and str(value):
        return str(value)
    raise InputError(
        f"{where}: 'completed_by' is {value!r}; pass a user id or an object with 'email'"
    )


def _record(task: dict[str, Any], annotation: Any, where: str, span_label: str | None) -> Any:
    if not isinstance(annotation, dict):
        raise InputError(f"{where} is not a JSON object")
    data = task["data"]
    ident = data.get("id", task.get("id"))
    if ident is None:
        raise InputError(f"{where}: the task has no 'id' and its data no 'id'")
    text = _common.need(data, "text", str, f"{where}, 'data'")
    item = _common.item(ident, text, data.get("label"), data.get("text_pair"), where)
    who = _annotator(annotation.get("completed_by"), where)
    if annotation.get("was_cancelled"):
        return f"{where}: cancelled (was_cancelled) by {who!r}"
    results = _common.need(annotation, "result", list, where)
    spans, label = [], None
    for number, region in enumerate(results):
        at = f"{where}, result[{number}]"
        if not isinstance(region, dict):
            raise InputError(f"{at} is not a JSON object")
        kind = _common.need(region, "type", str, at)
        value = _common.need(region, "value", dict, at)
        if kind == "labels":
            tags = _common.need(value, "labels", list, f"{at}, 'value'")
            if span_label is None or span_label in tags:
                start = _common.offset(value.get("start"), at, "value.start")
                end = _common.offset(value.get("end"), at, "value.end")
                spans.append((start, end))
        elif kind == "choices" and label is None:
            choices = _common.need(value, "choices", list, f"{at}, 'value'")
            label = str(choices[0]) if choices else None
    return Record(item, who, tuple(spans), label, where)


def import_label_studio(
    store: Store, path: str | Path, *, span_label: str | None = None, on_conflict: str = "refuse"
) -> ImportReport:
    """Read a Label Studio JSON export (a list of tasks) into ``store``.

    ``span_label``: only "labels" regions with this tag are rationale (None:
    every one). ``on_conflict`` and the all-or-nothing checks: see
    :mod:`attnwidget.annotations.formats`. Returns an :class:`ImportReport`.
    """
    tasks = _common.read_json(path)
    name = Path(path).name
    if not isinstance(tasks, list):
        raise InputError(
            f"{name} holds a JSON {type(tasks).__name__}; Label Studio's JSON export is a "
            "list of tasks, each with 'data' and 'annotations'"
        )
    report = ImportReport(str(path), "label_studio")
    records = []
    for t, task in enumerate(tasks):
        where = f"{name} task[{t}]"
        if not isinstance(task, dict):
            raise InputError(f"{where} is not a JSON object")
        _common.need(task, "data", dict, where)
        annotations = task.get("annotations", [])
        if not isinstance(annotations, list):
            raise InputError(f"{where}: 'annotations' is not a list")
        for a, annotation in enumerate(annotations):
            found = _record(task, annotation, f"{where}.annotations[{a}]", span_label)
            if isinstance(found, str):
                report.skipped.append(found)
            else:
                records.append(found)
    return _common.apply(store, records, report, on_conflict)


def export_label_studio(
    store: Store, path: str | Path, *, span_label: str = "rationale", annotator: str | None = None
) -> Path:
    """Write ``store`` (every annotator, or ``annotator``) as a Label Studio JSON export.

    Items with no annotation are tasks with no annotations. Returns the path.
    """
    by_item: dict[str, list[Any]] = {}
    for item, row in _common.saved_rows(store, annotator):
        by_item.setdefault(item.id, []).append(row)
    users = {name: k for k, name in enumerate(store.annotators(), 1)}
    tasks = []
    for number, item in enumerate(store.items(), 1):
        annotations: list[dict[str, Any]] = []
        for row in by_item.get(item.id, []):
            result: list[dict[str, Any]] = []
            for k, (start, end) in enumerate(_common.char_spans(item, row)):
                value = {"start": start, "end": end, "text": item.text[start:end]}
                result.append(
                    {
                        "id": f"{item.id}-{row.annotator}-{k}",
                        "from_name": "label",
                        "to_name": "text",
                        "type": "labels",
                        "value": {**value, "labels": [span_label]},
                    }
                )
            if row.label is not None:
                result.append(
                    {
                        "id": f"{item.id}-{row.annotator}-label",
                        "from_name": "choice",
                        "to_name": "text",
                        "type": "choices",
                        "value": {"choices": [row.label]},
                    }
                )
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "completed_by": {"id": users[row.annotator], "email": row.annotator},
                    "was_cancelled": False,
                    "created_at": row.saved_at.isoformat(),
                    "result": result,
                }
            )
        data = {"id": item.id, "text": item.text, "label": item.label}
        if item.text_pair is not None:
            data["text_pair"] = item.text_pair
        tasks.append({"id": number, "data": data, "annotations": annotations, "predictions": []})
    return write_atomically(path, json.dumps(tasks, ensure_ascii=False, indent=1) + "\n")
