"""A Hugging Face ``datasets.Dataset`` from a :class:`~attnwidget.annotations.Store`, and back.

``datasets``' documentation ("Create a dataset", ``Dataset.from_list`` /
``Dataset.from_dict``; "Load" for the formats it then writes: Parquet, JSON
lines, CSV, the Hub) describes the table built here: one row per saved
(item, annotator), with the columns of :data:`COLUMNS`:

* ``item_id``, ``text``, ``text_pair``, ``item_label``: the item;
* ``annotator``, ``label``: who annotated it and the label they gave;
* ``spans``: word spans ``[start, end]`` into ``text.split()``, end exclusive;
* ``char_spans``: the same as character offsets ``[start, end]``, end exclusive;
* ``rationale``: the 0/1 word vector (one int per word), what metrics take.

:func:`from_dataset` reads such a table (any object ``datasets`` can iterate
row by row, or a list of dicts) back: ``char_spans`` when it has them, else
``spans``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from attnwidget.annotations.formats import _common
from attnwidget.annotations.formats._common import ImportReport, Record
from attnwidget.errors import InputError

if TYPE_CHECKING:
    import datasets  # type: ignore[import-untyped,unused-ignore]

    from attnwidget.annotations.store import Store

COLUMNS = (
    "item_id",
    "text",
    "text_pair",
    "item_label",
    "annotator",
    "label",
    "spans",
    "char_spans",
    "rationale",
)


def to_dataset(store: Store, *, annotator: str | None = None) -> datasets.Dataset:
    """One row per saved (item, annotator) (of ``annotator``; None: all), in item order."""
    try:
        import datasets  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - datasets is a test dependency
        raise ImportError("Store.to_dataset needs datasets: pip install datasets") from None
    rows: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for item, row in _common.saved_rows(store, annotator):
        marks = [0] * len(item.words)
        for start, end in row.spans:
            marks[start:end] = [1] * (end - start)
        values = {
            "item_id": item.id,
            "text": item.text,
            "text_pair": item.text_pair,
            "item_label": item.label,
            "annotator": row.annotator,
            "label": row.label,
            "spans": [[s, e] for s, e in row.spans],
            "char_spans": [[s, e] for s, e in _common.char_spans(item, row)],
            "rationale": marks,
        }
        for name in COLUMNS:
            rows[name].append(values[name])
    features = datasets.Features(
        {
            **{name: datasets.Value("string") for name in COLUMNS[:6]},
            "spans": datasets.Sequence(datasets.Sequence(datasets.Value("int64"))),
            "char_spans": datasets.Sequence(datasets.Sequence(datasets.Value("int64"))),
            "rationale": datasets.Sequence(datasets.Value("int8")),
        }
    )
    return datasets.Dataset.from_dict(rows, features=features)


def from_dataset(store: Store, dataset: Any, *, on_conflict: str = "refuse") -> ImportReport:
    """Save the rows of a table like :func:`to_dataset`'s into ``store``.

    Each row needs ``item_id``, ``text``, ``annotator`` and ``char_spans`` or
    ``spans``; ``label``, ``item_label`` and ``text_pair`` are optional.
    ``on_conflict`` and the all-or-nothing checks: see
    :mod:`attnwidget.annotations.formats`.
    """
    if isinstance(dataset, (str, bytes, dict)) or not isinstance(dataset, Iterable):
        raise InputError(
            f"from_dataset takes a datasets.Dataset or a list of row dicts, got a "
            f"{type(dataset).__name__}"
        )
    records = []
    for number, row in enumerate(dataset):
        where = f"row {number}"
        if not isinstance(row, dict):
            raise InputError(f"{where} is a {type(row).__name__}, not a row of named columns")
        for key in ("item_id", "text", "annotator"):
            _common.need(row, key, (str, int), where)
        item = _common.item(
            row["item_id"], row["text"], row.get("item_label"), row.get("text_pair"), where
        )
        if row.get("char_spans") is not None:
            pairs = row["char_spans"]
            key = "char_spans"
        elif row.get("spans") is not None:
            offsets = _common.word_offsets(item.text)
            pairs, key = [], "spans"
            for pair in row["spans"]:
                start, end = (_common.offset(v, where, "spans") for v in _pair(pair, where))
                if not 0 <= start < end <= len(offsets):
                    raise InputError(f"{where}: word span {pair!r} is outside the text's words")
                pairs.append((offsets[start][0], offsets[end - 1][1]))
        else:
            raise InputError(f"{where}: no 'char_spans' or 'spans' key (keys: {sorted(row)})")
        spans = tuple(
            tuple(_common.offset(v, where, key) for v in _pair(pair, where)) for pair in pairs
        )
        label = row.get("label")
        records.append(Record(item, str(row["annotator"]), spans, label, where))  # type: ignore[arg-type]
    return _common.apply(store, records, ImportReport("<dataset>", "dataset"), on_conflict)


def _pair(value: Any, where: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InputError(f"{where}: span {value!r} is not a pair [start, end]")
    parts = list(value)
    if len(parts) != 2:
        raise InputError(f"{where}: span {value!r} is not a pair [start, end]")
    return parts
