"""Long inputs in HeadView, ModelView and FlowView: the matrix view instead.

Lines between tokens stop being readable, and their data stops fitting in a
message, long before 4,096 tokens (one head is 16.8 M weights, 32 MiB of
float16). So above a size, or when the explanation keeps no per-head
attention (``explain(..., keep="fused")``), these views' constructors return
an :class:`~attnwidget.views.matrix.matrix_view.AttentionMatrixView` of
the same explanation instead (tiles on demand, no message over 8 MiB), with
a notice in the page saying why:

- HeadView: more than :data:`HEAD_VIEW_TOKENS` tokens (n² lines per head);
- ModelView: more than :data:`MODEL_VIEW_TOKENS` (its enlarged head is
  drawn as lines and fetched whole);
- FlowView: more than its ``MAX_TOKENS`` (1,024: the rows it draws), showing
  the last layer's mean over heads, the matrix the flow diagram starts from.

The layer, a single chosen head (else the mean over heads) and the pinned
token carry over; sentence-pair filters and decoder/cross matrices do not
(the matrix view draws the input's self-attention) and are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnwidget.errors import InputError
from attnwidget.views.core.base import (
    WIDGET_OPTIONS,
    _AttnWidget,
    _keyword_traits,
    _unknown_kwargs_message,
)
from attnwidget.views.core.selection import NONE

#: HeadView switches to the matrix view above this many tokens.
HEAD_VIEW_TOKENS = 512
#: ModelView switches above this many tokens.
MODEL_VIEW_TOKENS = 1024


def switch_reason(explanation: Any, limit: int, view: str) -> str | None:
    """Why ``view`` shows ``explanation`` as a matrix view, or None to draw it itself."""
    tokens = getattr(explanation, "tokens", None)
    if tokens is None or not hasattr(explanation, "scores"):
        return None  # not an Explanation (e.g. HeadView's AttentionSet): as before
    if getattr(explanation, "attentions", None) is None:
        if getattr(explanation, "fused_attentions", None) is None:
            return None  # nothing to draw either way: the view's own error says so
        return (
            f"{view} draws every head, and this explanation keeps only each layer's mean "
            "over heads (keep='fused'): showing that mean as a zoomable matrix instead."
        )
    n = len(tokens)
    if n <= limit:
        return None
    return (
        f"{view} draws at most {limit:,} tokens and this input has {n:,}: showing its "
        "attention as a zoomable matrix instead (AttentionMatrixView)."
    )


def matrix_view_for(
    view: str,
    explanation: Any,
    reason: str,
    *,
    layer: int | None = None,
    heads: Sequence[int] | int | None = None,
    selected_token: int | None = -1,
    matrix: str | None = None,
    pair_filter: str = "all",
    options: dict[str, Any] | None = None,
    owner: type[_AttnWidget] | None = None,
) -> Any:
    """The matrix view ``view`` shows instead (see the module docstring)."""
    from attnwidget.views.matrix.matrix_view import AttentionMatrixView

    if matrix not in (None, "self", "encoder"):
        raise InputError(
            f"{view}: {reason} It draws the input's self-attention only, so matrix={matrix!r} "
            "cannot be shown; explain a shorter input to see it."
        )
    if pair_filter != "all":
        raise InputError(
            f"{view}: {reason} It has no sentence-pair filter; leave pair_filter='all'."
        )
    if isinstance(heads, int):
        head = heads
    elif heads is not None and len(heads) == 1:
        head = int(heads[0])
    else:
        head = NONE  # the mean over heads
    if getattr(explanation, "attentions", None) is None:
        head = NONE
    options = dict(options or {})
    if owner is not None:
        # What the view's own constructor would refuse is refused here too.
        unknown = [k for k in options if k not in _keyword_traits(owner)]
        if unknown:
            raise TypeError(_unknown_kwargs_message(owner, unknown))
    kept = {k: v for k, v in options.items() if k in WIDGET_OPTIONS}
    return AttentionMatrixView(
        explanation,
        layer=None if layer is None or layer < 0 else layer,
        head=head,
        selected_token=NONE if selected_token is None else selected_token,
        notice=reason,
        **kept,
    )
