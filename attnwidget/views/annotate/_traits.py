"""The Annotator's synced traits and their checks (the schema is in
:mod:`attnwidget.views.annotate.annotator`'s docstring); the behaviour is in
:class:`~attnwidget.views.annotate.annotator.Annotator`."""

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
    progress = traitlets.List(traitlets.Int(), [0, 0], read_only=True).tag(sync=True)
    prediction = traitlets.Dict(read_only=True).tag(sync=True)
    methods = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    signed = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    scores = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    shape = traitlets.List(traitlets.Int(), [0, 0], read_only=True).tag(sync=True)
    status = traitlets.Unicode("", read_only=True).tag(sync=True)

    index = traitlets.Int(0).tag(sync=True)
    """The item shown (0..count-1); setting it shows that item."""
    selection = traitlets.List(traitlets.List(traitlets.Int())).tag(sync=True)
    """The marked words: sorted ``[start, end]`` spans, end exclusive."""
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
