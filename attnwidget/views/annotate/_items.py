"""The Annotator's items and where they stand in the store.

:func:`coerce_items` turns what a caller hands to
:class:`~attnwidget.views.annotate.annotator.Annotator` (texts, dicts, a pandas
DataFrame, a Hugging Face ``datasets.Dataset``) into store
:class:`~attnwidget.annotations.Item` objects, refusing what cannot be
annotated with a message that names the fix. :class:`ItemOrder` answers
"how many are done" and "which is the first not done" for the annotator's
items, in their order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attnwidget.annotations import Annotation, Item, Store
from attnwidget.annotations import validate as _validate
from attnwidget.errors import InputError
from attnwidget.views.annotate._units import Units
from attnwidget.views.core.message_size import MESSAGE_CAP, message_bytes

#: The columns (or keys) an item may have; others are ignored.
COLUMNS = ("id", "text", "label", "text_pair")


def _is_dataframe(items: Any) -> bool:
    return hasattr(items, "columns") and hasattr(items, "to_dict") and hasattr(items, "index")


def _is_dataset(items: Any) -> bool:
    return hasattr(items, "column_names") and hasattr(items, "features")


def _dataset_rows(items: Any) -> list[dict[str, Any]]:
    """A ``datasets.Dataset``'s rows, with a ClassLabel ``label`` as its names."""
    names = [c for c in COLUMNS if c in items.column_names]
    columns = {name: list(items[name]) for name in names}
    feature = items.features.get("label")
    if feature is not None and hasattr(feature, "int2str") and "label" in columns:
        columns["label"] = [
            None if value is None or value < 0 else feature.int2str(int(value))
            for value in columns["label"]
        ]
    return [{name: columns[name][k] for name in names} for k in range(len(items))]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def coerce_items(items: Any) -> list[Item]:
    """Store items from texts, mappings, a DataFrame or a ``datasets.Dataset``.

    A missing id is the item's position (a DataFrame's index value) as a
    string. Refused, naming the fix: no items, a single text or item not in a
    list, an item with no text (or only whitespace), repeated ids.
    """
    if isinstance(items, (str, bytes)):
        raise InputError(
            "examples is one string: pass a list of texts, e.g. Annotator([text], ...), "
            "or of dicts with 'id' and 'text'"
        )
    if isinstance(items, (Mapping, Item)):
        raise InputError("examples is one item: wrap it in a list, e.g. Annotator([item], ...)")
    if _is_dataframe(items):
        frame = items
        keys = [str(value) for value in frame.index]
        rows: list[Any] = frame.to_dict("records")
        if "text" not in frame.columns:
            columns = list(map(str, frame.columns))
            raise InputError(
                f"the DataFrame has no 'text' column (its columns: {columns}); rename the "
                "column that holds the texts: df.rename(columns={'review': 'text'})"
            )
    elif _is_dataset(items):
        if "text" not in items.column_names:
            raise InputError(
                f"the Dataset has no 'text' column (its columns: {items.column_names}); rename "
                "the one that holds the texts: ds.rename_column('sentence', 'text')"
            )
        rows = _dataset_rows(items)
        keys = [str(k) for k in range(len(rows))]
    elif isinstance(items, Iterable):
        rows = list(items)
        keys = [str(k) for k in range(len(rows))]
    else:
        raise InputError(
            f"examples is a {type(items).__name__}: pass a list of texts or dicts, a pandas "
            "DataFrame or a datasets.Dataset (columns id, text, label, text_pair)"
        )
    if not rows:
        raise InputError(
            "examples is empty: there is nothing to annotate; pass at least one text, "
            "e.g. Annotator(['a truly great film'], store=..., annotator=...)"
        )
    out: list[Item] = []
    for position, (key, row) in enumerate(zip(keys, rows, strict=True)):
        if isinstance(row, str):
            row = {"id": key, "text": row}
        elif isinstance(row, Item):
            row = {"id": row.id, "text": row.text, "label": row.label, "text_pair": row.text_pair}
        elif isinstance(row, Mapping):
            row = {name: row[name] for name in COLUMNS if name in row}
            if _missing(row.get("id")):
                row["id"] = key
        else:
            raise InputError(
                f"item {position} is a {type(row).__name__}: pass texts (str) or dicts such "
                "as {'id': 'a1', 'text': 'the words to mark'}"
            )
        text = row.get("text")
        if _missing(text) or (isinstance(text, str) and (not text or text.isspace())):
            raise InputError(
                f"item {position} (id {str(row['id'])!r}) has no text to annotate: give every "
                "item a 'text' with at least one word, or leave that item out"
            )
        out.append(_validate.coerce_item(row, position))
    seen: dict[str, int] = {}
    for position, item in enumerate(out):
        if item.id in seen:
            raise InputError(
                f"items {seen[item.id]} and {position} have the same id {item.id!r}: each item "
                "needs its own id (or leave 'id' out to number them by position)"
            )
        seen[item.id] = position
    return out


class ItemOrder:
    """Progress and the first unannotated item over the annotator's items, in order.

    When the store holds exactly these items in this order (the usual case:
    the store was made for them), it answers from its indexes
    (:meth:`Store.progress`, :meth:`Store.first_unannotated`), which also
    count saves made meanwhile by another process. Otherwise (the items are
    some of a larger store's, in another order, or an annotator's queue) the
    saved ones are looked up once here and counted as this annotator saves.
    ``stored_ids``: the store's item ids in order, when the caller read them.
    """

    def __init__(
        self,
        store: Store,
        items: list[Item],
        annotator: str,
        stored_ids: list[str] | None = None,
    ) -> None:
        self.store = store
        self.annotator = annotator
        self.ids = [item.id for item in items]
        if stored_ids is None:
            stored_ids = [item.id for item in store.items()]
        self.aligned = stored_ids == self.ids
        self._done: set[int] = set()
        self._empty: set[int] = set()
        if not self.aligned:
            for k, ident in enumerate(self.ids):
                found = store.load(ident, annotator=annotator)
                if found is not None:
                    self.mark_done(k, found.no_evidence)

    def __len__(self) -> int:
        return len(self.ids)

    def mark_done(self, index: int, no_evidence: bool = False) -> None:
        """Record that the item at ``index`` was saved (as no evidence or not)."""
        self._done.add(index)
        if no_evidence:
            self._empty.add(index)
        else:
            self._empty.discard(index)

    def progress(self) -> tuple[int, int, int]:
        """``(done, total, no_evidence)`` over these items (no_evidence: of the done)."""
        if self.aligned:
            found = self.store.progress(self.annotator)
            return found.done, found.total, found.no_evidence
        return len(self._done), len(self.ids), len(self._empty)

    def first_unannotated(self, start: int = 0) -> int | None:
        """The first of these items at or after ``start`` not saved yet, or None."""
        if self.aligned:
            return self.store.first_unannotated(self.annotator, start=start)
        return next((k for k in range(start, len(self.ids)) if k not in self._done), None)


def load_items(
    store: Store, checked: list[Item] | None, who: str, wanted: bool | None
) -> tuple[list[Item], list[str], int | None]:
    """Add the examples to the store (only those it lacks); the items to show, the
    store's item ids in order, and the queue's length (None: no queue)."""
    assignment = store.assignment()
    if wanted and assignment is None:
        raise InputError(
            "assigned_only=True shows the annotator's queue, but the store has no "
            "assignment: call store.assign([...names], overlap=...) first, or leave it out"
        )
    stored = store.items()  # one read: what to add, and whether the order matches
    known = {item.id: item for item in stored}
    fresh = [] if checked is None else [item for item in checked if known.get(item.id) != item]
    if fresh:
        store.add_items(fresh)  # an id with other content is refused here
    stored_ids = [item.id for item in stored]
    stored_ids += [item.id for item in fresh if item.id not in known]
    items = stored if checked is None else checked
    if not items:
        raise InputError(
            f"the store {store.path} holds no items: pass the examples to annotate, "
            "Annotator(examples, store=..., annotator=...)"
        )
    if not (assignment is not None if wanted is None else wanted):
        return items, stored_ids, None
    queue = store.queue(who)  # an annotator not in the assignment is refused here
    if not queue:
        raise InputError(
            f"{who!r} has no item in the store's assignment: nothing to annotate "
            "(pass assigned_only=False to see every item)"
        )
    by_id = {item.id: item for item in stored}
    by_id.update({item.id: item for item in items})
    return [by_id[ident] for ident in queue], stored_ids, len(queue)


def open_store(store: Any, labels: Sequence[str] | None) -> Store:
    wanted = _validate.labels_option(labels)
    if isinstance(store, Store):
        if wanted is not None and store.labels is not None and store.labels != wanted:
            raise InputError(
                f"the store {store.path} has the labels {store.labels} but labels={wanted}: "
                f"pass labels={store.labels} (or leave labels out), or use another store"
            )
        return store
    if isinstance(store, (str, Path)):
        return Store(store, labels=wanted)
    raise InputError(
        f"store is a {type(store).__name__}: pass an attnwidget.annotations.Store or a file "
        "path, e.g. store='rationales.sqlite'"
    )


def choose_labels(
    labels: Sequence[str] | None, store: Store, model: Any, items: list[Item]
) -> list[str]:
    if labels is not None:
        return list(labels)
    if store.labels is not None:
        return store.labels
    if model is not None and model.labels:
        return list(model.labels)
    return list(dict.fromkeys(item.label for item in items if item.label))


def item_trait(
    k: int, item: Item, units: Units | None = None, show_label: bool = True
) -> dict[str, Any]:
    """The ``item`` trait: the units to draw (words without ``units``)."""
    out: dict[str, Any] = {
        "index": k,
        "id": item.id,
        "words": list(item.words) if units is None else units.texts,
        "text_pair": item.text_pair or "",
        "label": (item.label or "") if show_label else "",
    }
    if units is not None and units.gaps is not None:
        out["gaps"] = units.gaps
    return out


def check_item_fits(k: int, item: Item, trait: dict[str, Any] | None = None) -> None:
    """Refuse to show item ``k`` when its trait alone would pass the page's message cap.

    Checked before ``index`` changes, so Python and the page keep showing the
    same item; the send-time check (``views.core.message_size``) would only
    refuse the message after the traits had moved.
    """
    size = message_bytes({"item": item_trait(k, item) if trait is None else trait})
    if size > MESSAGE_CAP:
        raise InputError(
            f"Annotator: item {item.id!r} (index {k}, {len(item.text):,} characters of text) "
            f"would be a {size / 2**20:.1f} MiB message, over the {MESSAGE_CAP / 2**20:.0f} MiB "
            "a message to the page may carry (the Jupyter server drops larger ones); split its "
            "text into several items. The annotator stays on the item it shows."
        )


def saved_trait(found: Annotation, units: Units | None = None) -> dict[str, Any]:
    """The ``saved`` trait; ``units``: its marks over them (else its word spans)."""
    spans = (
        [list(span) for span in found.spans]
        if units is None
        else units.from_chars(found.char_spans)
    )
    return {
        "spans": spans,
        "no_evidence": found.no_evidence,
        "label": found.label or "",
        "note": found.note or "",
        "confidence": found.confidence,
        "revision": found.revision,
        "reverted_from": found.reverted_from,
        "saved_at": found.saved_at.isoformat(),
    }


def values_of(saved: dict[str, Any]) -> tuple[Any, ...]:
    spans = tuple(tuple(span) for span in saved["spans"])
    return (spans, saved["label"], saved["note"], saved["confidence"])
