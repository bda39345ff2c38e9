"""Annotator: mark human rationales by hand, each save written to a Store at once.

The synced traits and the page's messages are described in
:mod:`attnwidget.views.annotate._traits`; showing an item is in
:mod:`._display`, the page's requests in :mod:`._messages`, undo/redo in
:mod:`._history`, the options of what the annotator sees in :mod:`._options`
and the units a mark covers (words, tokens, characters) in :mod:`._units`.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from attnwidget.annotations import Annotation, Item, Store
from attnwidget.annotations import validate as _validate
from attnwidget.errors import InputError
from attnwidget.views.annotate._display import AnnotatorDisplay
from attnwidget.views.annotate._history import Timeline
from attnwidget.views.annotate._items import (
    ItemOrder,
    choose_labels,
    coerce_items,
    load_items,
    open_store,
    saved_trait,
)
from attnwidget.views.annotate._messages import REQUESTS, answer_page
from attnwidget.views.annotate._model import ModelSide
from attnwidget.views.annotate._options import check_options
from attnwidget.views.core.base import RecordedReply
from attnwidget.views.core.selection import renamed_keyword

log = logging.getLogger(__name__)

#: Writable traits a caller may pass as keywords: applied once the items are loaded.
_STATE = ("index", "selection", "label", "note", "confidence", "overlay", "selected_method")


class Annotator(AnnotatorDisplay):
    """Mark which words of each item justify its label; every save goes to ``store`` at once.

    One item at a time: its words as chips. Click a word to mark it (again to
    unmark it) or drag across words to mark (or, starting on a marked word,
    unmark) them all; marked neighbours form one span. Pick a label with its
    button (or key 1-9). A note and a confidence slider are optional. Enter
    saves and shows the next item; Skip and the arrow keys move without
    saving (unsaved marks are kept for the session and come back with the
    item); "First unannotated" jumps to the first item not saved yet.

    Saving with nothing marked is refused: the page asks for an explicit
    choice, "No evidence" (its button, or key N), stored as the store's
    ``no_evidence=True`` (not the same as leaving the item unannotated),
    shown as such and counted apart in the progress line. Undo (Ctrl+Z, or
    its button) restores the item's previous saved revision and redo
    (Ctrl+Shift+Z or Ctrl+Y) goes forward again, each an ordinary new
    revision in the store (:meth:`Store.revert`); the page says which
    revision is shown. The time spent on an item, from when it is drawn to
    its save (time the page was hidden left out), is saved as ``seconds``.

    Keys (with the widget focused): ←/→ previous/next item; Shift+←/→ move the
    cursor; Space marks/unmarks the unit under the cursor; 1-9 pick a label;
    Enter saves and goes to the next item; N saves "no evidence"; A accepts
    the suggestions; Esc clears the marks; Ctrl+Z / Ctrl+Shift+Z undo / redo.

    Reopening on the same store and annotator resumes at the first item not
    yet saved; a saved item shows its saved marks, label, note and confidence.

    What the annotator sees: the data's label and the model's prediction are
    hidden unless ``show_label=True`` / ``show_prediction=True`` (both anchor
    the annotator); ``guidelines`` are shown in a collapsible panel and their
    version is saved with each save. With ``model`` and ``tokenizer`` (a
    sequence classifier) and ``show_scores=True`` each method's scores
    (:func:`attnwidget.explain`) summed from tokens to words are drawn as an
    overlay the page can hide. With ``suggest="rollout"`` the method's top
    tokens are pre-marked as suggestions (dashed underline) that the
    annotator accepts (A, or "Accept suggestions") or edits; the page warns
    that suggestions anchor, and each save records ``suggestion_shown``.

    Args:
        examples: texts; dicts with ``id``, ``text`` and optionally ``label``
            and ``text_pair``; a pandas DataFrame or a ``datasets.Dataset``
            with those columns (a ClassLabel ``label`` is read as its names).
            Ids default to the position (a DataFrame's index) as a string.
            Each example is one item of the store. None (or left out): the
            store's own items. Named ``items`` before (still accepted for one
            release, with a DeprecationWarning).
        store: a :class:`~attnwidget.annotations.Store` or the path of one
            (opened, or created, with ``labels``). The examples are added to
            it. A store may also be passed as the first argument.
        annotator: the annotator's name (non-empty).
        labels: the label choices (default: the store's; else the model's;
            else the examples' own labels; else no label).
        model, tokenizer: a sequence classifier and its tokenizer (optional;
            ``granularity="token"`` needs only the tokenizer).
        methods: the overlay's methods (default: explain's defaults).
        method_options: per-method options for those methods, as for
            :func:`attnwidget.explain` (checked now: unknown methods, options
            and values are refused before any item is explained).
        show_scores: compute and draw the methods' word scores (default False).
        guidelines: markdown shown in a collapsible panel (a safe subset is
            drawn: headings, lists, emphasis, code; everything is text).
        guidelines_version: saved with each save (default: the first 12
            hex digits of the guidelines' sha256; None without guidelines).
        show_label: show the data's own label (default False).
        show_prediction: show the model's predicted label (default False).
        granularity: what one mark covers: ``"word"`` (default),
            ``"token"`` (the tokenizer's tokens) or ``"char"`` (characters,
            for text without spaces). Token and char marks are saved as
            character spans; each save records the granularity.
        suggest: a method whose top tokens are suggested (default None: off).
        suggest_top: the share of each item's tokens suggested (0, 1].
        assigned_only: show only this annotator's queue of the store's
            assignment (:meth:`Store.assign`); default True when the store
            has one.

    Example::

        ann = Annotator(["a truly great film", "dull"], store="r.sqlite", annotator="ana")
        ann                 # displays; mark words, pick a label, press Enter
        ann.selection = [(1, 3)]
        ann.label = "pos"
        ann.save()          # what Enter does: save, then the next item
    """

    _renamed_keywords: ClassVar[dict[str, str]] = {"items": "examples"}

    def __init__(
        self,
        examples: Any = None,
        *,
        store: Store | str | Path | None = None,
        annotator: str,
        labels: Sequence[str] | None = None,
        model: Any = None,
        tokenizer: Any = None,
        methods: Sequence[str] | None = None,
        method_options: dict[str, dict[str, Any]] | None = None,
        show_scores: bool = False,
        guidelines: str | None = None,
        guidelines_version: str | None = None,
        show_label: bool = False,
        show_prediction: bool = False,
        granularity: str = "word",
        suggest: str | None = None,
        suggest_top: float = 0.2,
        assigned_only: bool | None = None,
        **kwargs: Any,
    ) -> None:
        examples = renamed_keyword(kwargs, "items", "examples", "Annotator", examples)
        if isinstance(examples, Store) and store is None:
            examples, store = None, examples
        if store is None:
            raise TypeError(
                "Annotator() needs a store: Annotator(examples, store='rationales.sqlite', "
                "annotator=...), or Annotator(store=..., annotator=...) for the store's items"
            )
        if "method" in kwargs:
            kwargs["selected_method"] = renamed_keyword(
                kwargs, "method", "selected_method", "Annotator", kwargs.get("selected_method")
            )
        initial = {name: kwargs.pop(name) for name in _STATE if name in kwargs}
        super().__init__(**kwargs)
        who = _validate.annotator(annotator)
        checked = None if examples is None else coerce_items(examples)
        given_model_options = methods is not None or method_options is not None
        alone = tokenizer is not None and granularity == "token" and not given_model_options
        if model is None and (
            (tokenizer is not None and not alone) or show_scores or given_model_options
        ):
            given = "show_scores=True" if show_scores else "tokenizer/methods"
            raise InputError(f"{given} needs a model: pass model= (a sequence classifier)")
        if methods is not None and not show_scores:
            raise InputError("methods= chooses the score overlay's methods: add show_scores=True")
        if method_options is not None and not show_scores:
            raise InputError(
                "method_options= are the score overlay's method options: add show_scores=True"
            )
        self._options = check_options(
            guidelines=guidelines,
            guidelines_version=guidelines_version,
            show_label=show_label,
            show_prediction=show_prediction,
            granularity=granularity,
            suggest=suggest,
            suggest_top=suggest_top,
            assigned_only=assigned_only,
            model=model,
            tokenizer=tokenizer,
        )
        self._tokenizer = tokenizer
        self._model = (
            None
            if model is None
            else ModelSide(
                model,
                tokenizer,
                methods=methods,
                method_options=method_options,
                show_scores=bool(show_scores),
            )
        )
        self._store = open_store(store, labels)
        items, stored_ids, queue = load_items(
            self._store, checked, who, self._options.assigned_only
        )
        # Each example is a store Item (the unit saves are made under); the synced
        # ``item`` trait is the one shown, so the list stays private as _items.
        self._items = items
        self._order = ItemOrder(self._store, items, who, stored_ids)
        self._timeline = Timeline(self._store, who)
        self._drafts: dict[int, tuple[Any, ...]] = {}
        self._unit_cache = OrderedDict()
        self._ready = False
        self._defer_model = False  # a page request runs the model after its reply
        with self.hold_sync():
            self.set_trait("annotator", who)
            self.set_trait("count", len(items))
            self.set_trait("settings", self._options.as_trait(queue))
            self.set_trait("labels", choose_labels(labels, self._store, self._model, items))
            start = self._order.first_unannotated()
            self.set_trait("index", 0 if start is None else start)
            self._show(self.index)
        self._ready = True
        self.on_msg(self._on_message)
        self._run_model()
        for name, value in initial.items():
            setattr(self, name, value)

    # -- Python API ------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The store every save goes to."""
        return self._store

    @property
    def current_item(self) -> Item:
        """The item shown (see :attr:`index`)."""
        return self._items[self.index]

    def save(
        self, *, advance: bool = True, no_evidence: bool = False, seconds: float | None = None
    ) -> Annotation:
        """Save the current marks, label, note and confidence; then (``advance``,
        as Enter does) show the next item. With nothing marked, pass
        ``no_evidence=True`` (the page's "No evidence"). Raises ``InputError``
        and saves nothing when the store refuses them."""
        k = self.index
        saved = self._save(
            k, self.selection, self.label, self.note, self.confidence, no_evidence, seconds
        )
        if advance and k + 1 < self.count:
            self.index = k + 1
        return saved

    def undo(self) -> Annotation:
        """Restore the shown item's previous saved revision (as a new revision)."""
        return self._step(self.index, -1)

    def redo(self) -> Annotation:
        """Go forward again after :meth:`undo` (as a new revision)."""
        return self._step(self.index, 1)

    def accept_suggestions(self) -> list[list[int]]:
        """Mark the suggested units too (what A does in the page); the new selection."""
        mask = [False] * len(self.item.get("words", ()))
        for start, end in [*self.selection, *self.suggested]:
            mask[start:end] = [True] * (end - start)
        from attnwidget.views.annotate._units import runs

        self.selection = runs(mask)
        return self.selection

    def next(self) -> int:
        """Show the next item (unsaved marks are kept); returns the new index."""
        self.index = min(self.index + 1, self.count - 1)
        return self.index

    def previous(self) -> int:
        """Show the previous item (unsaved marks are kept); returns the new index."""
        self.index = max(self.index - 1, 0)
        return self.index

    def jump_to_first_unannotated(self) -> int | None:
        """Show the first item not saved yet; returns its index (None: all are done)."""
        found = self._order.first_unannotated()
        if found is not None:
            self.index = found
        return found

    # -- saving ----------------------------------------------------------------

    def _save(
        self,
        k: int,
        spans: Any,
        label: Any,
        note: Any,
        confidence: Any,
        no_evidence: Any = False,
        seconds: Any = None,
    ) -> Annotation:
        item = self._items[k]
        if label not in ("", None) and self.labels and label not in self.labels:
            raise InputError(
                f"label {label!r} is not one of this annotator's labels {list(self.labels)}; "
                "pick one of them (or '' for none)"
            )
        _validate.flag(no_evidence, "no_evidence")
        marked = list(spans) if isinstance(spans, (list, tuple)) else spans
        if isinstance(marked, list) and not marked and not no_evidence:
            raise InputError(
                f"item {item.id!r}: nothing is marked. Mark the evidence, or record that the "
                "item has none: the 'No evidence' button (key N), save(no_evidence=True)"
            )
        options = self._options
        marks: dict[str, Any] = {"spans": marked}
        units = self._units(k)
        if units is not None and marked:
            checked = _validate.spans(marked, len(units.texts), f"item {item.id!r}")
            marks = {"char_spans": units.to_chars(checked)}
        saved = self._store.save(
            item.id,
            annotator=self.annotator,
            label=label or None,
            note=note or None,
            confidence=confidence,
            no_evidence=no_evidence,
            guidelines_version=options.guidelines_version,
            seconds=_validate.seconds(seconds, f"item {item.id!r}"),
            suggestion_shown=options.suggest,
            granularity=options.granularity,
            **marks,
        )
        self._timeline.saved(item.id, saved.revision)
        self._stored(k, saved)
        return saved

    def _step(self, k: int, by: int) -> Annotation:
        restored = self._timeline.step(self._items[k].id, by)
        self._stored(k, restored)
        return restored

    def _stored(self, k: int, saved: Annotation) -> None:
        """Item ``k`` now holds ``saved``: its traits (when shown) and the progress."""
        self._order.mark_done(k, saved.no_evidence)
        self._drafts.pop(k, None)
        with self.hold_sync():
            if k == self.index:
                shown = saved_trait(saved, self._units(k))
                self.set_trait("saved", shown)
                self.set_trait("history", self._timeline.state(saved.item_id, saved))
                self.selection = shown["spans"]
                self.label = saved.label or ""
                self.note = saved.note or ""
                self.confidence = saved.confidence
            self.set_trait("progress", list(self._order.progress()))

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") not in REQUESTS:
            return
        self._defer_model = True
        try:
            reply = self._answer(content)
        finally:
            self._defer_model = False
        self.send(reply)
        self._run_model()

    def _answer(self, content: dict[str, Any]) -> dict[str, Any]:
        """Do what the page asks; the reply to send (after the next item's state)."""
        return answer_page(self, content)

    def _export_replies(self) -> tuple[list[RecordedReply], dict[str, Any] | None]:
        return [], {
            "type": "refused",
            "message": "this is a saved page: it cannot save or show other items (open the "
            "notebook with a running kernel)",
        }

    def _describe_message_part(self, part: str) -> str:
        if part != "item" or not self.item:
            return ""
        found = self._items[int(self.item.get("index", self.index))]
        return f"item {found.id!r} (index {self.index}, {len(found.text):,} characters of text)"

    def __repr__(self) -> str:
        done, total = self.progress[:2]
        return (
            f"Annotator(annotator={self.annotator!r}, index={self.index}, count={self.count}, "
            f"done={done}/{total}, store={str(self._store.path)!r})"
        )
