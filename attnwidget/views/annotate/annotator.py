"""Annotator: mark human rationales by hand, each save written to a Store at once.

Message schema (traits synced with ``js/src/annotate/annotator_types.ts``
``AnnotatorTraits``; tests/test_fixtures_js.py and the JS tests check that
both name the same traits). The current item has n words:

====================  ==============  =============================================
trait                 type            meaning
====================  ==============  =============================================
``_view``             str             ``"annotator"``: the JS view that renders it
``annotator``         str             who annotates (every save is under this name)
``count``             int             how many items there are
``item``              dict            the shown item: ``index``, ``id``, ``words``
                                      (``text.split()``: what spans index, shown as
                                      text, never HTML), ``text_pair`` and
                                      ``label`` (the data's own label; "" if none).
                                      The page draws from it, so words and index
                                      always arrive together
``labels``            list[str]       the label buttons, in order (keys 1-9)
``saved``             dict or None    the stored annotation of the item (``spans``,
                                      ``label``, ``note``, ``confidence``,
                                      ``revision``, ``saved_at``), None if none
``progress``          list[int]       ``[done, total]`` for this annotator
``prediction``        dict            ``{}`` or the model's ``label``,
                                      ``probability`` and ``truncated`` (the
                                      model saw only the text's first tokens)
``methods``           list[str]       m methods of the score overlay (show_scores)
``signed``            list[bool]      m flags: diverging colours centred at 0
``scores``            bytes           float32 little-endian (m, n): each method's
                                      token scores summed to words (NaN: a word
                                      the model did not see), a binary buffer
``shape``             list[int]       ``[m, n]`` (``[0, n]`` with no scores)
``status``            str             a note on the item ("" if none), e.g. why
                                      the model could not score it
``index``             int             the item shown, 0..count-1; set it (or call
                                      next()/previous()) to move
``selection``         list[list[int]] the marked words as ``[start, end]`` spans,
                                      end exclusive, sorted, not overlapping;
                                      set by clicks in the page and from Python
``label``             str             the chosen label, "" for none (synced)
``note``              str             the annotator's note (synced)
``confidence``        float or None   0..1, None for not given (synced)
``overlay``           bool            draw the score overlay (the page's toggle)
``selected_method``   str             the overlay's method (synced)
====================  ==============  =============================================

Page -> kernel messages: ``{"type": "save", "request", "index", "item_id",
"spans", "label", "note", "confidence", "advance"}`` (Enter, or the Save
button), ``{"type": "go", "request", "index"}`` (arrows, Skip) and
``{"type": "first", "request"}`` (jump to the first unannotated item).
Replies: ``{"type": "saved", "request", "index", "item_id", "revision",
"progress"}`` (sent after the next item's state, with ``advance``), ``{"type":
"shown", "request", "index"}`` (after a move) or ``{"type": "refused",
"request", "index", "message"}``; a refused save changes nothing and the page
keeps its marks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import traitlets

from attnwidget.annotations import Annotation, Item, Store
from attnwidget.annotations import validate as _validate
from attnwidget.errors import InputError
from attnwidget.views.annotate._items import (
    ItemOrder,
    check_item_fits,
    choose_labels,
    coerce_items,
    item_trait,
    open_store,
    saved_trait,
    values_of,
)
from attnwidget.views.annotate._messages import answer_page
from attnwidget.views.annotate._model import ModelSide
from attnwidget.views.annotate._traits import AnnotatorTraits
from attnwidget.views.core.base import RecordedReply
from attnwidget.views.core.buffers import encode_float32
from attnwidget.views.core.selection import renamed_keyword

log = logging.getLogger(__name__)

#: Writable traits a caller may pass as keywords: applied once the items are loaded.
_STATE = ("index", "selection", "label", "note", "confidence", "overlay", "selected_method")


class Annotator(AnnotatorTraits):
    """Mark which words of each item justify its label; every save goes to ``store`` at once.

    One item at a time: its words as chips. Click a word to mark it (again to
    unmark it) or drag across words to mark (or, starting on a marked word,
    unmark) them all; marked neighbours form one span. Pick a label with its
    button (or key 1-9); the model's prediction is shown as a hint when a
    model is given. A note and a confidence slider are optional. Enter saves
    and shows the next item; Skip and the arrow keys move without saving
    (unsaved marks are kept for the session and come back with the item);
    "First unannotated" jumps to the first item not saved yet. Saving with no
    word marked records that the item holds no evidence (the store's
    ``no_evidence=True``), which is not the same as leaving it unannotated.

    Keys (with the widget focused): ←/→ previous/next item; Shift+←/→ move the
    word cursor; Space marks/unmarks the word under the cursor; 1-9 pick a
    label; Enter saves and goes to the next item; Esc clears the marks.

    Reopening on the same store and annotator resumes at the first item not
    yet saved; a saved item shows its saved marks, label, note and confidence.

    With ``model`` and ``tokenizer`` (a sequence classifier) each item shows
    the model's predicted label and probability; with ``show_scores=True``
    also each method's scores (:func:`attnwidget.explain`) summed from tokens
    to words (:mod:`attnwidget.annotations.alignment`), as an overlay the page
    can hide. Off by default: seeing the model's scores anchors annotators.

    Args:
        examples: texts; dicts with ``id``, ``text`` and optionally ``label``
            and ``text_pair``; a pandas DataFrame or a ``datasets.Dataset``
            with those columns (a ClassLabel ``label`` is read as its names).
            Ids default to the position (a DataFrame's index) as a string.
            Each example is one item of the store. Named ``items`` before
            (still accepted for one release, with a DeprecationWarning).
        store: a :class:`~attnwidget.annotations.Store` or the path of one
            (opened, or created, with ``labels``). The examples are added to it.
        annotator: the annotator's name (non-empty).
        labels: the label choices (default: the store's; else the model's;
            else the examples' own labels; else no label).
        model, tokenizer: a sequence classifier and its tokenizer (optional).
        methods: the overlay's methods (default: explain's defaults).
        method_options: per-method options for those methods, as for
            :func:`attnwidget.explain` (checked now: unknown methods, options
            and values are refused before any item is explained).
        show_scores: compute and draw the methods' word scores (default False).

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
        store: Store | str | Path,
        annotator: str,
        labels: Sequence[str] | None = None,
        model: Any = None,
        tokenizer: Any = None,
        methods: Sequence[str] | None = None,
        method_options: dict[str, dict[str, Any]] | None = None,
        show_scores: bool = False,
        **kwargs: Any,
    ) -> None:
        examples = renamed_keyword(kwargs, "items", "examples", "Annotator", examples)
        if examples is None:
            raise TypeError(
                "Annotator() needs the examples to annotate: Annotator(examples, store=..., "
                "annotator=...), examples a list of texts or dicts, a DataFrame or a Dataset."
            )
        if "method" in kwargs:
            kwargs["selected_method"] = renamed_keyword(
                kwargs, "method", "selected_method", "Annotator", kwargs.get("selected_method")
            )
        initial = {name: kwargs.pop(name) for name in _STATE if name in kwargs}
        super().__init__(**kwargs)
        who = _validate.annotator(annotator)
        checked = coerce_items(examples)
        given_model_options = methods is not None or method_options is not None
        if model is None and (tokenizer is not None or show_scores or given_model_options):
            given = "show_scores=True" if show_scores else "tokenizer/methods"
            raise InputError(f"{given} needs a model: pass model= (a sequence classifier)")
        if methods is not None and not show_scores:
            raise InputError("methods= chooses the score overlay's methods: add show_scores=True")
        if method_options is not None and not show_scores:
            raise InputError(
                "method_options= are the score overlay's method options: add show_scores=True"
            )
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
        self._store.add_items(checked)
        # Each example is a store Item (the unit saves are made under); the synced
        # ``item`` trait is the one shown, so the list stays private as _items.
        self._items = checked
        self._order = ItemOrder(self._store, checked, who)
        self._drafts: dict[int, tuple[Any, ...]] = {}
        self._ready = False
        self._defer_model = False  # a page request runs the model after its reply
        with self.hold_sync():
            self.set_trait("annotator", who)
            self.set_trait("count", len(checked))
            self.set_trait("labels", choose_labels(labels, self._store, self._model, checked))
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

    def save(self, *, advance: bool = True) -> Annotation:
        """Save the current marks, label, note and confidence; then (``advance``,
        as Enter does) show the next item. Raises ``InputError`` and saves
        nothing when the store refuses them."""
        k = self.index
        saved = self._save(k, self.selection, self.label, self.note, self.confidence)
        if advance and k + 1 < self.count:
            self.index = k + 1
        return saved

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

    # -- showing an item -------------------------------------------------------

    def _values(self) -> tuple[Any, ...]:
        return (tuple(map(tuple, self.selection)), self.label, self.note, self.confidence)

    def _show(self, k: int) -> None:
        """Set the item traits of item ``k`` (inside the caller's hold_sync)."""
        item = self._items[k]
        found = self._store.load(item.id, annotator=self.annotator)
        saved = None if found is None else saved_trait(found)
        draft = self._drafts.get(k)
        if draft is None and saved is not None:
            draft = (saved["spans"], saved["label"], saved["note"], saved["confidence"])
        spans, label, note, confidence = draft or ((), "", "", None)
        self.set_trait("item", item_trait(k, item))
        self.set_trait("saved", saved)
        self.selection = [list(span) for span in spans]
        self.label = label if label in self.labels or not self.labels else ""
        self.note = note
        self.confidence = confidence
        self.set_trait("progress", list(self._order.progress()))
        self.set_trait("prediction", {})
        self.set_trait("status", "")
        self._set_scores(None)

    def _set_scores(self, found: Any) -> None:
        n = len(self._items[self.index].words)
        if found is None:
            data, shape, methods, signed = b"", [0, n], [], []
        else:
            data, shape = encode_float32(found.scores)
            methods, signed = found.methods, found.signed
        self.set_trait("methods", methods)
        self.set_trait("signed", signed)
        self.set_trait("scores", data)
        self.set_trait("shape", shape)
        if methods and self.selected_method not in methods:
            self.selected_method = methods[0]

    def _run_model(self) -> None:
        """The model's prediction and scores for the shown item, sent after the item."""
        if self._model is None:
            return
        k = self.index
        item = self._items[k]
        try:
            prediction = self._model.predict(item)
            scores = self._model.word_scores(item) if self._model.show_scores else None
        except Exception as error:  # never break navigation: say why instead
            log.warning("attnwidget: the model could not score item %r: %s", item.id, error)
            self.set_trait("status", f"the model could not score this item: {error}")
            return
        if self.index != k:
            return
        with self.hold_sync():
            self.set_trait("prediction", prediction.as_trait())
            if scores is not None:
                self._set_scores(scores)
            if prediction.truncated:
                self.set_trait("status", "the model saw only the first tokens of this text")

    def _check_fits(self, k: int) -> None:
        if self._ready:
            check_item_fits(k, self._items[k])

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

    # -- saving ----------------------------------------------------------------

    def _save(self, k: int, spans: Any, label: Any, note: Any, confidence: Any) -> Annotation:
        item = self._items[k]
        if label not in ("", None) and self.labels and label not in self.labels:
            raise InputError(
                f"label {label!r} is not one of this annotator's labels {list(self.labels)}; "
                "pick one of them (or '' for none)"
            )
        marked = list(spans) if isinstance(spans, (list, tuple)) else spans
        saved = self._store.save(
            item.id,
            annotator=self.annotator,
            spans=marked,
            label=label or None,
            note=note or None,
            confidence=confidence,
            # Saving with no word marked is how this page says "no evidence" (the store
            # keeps that apart from "not yet annotated", and refuses empty spans without it).
            no_evidence=isinstance(marked, list) and not marked,
        )
        self._order.mark_done(k)
        self._drafts.pop(k, None)
        with self.hold_sync():
            if k == self.index:
                self.set_trait("saved", saved_trait(saved))
                self.selection = [list(span) for span in saved.spans]
                self.label = saved.label or ""
                self.note = saved.note or ""
                self.confidence = saved.confidence
            self.set_trait("progress", list(self._order.progress()))
        return saved

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") not in ("save", "go", "first"):
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
        done, total = self.progress
        return (
            f"Annotator(annotator={self.annotator!r}, index={self.index}, count={self.count}, "
            f"done={done}/{total}, store={str(self._store.path)!r})"
        )
