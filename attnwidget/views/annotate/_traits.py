"""The Annotator's synced traits and their checks; the behaviour is in
:class:`~attnwidget.views.annotate.annotator.Annotator`.

Message schema (traits synced with ``js/src/annotate/annotator_types.ts``
``AnnotatorTraits``; tests/test_fixtures_js.py and the JS tests check that
both name the same traits). The current item has n units (words, tokens or
characters: :mod:`attnwidget.views.annotate._units`):

====================  ==============  =============================================
trait                 type            meaning
====================  ==============  =============================================
``_view``             str             ``"annotator"``: the JS view that renders it
``annotator``         str             who annotates (every save is under this name)
``count``             int             how many items there are (the queue's, with
                                      an assignment)
``item``              dict            the shown item: ``index``, ``id``, ``words``
                                      (the n units, shown as text, never HTML:
                                      ``text.split()`` at word granularity),
                                      ``gaps`` (token/char granularity: the text
                                      after each unit; absent: a space),
                                      ``text_pair`` and ``label`` (the data's own
                                      label; "" if none or not ``show_label``)
``labels``            list[str]       the label buttons, in order (keys 1-9)
``saved``             dict or None    the stored annotation of the item (``spans``
                                      over the units, ``no_evidence``, ``label``,
                                      ``note``, ``confidence``, ``revision``,
                                      ``reverted_from``, ``saved_at``), None if none
``progress``          list[int]       ``[done, total, no_evidence]`` for this
                                      annotator (no_evidence: of the done)
``history``           dict            undo/redo of the item: ``undo``, ``redo``
                                      (bool: possible), ``shown`` (the revision
                                      whose marks are current, None if unsaved)
``settings``          dict            ``guidelines`` (markdown), their
                                      ``guidelines_version``, ``granularity``,
                                      ``suggest`` (the method, "" off),
                                      ``show_label``, ``show_prediction``,
                                      ``queue`` (its length, None: no assignment)
``suggested``         list[list[int]] the suggested units as spans ([] for none)
``prediction``        dict            ``{}`` or the model's ``label``,
                                      ``probability`` and ``truncated`` (the
                                      model saw only the text's first tokens);
                                      only with ``show_prediction=True``
``methods``           list[str]       m methods of the score overlay (show_scores)
``signed``            list[bool]      m flags: diverging colours centred at 0
``scores``            bytes           float32 little-endian (m, n): each method's
                                      token scores summed to words, each unit
                                      given its word's (NaN: a word the model did
                                      not see), a binary buffer
``shape``             list[int]       ``[m, n]`` (``[0, n]`` with no scores)
``status``            str             a note on the item ("" if none), e.g. why
                                      the model could not score it
``index``             int             the item shown, 0..count-1; set it (or call
                                      next()/previous()) to move
``selection``         list[list[int]] the marked units as ``[start, end]`` spans,
                                      end exclusive, sorted, not overlapping;
                                      set by clicks in the page and from Python
``label``             str             the chosen label, "" for none (synced)
``note``              str             the annotator's note (synced)
``confidence``        float or None   0..1, None for not given (synced)
``overlay``           bool            draw the score overlay (the page's toggle)
``selected_method``   str             the overlay's method (synced)
====================  ==============  =============================================

Page -> kernel messages: ``{"type": "save", "request", "index", "item_id",
"spans", "no_evidence", "seconds", "label", "note", "confidence", "advance"}``
(Enter, the Save button, or N / "No evidence" with ``no_evidence: true`` and
no spans), ``{"type": "undo" | "redo", "request", "index", "item_id"}``
(Ctrl+Z, Ctrl+Shift+Z / Ctrl+Y, or the buttons), ``{"type": "go", "request",
"index"}`` (arrows, Skip) and ``{"type": "first", "request"}`` (jump to the
first unannotated item). Replies: ``{"type": "saved", "request", "index",
"item_id", "revision", "progress"}`` (sent after the next item's state, with
``advance``; an undo or redo is answered so too), ``{"type": "shown",
"request", "index"}`` (after a move) or ``{"type": "refused", "request",
"index", "message"}``; a refused save changes nothing and the page keeps its
marks.
"""

from __future__ import annotations

from typing import Any

import traitlets

from attnwidget.annotations import validate as _validate
from attnwidget.errors import InputError
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.selection import renamed_trait


class AnnotatorTraits(_AttnWidget):
    """The traits of :class:`~attnwidget.views.annotate.annotator.Annotator`, validated."""

    _view = traitlets.Unicode("annotator").tag(sync=True)

    annotator = traitlets.Unicode("", read_only=True).tag(sync=True)
    count = traitlets.Int(0, read_only=True).tag(sync=True)
    item = traitlets.Dict(read_only=True).tag(sync=True)
    labels = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    saved = traitlets.Dict(default_value=None, allow_none=True, read_only=True).tag(sync=True)
    progress = traitlets.List(
        traitlets.Int(),
        [0, 0, 0],
        read_only=True,
        help="[done, total, no_evidence] of this annotator's items",
    ).tag(sync=True)
    history = traitlets.Dict(
        read_only=True,
        help="undo/redo of the item shown: undo, redo (possible) and shown (the revision)",
    ).tag(sync=True)
    settings = traitlets.Dict(
        read_only=True,
        help="guidelines, guidelines_version, granularity, suggest, show_label, "
        "show_prediction and queue (its length, None without an assignment)",
    ).tag(sync=True)
    suggested = traitlets.List(
        traitlets.List(traitlets.Int()),
        read_only=True,
        help="the suggested units as [start, end] spans (suggest=)",
    ).tag(sync=True)
    prediction = traitlets.Dict(read_only=True).tag(sync=True)
    methods = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    signed = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    scores = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    shape = traitlets.List(traitlets.Int(), [0, 0], read_only=True).tag(sync=True)
    status = traitlets.Unicode("", read_only=True).tag(sync=True)

    index = traitlets.Int(0).tag(sync=True)
    """The item shown (0..count-1); setting it shows that item."""
    selection = traitlets.List(traitlets.List(traitlets.Int())).tag(sync=True)
    """The marked units (words, tokens or characters): sorted ``[start, end]`` spans,
    end exclusive."""
    label = traitlets.Unicode("").tag(sync=True)
    """The chosen label, "" for none."""
    note = traitlets.Unicode("").tag(sync=True)
    confidence = traitlets.Float(None, allow_none=True).tag(sync=True)
    """0..1, or None for not given."""
    overlay = traitlets.Bool(True).tag(sync=True)
    selected_method = traitlets.Unicode("").tag(sync=True)
    """The overlay's method (one of :attr:`methods`, "" for none)."""
    method = renamed_trait("method", "selected_method")

    # -- validation ------------------------------------------------------------

    @traitlets.validate("index")
    def _validate_index(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        n = self.count
        if isinstance(value, bool) or not 0 <= value < max(n, 1):
            raise traitlets.TraitError(
                f"index={value!r} is not an item: use 0..{n - 1} ({n} items)"
            )
        self._check_fits(int(value))
        return int(value)

    def _check_fits(self, k: int) -> None:
        """Refuse an item the page cannot be sent (the Annotator checks its size)."""

    @traitlets.validate("selection")
    def _validate_selection(self, proposal: dict[str, Any]) -> list[list[int]]:
        n = len(self.item.get("words", ()))
        try:
            spans = _validate.spans(proposal["value"], n, f"item {self.item.get('id')!r}")
        except InputError as error:
            raise traitlets.TraitError(str(error)) from None
        return [list(span) for span in spans]

    @traitlets.validate("label")
    def _validate_label(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value and self.labels and value not in self.labels:
            raise traitlets.TraitError(
                f"label={value!r} is not one of this annotator's labels {list(self.labels)}; "
                "pick one of them (or '' for none)"
            )
        return value

    @traitlets.validate("confidence")
    def _validate_confidence(self, proposal: dict[str, Any]) -> float | None:
        try:
            return _validate.confidence(proposal["value"], "Annotator")
        except InputError as error:
            raise traitlets.TraitError(str(error)) from None

    @traitlets.validate("selected_method")
    def _validate_method(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value and value not in self.methods:
            shown = (
                f"use one of {list(self.methods)}"
                if self.methods
                else "there are no scores (pass model=, tokenizer= and show_scores=True)"
            )
            raise traitlets.TraitError(f"selected_method={value!r} is not in the overlay; {shown}")
        return value
