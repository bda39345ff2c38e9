"""The Annotator's showing of an item: its traits, then the model's share after it.

Kept apart from :mod:`attnwidget.views.annotate.annotator` (construction,
saving and the page's requests) so each module stays small. Moving to an
item sets its traits at once (its units, the stored annotation or the
session's unsaved draft, progress, undo/redo state); the model's
prediction, score overlay and suggestions follow after the item was sent
(:meth:`AnnotatorDisplay._run_model`), so moving never waits for the model.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

import numpy as np
import traitlets

from attnwidget.annotations import Item, Store
from attnwidget.views.annotate._history import Timeline
from attnwidget.views.annotate._items import (
    ItemOrder,
    check_item_fits,
    item_trait,
    saved_trait,
    values_of,
)
from attnwidget.views.annotate._model import ModelSide
from attnwidget.views.annotate._options import Options
from attnwidget.views.annotate._traits import AnnotatorTraits
from attnwidget.views.annotate._units import Units, unit_words, units_of
from attnwidget.views.core.buffers import encode_float32

log = logging.getLogger(__name__)

#: How many items' units (tokens, characters) are kept.
UNIT_CACHE = 64


class AnnotatorDisplay(AnnotatorTraits):
    """Showing item ``index`` (the state the Annotator's constructor sets up)."""

    _store: Store
    _items: list[Item]
    _order: ItemOrder
    _model: ModelSide | None
    _options: Options
    _tokenizer: Any
    _timeline: Timeline
    _drafts: dict[int, tuple[Any, ...]]
    _ready: bool
    _defer_model: bool
    _unit_cache: OrderedDict[int, Units]

    def _units(self, k: int) -> Units | None:
        """Item ``k``'s units at token/char granularity (None: words, the item's own)."""
        if self._options.granularity == "word":
            return None
        found = self._unit_cache.get(k)
        if found is None:
            found = units_of(self._items[k], self._options.granularity, self._tokenizer)
            self._unit_cache[k] = found
            while len(self._unit_cache) > UNIT_CACHE:
                self._unit_cache.popitem(last=False)
        return found

    def _item_trait(self, k: int) -> dict[str, Any]:
        return item_trait(k, self._items[k], self._units(k), self._options.show_label)

    def _values(self) -> tuple[Any, ...]:
        return (tuple(map(tuple, self.selection)), self.label, self.note, self.confidence)

    def _show(self, k: int) -> None:
        """Set the item traits of item ``k`` (inside the caller's hold_sync)."""
        item = self._items[k]
        units = self._units(k)
        found = self._store.load(item.id, annotator=self.annotator)
        saved = None if found is None else saved_trait(found, units)
        draft = self._drafts.get(k)
        if draft is None and saved is not None:
            draft = (saved["spans"], saved["label"], saved["note"], saved["confidence"])
        spans, label, note, confidence = draft or ((), "", "", None)
        self.set_trait("item", self._item_trait(k))
        self.set_trait("saved", saved)
        self.set_trait("history", self._timeline.state(item.id, found))
        self.selection = [list(span) for span in spans]
        self.label = label if label in self.labels or not self.labels else ""
        self.note = note
        self.confidence = confidence
        self.set_trait("progress", list(self._order.progress()))
        self.set_trait("prediction", {})
        self.set_trait("status", "")
        self.set_trait("suggested", [])
        self._set_scores(None)

    def _set_scores(self, found: Any) -> None:
        n = len(self.item.get("words", ()))
        if found is None:
            data, shape, methods, signed = b"", [0, n], [], []
        else:
            matrix = found.scores
            units = self._units(self.index)
            if units is not None:  # each unit shows the score of the word it is in
                columns = unit_words(units, self._items[self.index].text)
                matrix = np.ascontiguousarray(matrix[:, columns], dtype=np.float32)
            data, shape = encode_float32(matrix)
            methods, signed = found.methods, found.signed
        self.set_trait("methods", methods)
        self.set_trait("signed", signed)
        self.set_trait("scores", data)
        self.set_trait("shape", shape)
        if methods and self.selected_method not in methods:
            self.selected_method = methods[0]

    def _suggested_units(self, k: int, chars: list[tuple[int, int]]) -> list[list[int]]:
        units = self._units(k) or units_of(self._items[k], "word")
        return units.from_chars(chars)

    def _run_model(self) -> None:
        """The model's prediction, scores and suggestions for the shown item, sent after it."""
        model, options = self._model, self._options
        if model is None or not (options.show_prediction or model.show_scores or options.suggest):
            return
        k = self.index
        item = self._items[k]
        try:
            prediction = model.predict(item) if options.show_prediction else None
            scores = model.word_scores(item) if model.show_scores else None
            suggested = (
                None
                if options.suggest is None
                else self._suggested_units(
                    k, model.suggest(item, options.suggest, options.suggest_top)
                )
            )
        except Exception as error:  # never break navigation: say why instead
            log.warning("attnwidget: the model could not score item %r: %s", item.id, error)
            self.set_trait("status", f"the model could not score this item: {error}")
            return
        if self.index != k:
            return
        with self.hold_sync():
            if prediction is not None:
                self.set_trait("prediction", prediction.as_trait())
                if prediction.truncated:
                    self.set_trait("status", "the model saw only the first tokens of this text")
            if scores is not None:
                self._set_scores(scores)
            if suggested is not None:
                self.set_trait("suggested", suggested)

    def _check_fits(self, k: int) -> None:
        if self._ready:
            check_item_fits(k, self._items[k], self._item_trait(k))

    @traitlets.observe("index")
    def _on_index(self, change: dict[str, Any]) -> None:
        if not self._ready:
            return
        old, new = change["old"], change["new"]
        if 0 <= old < len(self._items) and self.item.get("index") == old:
            saved = self.saved
            stored = None if saved is None else values_of(saved)
            values = self._values()
            empty = ((), "", "", None)
            if values != (stored or empty):
                self._drafts[old] = values
            else:
                self._drafts.pop(old, None)
        with self.hold_sync():
            self._show(new)
        if not self._defer_model:
            self._run_model()
