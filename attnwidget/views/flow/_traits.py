"""FlowView's synced traits: what each means, and the checks of the ones users set.

Message schema (traits synced with ``js/src/flow/flow_types.ts`` ``FlowTraits``;
tests/test_fixtures_js.py and the JS tests check that both name the same
traits). L attention layers, n tokens, both of the shown stack:

====================  ===========  ===========================================
trait                 type         meaning
====================  ===========  ===========================================
``_view``             str          ``"flow"``
``stacks``            list[str]    the explanation's stacks: ``["encoder",
                                   "decoder"]`` (encoder–decoder models; the
                                   page shows a picker) or ``["encoder"]`` (every
                                   other model: its only self-attention)
``stack``             str          the shown stack (synced both ways); cross-
                                   attention is drawn by neither
``tokens``            list[str]    n token strings (shown as text, never HTML)
``raw_tokens``        list[str]    the tokenizer's own strings of ``tokens`` (shown
                                   on hover; [] if unknown)
``shape``             list[int]    ``[L, n]``
``fused``             bytes        float32 little-endian C order, shape
                                   ``(fused_layers, n, n)``: head-fused
                                   attention ``W_l`` (no residual) of layers
                                   1 … fused_layers; the page forms ``Â``
                                   (float32, not float16: the page's raw and
                                   rollout numbers then match the kernel's)
``fused_layers``      int          how many layers ``fused`` holds; the page
                                   asks for the others (``request``)
``head_fusion``       str          "mean", "max" or "min"
``query_index``       int          the explained query position, -1 for none
                                   (the encoder stack of an encoder–decoder
                                   model: the query is a decoder position)
``caption``           str          what is explained (plain text)
``methods``           list[str]    path methods available for this input
``summaries``         list[str]    one line per method
``signed``            list[bool]   per method: values can be negative
``local_methods``     list[str]    methods the page computes itself (from
                                   ``fused``): "raw", "rollout"
``version``           int          bumps with every new explanation and stack;
                                   requests and replies carry it, stale ones
                                   are dropped
``selected_method``   str          the drawn method (synced both ways)
``selected_layer``    int          selected node layer 0 … L (synced)
``selected_token``    int          selected token, -1 for none (synced)
``threshold``         float        edges (Â) and path shares below it are not
                                   drawn, 0 … 1 (synced)
``scale``             str          what sets the label colours' range:
                                   "words" (special tokens and the selected
                                   token drawn but left out) or "all" (synced)
====================  ===========  ===========================================

Custom messages (``compute``, ``progress``, ``paths``, ``request``, ``layer``,
``stale``, ``error``) are described and typed in
:mod:`attnwidget.views.flow._messages`; every array is encoded by
:mod:`attnwidget.views.core.buffers`.
"""

from __future__ import annotations

from typing import Any

import traitlets

from attnwidget.views.core.notes import HeadNotesMixin
from attnwidget.views.core.selection import renamed_trait
from attnwidget.views.flow._messages import _FlowMessages
from attnwidget.views.flow._stack import check_layer, check_token
from attnwidget.views.saliency.saliency_view import check_scale

#: Methods the page computes from ``fused`` itself (instantly, and in saved HTML).
LOCAL_METHODS: tuple[str, ...] = ("raw", "rollout")


class FlowTraits(HeadNotesMixin, _FlowMessages):
    """The traits of :class:`~attnwidget.views.flow.flow_view.FlowView` (table above).

    ``notes`` (from :class:`~attnwidget.views.core.notes.HeadNotesMixin`): the
    edge notes panel; an edge note's ``layer`` is the attention layer l, its
    ``from`` a token of node column l and its ``to`` one of column l + 1.
    """

    _notes_kind = "edge"

    _view = traitlets.Unicode("flow").tag(sync=True)

    stacks = traitlets.List(traitlets.Unicode(), default_value=["encoder"], read_only=True).tag(
        sync=True
    )
    tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    #: The tokenizer's own strings of ``tokens`` (``##ing``), shown on hover; [] if unknown.
    raw_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    shape = traitlets.List(traitlets.Int(), default_value=[0, 0], read_only=True).tag(sync=True)
    fused = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    fused_layers = traitlets.Int(0, read_only=True).tag(sync=True)
    head_fusion = traitlets.Unicode("mean", read_only=True).tag(sync=True)
    query_index = traitlets.Int(-1, read_only=True).tag(sync=True)
    caption = traitlets.Unicode("", read_only=True).tag(sync=True)
    methods = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    summaries = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    signed = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    local_methods = traitlets.List(
        traitlets.Unicode(), default_value=list(LOCAL_METHODS), read_only=True
    ).tag(sync=True)
    version = traitlets.Int(0, read_only=True).tag(sync=True)

    stack = traitlets.Unicode("encoder").tag(sync=True)
    """The shown self-attention stack: "encoder" or (encoder–decoder models) "decoder"."""
    selected_method = traitlets.Unicode("rollout").tag(sync=True)
    """The method whose paths are drawn (one of :attr:`methods`)."""
    method = renamed_trait("method", "selected_method")
    selected_layer = traitlets.Int(0).tag(sync=True)
    """The selected node layer: 0 (input tokens) … L (top)."""
    selected_token = traitlets.Int(-1).tag(sync=True)
    """The selected token position, -1 for no selection."""
    threshold = traitlets.Float(0.02).tag(sync=True)
    """Edges with ``Â < threshold`` and paths with a smaller share are not drawn."""
    scale = traitlets.Unicode("words").tag(sync=True)
    """What sets the token labels' colour range: "words" (default: special tokens
    and the selected token, whose own share dwarfs the others, are drawn but
    left out) or "all"."""

    def _check_layer(self, value: Any) -> int:
        return check_layer(value, self.shape[0])

    def _check_token(self, value: Any) -> int:
        return check_token(value, len(self.tokens))

    @traitlets.validate("scale")
    def _validate_scale(self, proposal: dict[str, Any]) -> str:
        return check_scale("FlowView", proposal["value"])

    @traitlets.validate("selected_method")
    def _validate_method(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value not in self.methods:
            raise self._method_error(str(value), list(self.methods))
        return str(value)

    @traitlets.validate("selected_layer")
    def _validate_selected_layer(self, proposal: dict[str, Any]) -> int:
        return self._check_layer(proposal["value"])

    @traitlets.validate("selected_token")
    def _validate_selected_token(self, proposal: dict[str, Any]) -> int:
        return self._check_token(proposal["value"])

    @traitlets.validate("threshold")
    def _validate_threshold(self, proposal: dict[str, Any]) -> float:
        value = float(proposal["value"])
        if not 0.0 <= value <= 1.0:
            raise traitlets.TraitError(f"threshold={value} must be between 0 and 1.")
        return value

    def _method_error(self, method: str, names: list[str]) -> Exception:
        """The error for a method the shown stack does not offer (the view names why)."""
        return traitlets.TraitError(f"selected_method={method!r} is not one of {names}.")
