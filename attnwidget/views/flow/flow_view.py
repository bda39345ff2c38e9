"""FlowView: the token-to-token flow diagram across layers.

Columns are the node layers 0 (input tokens, left) … L (top, right); each
column holds the n token positions. Between adjacent columns the edges are
the residual-adjusted attention ``Â_l = 0.5·W_l + 0.5·I`` (thresholded; width
and opacity by weight). Selecting a node shows how its information travels
down to the input tokens and up to the top by the selected method, with path
widths = each edge's contribution (:mod:`attnwidget.views.flow._paths` defines
them exactly) and the end tokens coloured by the method's scores.

Encoder–decoder models (T5, BART) have two self-attention stacks, one diagram
at a time (``stack``, a picker in the page): the encoder's over the input
tokens, or the decoder's over the decoder tokens, with the explained decoder
position as the query. Cross-attention (decoder → encoder) is not drawn: it
links two different token sets, so it is no edge of either layered graph, and
the decoder's paths assume (as rollout does) that decoder tokens mix only
through self-attention and the residual; ``HeadView(exp, matrix="cross")``
shows it. On the decoder stack only raw, rollout and flow are offered: the
gradients and relevance that grad_attention, chefer2021 and lrp need are
captured for the encoder's attention only.

The synced traits and their meaning are in :mod:`attnwidget.views.flow._traits`
(checked against ``js/src/flow/flow_types.ts`` by tests/test_fixtures_js.py);
the custom messages in :mod:`attnwidget.views.flow._messages`.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, ClassVar

import numpy as np
import traitlets

from attnwidget.methods.graph import HEAD_FUSIONS
from attnwidget.results.explanation import Explanation
from attnwidget.views.attention._shared import PRELOAD_BYTES
from attnwidget.views.core.buffers import decode_float32, encode_float32
from attnwidget.views.core.notes import NOTE_OPTIONS
from attnwidget.views.core.selection import renamed_keyword
from attnwidget.views.core.tokens import raw_tokens_of
from attnwidget.views.flow._messages import (
    EDGE_FLOOR,
    EXPORT_BYTES,
    MAX_PATH_EDGES,
    PROGRESS_INTERVAL,
    SELECTION_FREE,
    decode_paths,
    encode_paths,
)
from attnwidget.views.flow._paths import PathResult, compute_paths, get_path_method, stacks
from attnwidget.views.flow._stack import (
    MAX_TOKENS,
    _caption,
    _Shown,
    method_error,
    prepare_stack,
)
from attnwidget.views.flow._traits import LOCAL_METHODS, FlowTraits
from attnwidget.views.matrix.large_inputs import matrix_view_for, switch_reason

#: Kept importable from here (tests and users import them from this module).
__all__ = [
    "CACHE_SIZE",
    "EDGE_FLOOR",
    "EXPORT_BYTES",
    "LOCAL_METHODS",
    "MAX_PATH_EDGES",
    "MAX_TOKENS",
    "PROGRESS_INTERVAL",
    "FlowView",
    "_caption",
    "decode_paths",
    "encode_paths",
]

#: Results kept per view (a flow computation can take seconds).
CACHE_SIZE = 16


class FlowView(FlowTraits):
    """The token-to-token flow diagram across layers, one method's paths highlighted.

    In the page: click a node (a token label on the left = input token, on the
    right = top layer, or any dot in between) to see how its information
    reaches the input tokens (down) and the top (up) by the chosen method;
    click it again (or Esc) to clear. Hover an edge or a node for its numbers.
    The threshold slider hides weaker edges and paths. "raw" and "rollout" are
    computed in the page; "flow", "grad_attention" and "lrp" are asked from
    the kernel (with a progress bar; the page stays usable). "lrp" explains the
    target, so its paths are the same whichever node is selected, and the page
    says so. Long inputs scroll with rows of at least 16 px (the layer numbers
    stay in sight, a selection made from Python is scrolled to); above 40
    tokens weak context lines fade and at most 3 per token and layer are drawn.

    Encoder–decoder explanations (T5, BART) get a stack picker: ``stack=
    "decoder"`` draws the decoder's self-attention over the decoder tokens,
    with the explained decoder position (``explanation.query_index``) as the
    query, and offers raw, rollout and flow (the gradient and LRP methods'
    data is captured for the encoder only). Cross-attention is drawn on
    neither stack (``HeadView(exp, matrix="cross")`` shows it). Switching the
    stack selects the new stack's query at its top layer and keeps the method
    where the stack offers it (else "rollout").

    Args:
        explanation: the :class:`~attnwidget.Explanation` to show.
        selected_method: the method whose paths are drawn (default "rollout");
            see :attr:`methods` for those available (``grad_attention`` needs
            an explanation from :func:`attnwidget.explain`, ``lrp`` one
            computed with ``methods=[..., "lrp"]``). Named ``method`` before
            (still accepted for one release, with a DeprecationWarning, as is
            the attribute ``view.method``).
        stack: "encoder" (default: the encoder of an encoder–decoder model,
            else the model's only stack) or "decoder" (encoder–decoder only).
        threshold: hide edges of weight (and path shares) below this.
        selected_layer, selected_token: the initially selected node; default
            the explained query at the top layer.
        head_fusion: how heads are fused ("mean", as the papers; "max", "min").
        store, annotator, model_name: an edge notes panel, as HeadView's.

    Above ``MAX_TOKENS`` (1,024) input tokens, or for an explanation that
    keeps only each layer's mean over heads (``explain(..., keep="fused")``),
    ``FlowView(exp)`` returns an
    :class:`~attnwidget.views.matrix.matrix_view.AttentionMatrixView` of
    the last layer's mean over heads instead, with a notice saying why.

    Example::

        view = FlowView(explanation, selected_method="flow")
        view                                  # click a token …
        view.selected_layer, view.selected_token
        view.paths().scores_down              # the method's scores for it
        FlowView(t5_explanation, stack="decoder")   # the decoder's diagram
    """

    _renamed_keywords: ClassVar[dict[str, str]] = {"method": "selected_method"}

    def __new__(cls, explanation: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        # Over MAX_TOKENS (read here, so a test can lower it), or without
        # per-head attention: the last layer's head mean as a zoomable matrix.
        reason = switch_reason(explanation, MAX_TOKENS, "FlowView")
        if reason is not None and kwargs.get("stack", "encoder") == "encoder":
            for name in (
                "selected_method",
                "method",
                "stack",
                "threshold",
                "head_fusion",
                "selected_layer",
                *NOTE_OPTIONS,
            ):
                kwargs.pop(name, None)
            token = kwargs.pop("selected_token", None)
            return matrix_view_for(
                "FlowView",
                explanation,
                reason,
                selected_token=-1 if token is None else token,
                options=kwargs,
                owner=cls,
            )
        return super().__new__(cls, explanation, *args, **kwargs)

    def __init__(
        self,
        explanation: Explanation,
        *,
        selected_method: str | None = None,
        stack: str = "encoder",
        threshold: float = 0.02,
        selected_layer: int | None = None,
        selected_token: int | None = None,
        head_fusion: str = "mean",
        **kwargs: Any,
    ) -> None:
        selected_method = renamed_keyword(
            kwargs, "method", "selected_method", "FlowView", selected_method
        )
        self._explanation: Explanation | None = None
        self._shown: _Shown | None = None
        # Set while the view itself sets ``stack`` (its observer must not reload).
        self._committing = False
        self._pending: _Shown | None = None
        # Bumps per explanation (not per stack): cached paths survive a stack switch.
        self._serial = 0
        self._cache: OrderedDict[tuple[Any, ...], PathResult] = OrderedDict()
        self._exporting = False
        super().__init__(**kwargs)
        if head_fusion not in HEAD_FUSIONS:
            raise ValueError(f"head_fusion={head_fusion!r} is not one of {HEAD_FUSIONS}.")
        self.set_trait("head_fusion", head_fusion)
        self.set_explanation(explanation, selected_method=selected_method or "rollout", stack=stack)
        with self.hold_sync():
            self.threshold = threshold
            layers = self.shape[0]
            layer = layers if selected_layer is None else selected_layer
            if selected_token is None:
                selected_token = self.query_index if layer == layers else -1
            self.select(layer, selected_token)
        self.on_msg(self._on_message)
        self._start_notes(explanation)

    # -- data -----------------------------------------------------------------

    @property
    def explanation(self) -> Explanation | None:
        """The explanation shown."""
        return self._explanation

    def set_explanation(
        self,
        explanation: Explanation,
        *,
        selected_method: str | None = None,
        stack: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Show another explanation.

        The stack is kept when the new explanation has it (else "encoder"); the
        method is kept when it still applies (else "rollout"); the selection is
        kept when it is still in range (else the query at the top). Nothing
        changes when an argument is bad. ``method=`` is the deprecated name of
        ``selected_method=`` (kept for one release).
        """
        selected_method = renamed_keyword(
            kwargs, "method", "selected_method", "FlowView.set_explanation", selected_method
        )
        if kwargs:
            raise TypeError(
                f"FlowView.set_explanation() got unexpected keyword argument(s) {sorted(kwargs)}; "
                "it takes selected_method= and stack=."
            )
        if not isinstance(explanation, Explanation):
            raise TypeError(
                f"FlowView needs an attnwidget.Explanation, got {type(explanation).__name__}; "
                "make one with attnwidget.explain(...) or Explanation.from_attentions(...)."
            )
        if stack is None:
            stack = self.stack if self.stack in stacks(explanation) else "encoder"
        shown = self._prepare(explanation, stack, selected_method)
        self._pending = None
        self._explanation = explanation
        self._serial += 1
        self._cache.clear()
        self._commit(shown, keep_selection=True)

    def _prepare(self, explanation: Explanation, stack: str, method: str | None) -> _Shown:
        """Check and compute what showing ``stack`` of ``explanation`` needs; change nothing."""
        return prepare_stack(
            explanation,
            stack,
            method,
            current=self.selected_method,
            head_fusion=self.head_fusion,
            max_tokens=MAX_TOKENS,  # read here, so a test can lower it on this module
        )

    def _commit(self, shown: _Shown, *, keep_selection: bool) -> None:
        """Show ``shown`` (from :meth:`_prepare`): every trait in one update."""
        assert self._explanation is not None
        layers, n = int(shown.fused.shape[0]), len(shown.explanation.tokens)
        preload = max(1, min(layers, PRELOAD_BYTES // (n * n * 4)))
        self._shown = shown
        self._fused = shown.fused
        with self.hold_sync():
            self.set_trait("version", self.version + 1)
            self.set_trait("stacks", stacks(self._explanation))
            self._committing = True
            try:
                self.stack = shown.stack
            finally:
                self._committing = False
            self.set_trait("tokens", [str(t) for t in shown.explanation.tokens])
            n_shown = len(shown.explanation.tokens)
            self.set_trait("raw_tokens", raw_tokens_of(shown.explanation, n_shown))
            self.set_trait("shape", [layers, n])
            self.set_trait("fused", encode_float32(self._fused[:preload])[0])
            self.set_trait("fused_layers", preload)
            self.set_trait("query_index", shown.query)
            self.set_trait("caption", shown.caption)
            self.set_trait("methods", shown.methods)
            self.set_trait("summaries", [get_path_method(m).summary for m in shown.methods])
            self.set_trait("signed", [get_path_method(m).signed for m in shown.methods])
            self.selected_method = shown.method
            in_range = 0 <= self.selected_layer <= layers and self.selected_token < n
            if not (keep_selection and in_range):
                self.set_trait("selected_layer", layers)
                self.set_trait("selected_token", shown.query)

    def select(self, layer: int, token: int) -> None:
        """Select the node ``(layer, token)`` (``token=-1``: clear) in one update."""
        with self.hold_sync():
            # Validate both before changing either, so a bad pair changes nothing.
            self._check_layer(layer)
            self._check_token(token)
            self.selected_layer = layer
            self.selected_token = token

    def paths(
        self, method: str | None = None, layer: int | None = None, token: int | None = None
    ) -> PathResult:
        """The paths drawn for ``method`` at node ``(layer, token)`` (default: the current ones).

        Exactly the numbers the page gets (float64 here, float32 on the wire).
        """
        method = self.selected_method if method is None else method
        layer = self.selected_layer if layer is None else layer
        token = self.selected_token if token is None else token
        if method not in self.methods:
            raise self._method_error(method, list(self.methods))
        if token < 0:
            raise ValueError("no token is selected: pass token=… or select one.")
        return self._paths(method, self._check_layer(layer), self._check_token(token))

    @property
    def selection(self) -> dict[str, Any] | None:
        """The selected node and the method's scores for it, or None.

        ``{"layer", "token", "text", "method", "down", "up", "per_selection"}``:
        ``down`` (n,) the input tokens' scores for the node (None at layer 0),
        ``up`` (n,) the node's token's score for each top node (None at the top
        layer); ``per_selection`` is False for a method whose paths are the same
        whichever node is selected (lrp explains the target), as the page says.
        """
        if self.selected_token < 0:
            return None
        result = self.paths()
        layers = self.shape[0]
        return {
            "layer": self.selected_layer,
            "token": self.selected_token,
            "text": self.tokens[self.selected_token],
            "method": self.selected_method,
            "down": result.scores_down.copy() if self.selected_layer > 0 else None,
            "up": result.scores_up.copy() if self.selected_layer < layers else None,
            "per_selection": self.selected_method not in SELECTION_FREE,
        }

    def wire_attention(self) -> np.ndarray:
        """The fused attention of the ``fused`` trait: float32 (fused_layers, n, n)."""
        layers, n = self.fused_layers, self.shape[1]
        return decode_float32(self.fused, (layers, n, n))

    def _paths(self, method: str, layer: int, token: int, progress: Any = None) -> PathResult:
        assert self._explanation is not None and self._shown is not None
        stack = self._shown.stack
        key = (self._serial, stack, method, layer, token, self.head_fusion)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        result = compute_paths(
            self._explanation,
            method,
            layer,
            token,
            stack=stack,
            head_fusion=self.head_fusion,  # type: ignore[arg-type]
            progress=progress,
        )
        self._cache[key] = result
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return result

    # -- validation -------------------------------------------------------------

    def _method_error(
        self,
        method: str,
        names: list[str],
        stack: str | None = None,
        explanation: Explanation | None = None,
    ) -> Exception:
        stack = stack or (self._shown.stack if self._shown else "encoder")
        return method_error(method, names, stack, explanation or self._explanation)

    @traitlets.validate("stack")
    def _validate_stack(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if self._committing or self._explanation is None:
            return str(value)
        if self._shown is not None and value == self._shown.stack:
            return str(value)  # already shown: nothing to reload
        # Prepare here, so that a stack that cannot be shown leaves everything as it was.
        self._pending = self._prepare(self._explanation, value, None)
        return str(value)

    @traitlets.observe("stack")
    def _on_stack(self, change: dict[str, Any]) -> None:
        pending, self._pending = self._pending, None
        if self._committing or pending is None or pending.stack != change["new"]:
            return
        self._commit(pending, keep_selection=False)

    def __repr__(self) -> str:
        layers, n = self.shape
        return (
            f"FlowView(stack={self.stack!r}, layers={layers}, n={n}, "
            f"selected_method={self.selected_method!r}, "
            f"selected=({self.selected_layer}, {self.selected_token}), "
            f"threshold={self.threshold})"
        )
