"""What FlowView shows of an explanation: one self-attention stack, checked
and head-fused before any trait changes, its caption, why a method is not
offered, and the checks of a selected node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import traitlets

from attnwidget.errors import TooLargeError, UnknownMethodError
from attnwidget.methods.graph import as_attention_array, fuse_heads
from attnwidget.methods.sinks import ignored_keys_note
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.format import format_number
from attnwidget.views.flow._paths import (
    get_path_method,
    path_methods,
    stack_explanation,
    stack_problem,
)

#: The largest input drawn (n rows of nodes; one float32 layer, 4 MiB, must fit a message).
MAX_TOKENS = 1024


@dataclass(frozen=True)
class _Shown:
    """One stack of one explanation, ready to show (computed before any trait changes)."""

    stack: str
    explanation: Explanation  # the stack's view (stack_explanation)
    fused: np.ndarray  # float32 (L, n, n)
    methods: list[str]
    method: str
    query: int
    caption: str


def prepare_stack(
    explanation: Explanation,
    stack: str,
    method: str | None,
    *,
    current: str,
    head_fusion: str,
    max_tokens: int = MAX_TOKENS,
) -> _Shown:
    """Check and compute what showing ``stack`` of ``explanation`` needs; change nothing.

    ``method``: asked for (None: keep ``current`` where it applies, else "rollout").
    """
    if getattr(explanation, "attentions", True) is None:  # keep="fused"/"rows"
        explanation.require_attentions("FlowView")  # raises InputError naming keep="all"
    problem = stack_problem(explanation, stack)
    if problem is not None:
        raise traitlets.TraitError(problem)
    shown = stack_explanation(explanation, stack)
    n = len(shown.tokens)
    if n > max_tokens:
        where = "" if stack == "encoder" else f" ({stack} stack)"
        raise TooLargeError(
            f"FlowView draws at most {max_tokens} tokens; this input has {n}{where}. Explain "
            "a shorter text (or a part of it), or use SaliencyView / HeadView."
        )
    names = path_methods(explanation, stack)
    if method is not None and method not in names:
        raise method_error(method, names, stack, explanation)
    wanted = method or current
    if wanted not in names:
        wanted = "rollout"
    fused = fuse_heads(as_attention_array(shown.attentions), head_fusion)  # type: ignore[arg-type]
    # The encoder of an encoder–decoder model has no query row: the query is a decoder position.
    has_query = stack == "decoder" or explanation.decoder_tokens is None
    query = int(shown.query_index) if has_query else -1
    return _Shown(
        stack=stack,
        explanation=shown,
        fused=fused.astype(np.float32),
        methods=names,
        method=wanted,
        query=query,
        caption=_caption(explanation, stack),
    )


def method_error(
    method: str, names: list[str], stack: str, explanation: Explanation | None
) -> Exception:
    """Why ``method`` is not offered on ``stack`` (``names``: those that are)."""
    try:
        spec = get_path_method(method)
    except UnknownMethodError:
        spec = None
    if spec is not None and stack != "encoder" and spec.applies(explanation):
        why = (
            f"the {stack} stack lacks what it needs: its data is captured for the encoder "
            "only; use stack='encoder'"
        )
    elif spec is not None:
        why = "it needs data this explanation lacks"
    else:
        why = "it is not a path method" if method in _registered() else "it is not a method"
    return traitlets.TraitError(
        f"method={method!r} is not available ({why}); this view has: {', '.join(map(repr, names))}."
    )


def check_layer(value: Any, layers: int) -> int:
    """A node layer 0 … ``layers`` (``selected_layer``), or TraitError saying the range."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise traitlets.TraitError(f"selected_layer must be an int, not {value!r}.")
    if not 0 <= value <= layers:
        raise traitlets.TraitError(
            f"selected_layer={value} is out of range: node layers are 0 (input tokens) .. "
            f"{layers} (after the last of {layers} attention layers)."
        )
    return int(value)


def check_token(value: Any, n: int) -> int:
    """A token 0 … n − 1 or -1 for none (``selected_token``), or TraitError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise traitlets.TraitError(f"selected_token must be an int, not {value!r}.")
    if value == -1 or 0 <= value < n:
        return int(value)
    raise traitlets.TraitError(
        f"selected_token={value} is out of range: use -1 for no selection or a token "
        f"index 0..{n - 1} ({n} tokens)."
    )


def _registered() -> list[str]:
    from attnwidget.methods.registry import available_methods

    return available_methods()


def _caption(explanation: Explanation, stack: str) -> str:
    """What is explained, and for encoder–decoder models which stack is drawn."""
    parts = []
    if explanation.target is not None:
        target = f"target {explanation.target!r}"
        probs = explanation.probabilities
        if probs is not None and explanation.target_id is not None:
            if 0 <= explanation.target_id < probs.shape[-1]:
                target += f" (p = {format_number(probs[explanation.target_id])})"
        parts.append(target)
    decoder = explanation.decoder_tokens
    q = explanation.query_index
    if decoder is None:
        parts.append(f"query #{q} {explanation.tokens[q]!r}")
    else:
        parts.append(
            f"{'query' if stack == 'decoder' else 'at decoder position'} #{q} {decoder[q]!r}"
        )
    text = "Explaining " + ", ".join(parts) + "."
    note = ignored_keys_note(explanation.ignored_keys, explanation.tokens)
    if note:  # explain(..., ignore_keys=...): the graph is the renormalised rows'
        text += f" Attention with {note}."
    if decoder is None:
        return text
    drawn = (
        "the decoder's self-attention over the decoder tokens"
        if stack == "decoder"
        else "the encoder's self-attention over the input tokens"
    )
    return (
        f"{text} Drawn: {drawn}; cross-attention (decoder → encoder) is not drawn "
        "(HeadView(exp, matrix='cross') shows it)."
    )
