"""ModelView: every layer × head as a thumbnail; click one to enlarge it.

Message schema (traits synced with ``js/src/attention/attention_types.ts``
``ModelTraits``; tests/test_fixtures_js.py and the JS tests check that both
name the same traits). ``tokens``, ``decoder_tokens``, ``matrices``,
``sentence_b_start``, ``preload``, ``preload_index``, ``theme``, ``matrix``
and ``pair_filter`` are as in
:mod:`attnwidget.views.attention.head_view`; chunks and lazy loading in
:mod:`attnwidget.views.attention._shared`.

==================  ===========  ==============================================
trait               type         meaning
==================  ===========  ==============================================
``_view``           str          ``"model"``
``thumbs``          bytes        float16 pooled attention of every matrix, per
                                 matrix (L, H, row bins, col bins), C order
``thumb_index``     list[dict]   per matrix: ``matrix``, ``row_edges``,
                                 ``col_edges`` (bin k = tokens
                                 edges[k]..edges[k+1]-1), ``offset``, ``nbytes``
``layer``           int          enlarged layer id, -1 for none (synced)
``head``            int          enlarged head id, -1 for none (synced)
``selected_token``  int          pinned query row of the enlarged head, -1 for
                                 none (synced); always -1 while no head is
                                 enlarged
==================  ===========  ==============================================

The pinned token is a query of the enlarged head: an input token, or for
decoder and cross attention a decoder token (cross attention's queries). It
is kept when another head of the same matrix is enlarged (the queries are the
same tokens), reset to -1 when the head is closed, when the matrix switches to
one with other queries (encoder <-> decoder/cross) and by ``set_explanation``;
setting it while no head is enlarged is an error.

Thumbnails are drawn from attention pooled to at most 48 bins per side (the
mean over a bin's query rows of the sum over its key columns, so pooled rows
still sum to 1); inputs of at most 48 tokens are exact. The sentence-B start
is always a bin edge, so the pair filters stay exact. The enlarged head is
drawn from its full attention, fetched when it is opened.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from attnwidget.results.explanation import Explanation
from attnwidget.views.attention._shared import (
    MAX_MESSAGE_BYTES,
    AttentionSet,
    _AttentionView,
    _describe_ids,
    _position,
    thumbnails,
)
from attnwidget.views.core.notes import NOTE_OPTIONS, HeadNotesMixin
from attnwidget.views.matrix.large_inputs import MODEL_VIEW_TOKENS, matrix_view_for, switch_reason


class ModelView(HeadNotesMixin, _AttentionView):
    """All layers and heads at once: a grid of small line drawings.

    Row l, column h is head h of layer l, drawn like :class:`HeadView` at
    thumbnail size, under "Heads" and "Layers" axis titles; hovering a
    thumbnail names its head and the weight of the line under the pointer
    (pooled beyond 48 tokens, and said so). The enlarged head stays beside
    the grid, which scrolls when both do not fit; hovering its lines shows
    their weights. Click a thumbnail to enlarge it (sets :attr:`layer` and
    :attr:`head`; click it again or × to close); hover a token in the
    enlarged view to see only its lines, click a query token to pin it (sets
    :attr:`selected_token`; click it again or Esc to unpin, ↑/↓ move it; Esc
    with nothing pinned closes the head). Hovering another token still
    previews its lines while one is pinned. Sentence pairs and
    encoder–decoder models get the same filters as :class:`HeadView`.

    Args:
        explanation: the :class:`~attnwidget.Explanation` to show.
        layer, head: the initially enlarged head (default: none).
        selected_token: the initially pinned query row of that head (-1:
            none); needs ``layer``/``head``.
        matrix, pair_filter, theme: as for :class:`HeadView`.
        store, annotator, model_name: a notes panel for the enlarged head
            (a role and a note per layer and head, saved in the store), as
            for :class:`HeadView`; without a store there is none.

    Above 1,024 tokens, or for an explanation that keeps only each layer's
    mean over heads (``explain(..., keep="fused")``), ``ModelView(exp)``
    returns an :class:`~attnwidget.views.matrix.matrix_view.AttentionMatrixView`
    of it instead, with a notice saying why (``layer``, ``head`` and
    ``selected_token`` carry over).

    Example::

        view = ModelView(explanation)
        view                       # click a thumbnail
        view.layer, view.head      # the enlarged head
        view.select(2, 5)          # enlarge layer 2, head 5 from Python
        view.selected_attention    # its float32 (queries, keys) weights
        view.selected_token = 3    # pin query token 3 of the enlarged head
    """

    _view = traitlets.Unicode("model").tag(sync=True)
    # The page asks for one enlarged head at a time (saved pages record per head).
    _request_unit = "head"

    thumbs = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    thumb_index = traitlets.List(traitlets.Dict(), read_only=True).tag(sync=True)

    layer = traitlets.Int(-1).tag(sync=True)
    """The enlarged head's layer id, -1 for none."""
    head = traitlets.Int(-1).tag(sync=True)
    """The enlarged head's id, -1 for none."""

    def __new__(cls, explanation: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        # Long inputs (over MODEL_VIEW_TOKENS) and explanations that keep no
        # per-head attention get the zoomable matrix view (see _large_inputs).
        reason = switch_reason(explanation, MODEL_VIEW_TOKENS, "ModelView")
        if reason is not None:
            given = {k: kwargs.pop(k) for k in ("layer", "matrix", "pair_filter") if k in kwargs}
            kwargs.pop("theme", None)
            for name in NOTE_OPTIONS:  # the matrix view has no notes panel
                kwargs.pop(name, None)
            head = kwargs.pop("head", None)
            token = kwargs.pop("selected_token", -1)
            return matrix_view_for(
                "ModelView",
                explanation,
                reason,
                heads=None if head is None or head < 0 else head,
                selected_token=token,
                options=kwargs,
                owner=cls,
                **given,
            )
        return super().__new__(cls, explanation, *args, **kwargs)

    def __init__(
        self,
        explanation: Explanation | AttentionSet,
        *,
        layer: int | None = None,
        head: int | None = None,
        matrix: str | None = None,
        pair_filter: str = "all",
        selected_token: int = -1,
        theme: str = "auto",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        attention, first = self._first_attention(explanation, matrix)
        key = first.key
        opened = layer is not None or head is not None
        layer_pos = _position(first.layer_ids, layer, "layer") if layer is not None else 0
        head_pos = _position(first.head_ids, head, "head") if head is not None else 0
        with self.hold_sync():
            self.set_trait("matrix", key)
            self._install(attention, (layer_pos, head_pos) if opened else (-1, None))
            self.theme = theme
            self.pair_filter = pair_filter
            if opened:
                self.select(first.layer_ids[layer_pos], first.head_ids[head_pos])
            self.selected_token = selected_token
        self._start_notes(explanation)

    def _install(self, attention: AttentionSet, first: tuple[int, int | None]) -> None:
        """Thumbnails + attention; ``first`` = (layer pos, head pos) to preload, or (-1, None)."""
        data, index = thumbnails(attention)
        # Exact thumbnails (n <= 48) are the full attention already: the page
        # reads enlarged heads from them, so it is not sent twice.
        exact = frozenset(
            i["matrix"]
            for i in index
            if len(i["row_edges"]) - 1 == attention.matrix(i["matrix"]).shape[2]
            and len(i["col_edges"]) - 1 == attention.matrix(i["matrix"]).shape[3]
        )
        # The initial state is one message: thumbnails + preload under the limit.
        budget = MAX_MESSAGE_BYTES - len(data)
        self._set_attention(attention, first, budget, covered=exact)
        self.set_trait("thumbs", data)
        self.set_trait("thumb_index", index)

    def set_explanation(self, explanation: Explanation | AttentionSet) -> None:
        """Show another explanation in this view.

        The pinned token is reset to -1 (a token index of another input means
        another token). The matrix, pair filter and the enlarged head (layer,
        head) are kept where the new explanation has them, else reset (the
        first matrix, "all", none enlarged). Thumbnails are redrawn; the page drops the
        attention it had loaded and gets the new one as a new view would.

        The explanation is validated first: a bad one raises (TypeError,
        :class:`~attnwidget.errors.AttentionShapeError`, ...) and the view stays
        exactly as it was.
        """
        attention = self._attention_of(explanation)
        m = self._kept_matrix(attention)
        opened = self.layer in m.layer_ids and self.head in m.head_ids
        layer, head = (self.layer, self.head) if opened else (-1, -1)
        first = (m.layer_ids.index(layer), m.head_ids.index(head)) if opened else (-1, None)
        with self.hold_sync():
            self.select(-1, -1)  # valid under any attention (unpins too); reopened below
            # Switches the matrix too when the new attention lacks the current one.
            self._install(attention, first)
            self.select(layer, head)
            self._swapped(explanation)

    def select(self, layer: int, head: int) -> None:
        """Enlarge head ``head`` of layer ``layer`` (ids); ``select(-1, -1)`` closes it.

        A pinned token stays pinned in another head; closing unpins it."""
        if (layer == -1) != (head == -1):
            raise traitlets.TraitError(
                f"select({layer}, {head}): give both a layer and a head, or -1 for both."
            )
        with self.hold_trait_notifications():
            self.layer = layer
            self.head = head

    @property
    def selected_attention(self) -> np.ndarray | None:
        """float32 (queries, keys) weights of the enlarged head (no pair filter), or None."""
        if self.layer < 0 or self.head < 0:
            return None
        m = self.current_matrix()
        return np.array(
            m.weights[m.layer_ids.index(self.layer), m.head_ids.index(self.head)],
            dtype=np.float32,
        )

    @traitlets.validate("layer")
    def _validate_layer(self, proposal: dict[str, Any]) -> int:
        return self._layer_position(proposal["value"], allow_none=True)

    @traitlets.validate("head")
    def _validate_head(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise traitlets.TraitError(f"head must be an int, not {value!r}.")
        if self._attention is None or value == -1:
            return int(value)
        ids = self.current_matrix().head_ids
        if int(value) not in ids:
            raise traitlets.TraitError(
                f"head={value} is out of range: use -1 for none or one of the heads shown "
                f"({_describe_ids(ids)})."
            )
        return int(value)

    def _check_pin_allowed(self, value: int) -> None:
        if self.layer == -1 or self.head == -1:
            raise traitlets.TraitError(
                f"selected_token={value} needs an enlarged head (it pins a query token of "
                "the enlarged head), but none is enlarged: enlarge one first with "
                "view.select(layer, head), or pass layer= and head= to ModelView(...) "
                "with selected_token=."
            )

    @traitlets.observe("layer", "head")
    def _pair_up(self, change: dict[str, Any]) -> None:
        # Setting one of the pair from Python opens (or closes) the enlarged
        # view: the other follows, so (layer, head) is always both set or both
        # -1. Closing unpins (a pinned token belongs to the enlarged head).
        if self._attention is None:
            return
        if self.layer == -1 and self.head == -1:
            self.selected_token = -1
            return
        m = self.current_matrix()
        if change["name"] == "layer":
            if self.layer == -1 and self.head != -1:
                self.head = -1
            elif self.layer != -1 and self.head == -1:
                self.head = m.head_ids[0]
        else:
            if self.head == -1 and self.layer != -1:
                self.layer = -1
            elif self.head != -1 and self.layer == -1:
                self.layer = m.layer_ids[0]

    @traitlets.observe("matrix")
    def _on_matrix(self, change: dict[str, Any]) -> None:
        if self._attention is None:
            return
        m = self.current_matrix()
        if self.layer not in (-1, *m.layer_ids) or self.head not in (-1, *m.head_ids):
            self.select(-1, -1)

    def __repr__(self) -> str:
        m = self.current_matrix() if self._attention else None
        shape = f"shape={list(m.shape)}, " if m else ""
        return (
            f"ModelView({shape}matrix={self.matrix!r}, layer={self.layer}, head={self.head}, "
            f"selected_token={self.selected_token})"
        )
