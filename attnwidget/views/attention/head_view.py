"""HeadView: lines from each token to the tokens it attends to, one colour per head.

Message schema (traits synced with ``js/src/attention/attention_types.ts``
``HeadTraits``; tests/test_fixtures_js.py and the JS tests check that both
name the same traits). Wire format, chunks and the lazy-loading messages are
described in :mod:`attnwidget.views.attention._shared`.

=====================  ===========  ==========================================
trait                  type         meaning
=====================  ===========  ==========================================
``_view``              str          ``"head"``
``tokens``             list[str]    input (encoder) tokens, shown as text
``raw_tokens``         list[str]    the tokenizer's own strings of ``tokens`` (shown
                                    on hover; [] if unknown)
``decoder_tokens``     list[str]    decoder tokens (encoder–decoder), else []
``matrices``           list[dict]   one per attention kind: ``key`` ("self",
                                    "encoder", "decoder", "cross"), ``label``,
                                    ``rows``/``cols`` (which token list labels
                                    queries/keys), ``shape`` [L, H, rows,
                                    cols], ``layer_ids``, ``head_ids`` (model
                                    numbering, e.g. after include_layers),
                                    ``causal`` (nothing above the diagonal)
``sentence_b_start``   int          first token of sentence B, -1 for none
``preload``            bytes        float16 chunks shipped with the state
``preload_index``      list[dict]   their descriptors + ``offset``/``nbytes``
``theme``              str          "auto" (follow the notebook), "light",
                                    "dark"
``matrix``             str          shown matrix key (synced both ways)
``pair_filter``        str          "all", "A->A", "B->B", "A->B", "B->A"
``layer``              int          shown layer id (synced both ways)
``heads``              list[int]    shown head ids (synced both ways)
``selected_token``     int          pinned query row of the shown matrix, -1
                                    for none (synced both ways); reset when
                                    the matrix's queries are other tokens
=====================  ===========  ==========================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import traitlets

from attnwidget.results.explanation import Explanation
from attnwidget.views.attention._shared import (
    AttentionSet,
    _AttentionView,
    _describe_ids,
    _position,
)
from attnwidget.views.core.notes import NOTE_OPTIONS, HeadNotesMixin
from attnwidget.views.core.selection import NONE
from attnwidget.views.matrix.large_inputs import HEAD_VIEW_TOKENS, matrix_view_for, switch_reason


class HeadView(HeadNotesMixin, _AttentionView):
    """Attention of one layer as lines between two columns of tokens.

    Each token on the left (a query) has a line to every token on the right
    (a key) it attends to, one colour per head. Opacity and width follow the
    weight on a perceptual curve (not bertviz's weight / heads shown, which
    leaves even strong links faint at 12 heads): links under a weight of 0.02
    are not drawn, strong ones are near opaque and thicker. Head colours are
    chosen for 3:1 contrast on light and on dark backgrounds.

    In the page: choose the layer; click a head's coloured box to toggle it,
    double-click to show only it (again: all heads); hover a token to see only
    its lines and, beside the other column, a strip of blocks per token, one
    per head, opacity by weight; hover a line or a block to read its weight
    (query → key, weight, head); click a token to pin it (sets
    :attr:`selected_token`); for
    sentence pairs, filter to A->A, B->B, A->B or B->A; for encoder–decoder
    models, switch between encoder, decoder and cross attention. Causal
    attention shows the keys a pinned query cannot see (later tokens) dimmed.

    Args:
        explanation: the :class:`~attnwidget.Explanation` to show.
        layer: the initial layer (default: the first).
        heads: the initially shown heads (default: all).
        head: one head to show alone (the selected head; default -1: see
            ``heads``). Give ``heads`` or ``head``, not both.
        matrix: "self" (default), or "encoder"/"decoder"/"cross" for
            encoder–decoder explanations (default "encoder").
        pair_filter: "all" (default), or "A->A", "B->B", "A->B", "B->A" when
            the explanation has a ``sentence_b_start``.
        selected_token: the initially pinned query row (-1: none).
        theme: "auto" (default), "light" or "dark".
        store, annotator: an :class:`~attnwidget.annotations.Store` (or its
            path) and who writes: shows a notes panel to label a head with a
            role and a note, saved in the store and shown again by any view
            of the same model (:mod:`attnwidget.views.core.notes`); without a
            store there is no panel.
        model_name: the model the notes are keyed by (default: the
            explanation's ``model_name`` if it has one, else its kind and
            shape, e.g. "encoder, 12 layers x 12 heads": pass the model's id).

    Above 512 tokens, or for an explanation that keeps only each layer's
    mean over heads (``explain(..., keep="fused")``), ``HeadView(exp)``
    returns an :class:`~attnwidget.views.matrix.matrix_view.AttentionMatrixView`
    of it instead (a zoomable heat map whose tiles load on demand), with a
    notice saying why; ``layer``, a single head of ``heads`` and
    ``selected_token`` carry over.

    Example::

        view = HeadView(explanation, layer=3)
        view                   # click a token, a head, another layer ...
        view.layer, view.heads, view.selected_token
        view.selection         # the pinned token's weights in each shown head
    """

    _view = traitlets.Unicode("head").tag(sync=True)

    layer = traitlets.Int(0).tag(sync=True)
    """The shown layer (a layer id of the current matrix)."""
    heads = traitlets.List(traitlets.Int()).tag(sync=True)
    """The shown heads (head ids of the current matrix), ascending."""
    head = traitlets.Int(NONE)
    """The one head shown alone, -1 while several are shown: the selected head, as
    ``head`` is in every view. Setting it shows that head only; -1 shows every head.
    Kept in step with :attr:`heads` (which is what the page syncs)."""
    # selected_token: the pinned query row (_AttentionView, shared with ModelView).

    def __new__(cls, explanation: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        # Long inputs (over HEAD_VIEW_TOKENS) and explanations that keep no
        # per-head attention get the zoomable matrix view (see _large_inputs).
        reason = switch_reason(explanation, HEAD_VIEW_TOKENS, "HeadView")
        if reason is not None:
            names = ("layer", "heads", "matrix", "pair_filter", "selected_token", "theme")
            given = {k: kwargs.pop(k) for k in names if k in kwargs}
            given.pop("theme", None)
            for name in NOTE_OPTIONS:  # the matrix view has no notes panel
                kwargs.pop(name, None)
            head = kwargs.pop("head", NONE)
            if head != NONE:
                given["heads"] = [head]
            return matrix_view_for(
                "HeadView", explanation, reason, options=kwargs, owner=cls, **given
            )
        return super().__new__(cls, explanation, *args, **kwargs)

    def __init__(
        self,
        explanation: Explanation | AttentionSet,
        *,
        layer: int | None = None,
        heads: Sequence[int] | None = None,
        matrix: str | None = None,
        pair_filter: str = "all",
        selected_token: int = -1,
        theme: str = "auto",
        **kwargs: Any,
    ) -> None:
        head = kwargs.pop("head", NONE)
        if head != NONE:
            if heads is not None:
                raise TypeError("HeadView: give heads= or head= (one head shown alone), not both.")
            heads = [head]
        super().__init__(**kwargs)
        attention, first = self._first_attention(explanation, matrix)
        key = first.key
        with self.hold_sync():
            self.set_trait("matrix", key)
            position = 0 if layer is None else _position(first.layer_ids, layer, "layer")
            self._set_attention(attention, (position, None))
            self.theme = theme
            self.pair_filter = pair_filter
            self.layer = first.layer_ids[position]
            self.heads = list(first.head_ids) if heads is None else list(heads)
            self.selected_token = selected_token
        self._start_notes(explanation)

    def set_explanation(self, explanation: Explanation | AttentionSet) -> None:
        """Show another explanation in this view.

        The pinned token is reset to -1 (a token index of another input means
        another token). The matrix, layer, heads and pair filter are kept where
        the new explanation has them, else reset (the first matrix, its first
        layer, all heads, "all"). The page drops the attention it had loaded
        and gets the new one (preloaded or on request, as for a new view).

        The explanation is validated first: a bad one raises (TypeError,
        :class:`~attnwidget.errors.AttentionShapeError`, ...) and the view stays
        exactly as it was.
        """
        attention = self._attention_of(explanation)
        m = self._kept_matrix(attention)
        layer = self.layer if self.layer in m.layer_ids else m.layer_ids[0]
        heads = list(self.heads)
        if not heads or not set(heads) <= set(m.head_ids):
            heads = list(m.head_ids)
        with self.hold_sync():
            self.selected_token = -1
            # Switches the matrix too when the new attention lacks the current one.
            self._set_attention(attention, (m.layer_ids.index(layer), None))
            self.layer = layer
            self.heads = heads
            self._swapped(explanation)

    @property
    def selection(self) -> dict[str, Any] | None:
        """The pinned token: ``{"index", "token", "layer", "heads", "weights"}`` or None.

        ``weights`` is float32 (len(heads), keys): what the pinned query attends
        to in each shown head of the shown layer (all keys, no pair filter).
        """
        i = self.selected_token
        if i < 0:
            return None
        m = self.current_matrix()
        layer = m.layer_ids.index(self.layer)
        heads = [m.head_ids.index(h) for h in self.heads]
        return {
            "index": i,
            "token": self.attention.token_list(m.rows)[i],
            "layer": self.layer,
            "heads": list(self.heads),
            "weights": np.array(m.weights[layer, heads, i], dtype=np.float32),
        }

    # -- validation (every page or Python change goes through these) ---------

    @traitlets.validate("layer")
    def _validate_layer(self, proposal: dict[str, Any]) -> int:
        return self._layer_position(proposal["value"], allow_none=False)

    @traitlets.validate("heads")
    def _validate_heads(self, proposal: dict[str, Any]) -> list[int]:
        value = list(proposal["value"])
        if self._attention is None:
            return value
        ids = self.current_matrix().head_ids
        bad = [h for h in value if isinstance(h, bool) or h not in ids]
        if bad:
            raise traitlets.TraitError(
                f"heads={value} has head(s) {bad} out of range; heads must be ids of the "
                f"heads shown ({_describe_ids(ids)})."
            )
        if len(set(value)) != len(value):
            raise traitlets.TraitError(f"heads={value} lists a head more than once.")
        return sorted(int(h) for h in value)

    @traitlets.validate("head")
    def _validate_head(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        if value == NONE or self._attention is None:
            return int(value)
        ids = self.current_matrix().head_ids
        if isinstance(value, bool) or value not in ids:
            raise traitlets.TraitError(
                f"head={value!r} is not a head id ({_describe_ids(ids)}); -1 shows every head."
            )
        return int(value)

    @traitlets.observe("heads")
    def _on_heads(self, change: dict[str, Any]) -> None:
        shown = change["new"]
        self.head = shown[0] if len(shown) == 1 else NONE

    @traitlets.observe("head")
    def _on_head(self, change: dict[str, Any]) -> None:
        if self._attention is None:
            return
        if change["new"] != NONE:
            self.heads = [change["new"]]
        elif len(self.heads) == 1:
            self.heads = list(self.current_matrix().head_ids)

    @traitlets.observe("matrix")
    def _on_matrix(self, change: dict[str, Any]) -> None:
        # Another matrix may have other layers and heads: keep what still
        # applies, reset the rest (so every trait stays valid; the pinned
        # token: _AttentionView._unpin_other_queries).
        if self._attention is None:
            return
        m = self.current_matrix()
        with self.hold_sync():
            if self.layer not in m.layer_ids:
                self.layer = m.layer_ids[0]
            if not set(self.heads) <= set(m.head_ids):
                self.heads = list(m.head_ids)

    def __repr__(self) -> str:
        m = self.current_matrix() if self._attention else None
        shape = f"shape={list(m.shape)}, " if m else ""
        return (
            f"HeadView({shape}matrix={self.matrix!r}, layer={self.layer}, heads={self.heads}, "
            f"selected_token={self.selected_token})"
        )
