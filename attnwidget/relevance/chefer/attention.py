"""The attention function that runs the paper's rules inside softmax attention.

Registered with transformers' ``AttentionInterface`` (and the eager mask)
under :data:`IMPLEMENTATION`, so a stock model switches to it with
``set_attn_implementation`` for one pass and back again. It computes what
the eager implementation computes::

    A = softmax(scaling · Q Kᵀ + mask)      (H, n, n), returned
    O = A V                                  (H, n, d_head)

and, backwards (Chefer, Gur & Wolf, CVPR 2021): ``O = A V`` split by
gradient × input into ``R_A`` and ``R_V``, each halved; the halved ``R_A``
is what reaches the returned ``A``: the "gradient" a pass finds there *is*
the paper's attention relevance ``R^{A_l}`` (their "cam"); softmax, the mask
addition and the scaling pass it unchanged; ``Q Kᵀ`` is split into ``R_Q``,
``R_K``, each halved. The mask addition passes ``R`` unchanged: the authors'
two-input rule gives the mask nothing where it is 0 (no padding, the case
:func:`attnwidget.explain` runs) and next to nothing where it is large and
negative (``A`` and so ``R_A`` are ≈ 0 there). A bias passed in the mask's
place (BEiT's relative position bias, a constant added to the logits) is
treated the same way, our extension: softmax passes relevance, so the bias
changes no rule; it changes ``A``, which the rules read.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.attention_interface import (
    check_plain_attention,
    default_scaling,
    eager_attention,
    register_attention,
    repeat_kv_heads,
    softmax_weights,
)
from attnwidget.relevance.chefer.rules import matmul_split, pass_through

#: Name under which the function is registered with transformers.
IMPLEMENTATION = "attnwidget_chefer2021"

_HINT = 'use method_options={"chefer2021": {"relevance": "attnlrp"}} for AttnLRP relevance.'


@dataclass
class AttentionCalls:
    """The attention modules called during one pass, in call order.

    ``known`` maps an autograd node to the tensor the pass knows for it (the
    output of a rule), or None; it lets the attention function find the
    projection behind a rotary position embedding.
    """

    modules: list[nn.Module] = field(default_factory=list)
    known: Callable[[Any], torch.Tensor | None] = lambda _node: None


#: Autograd nodes of a rotary position embedding ``q·cos + rotate_half(q)·sin``
#: (and the reshapes before it).
_ROTARY = frozenset(
    {
        "AddBackward0",
        "MulBackward0",
        "CatBackward0",
        "NegBackward0",
        "SliceBackward0",
        "ViewBackward0",
        "TransposeBackward0",
        "UnsafeViewBackward0",
        "CloneBackward0",
        "ToCopyBackward0",
    }
)


def _unrotate(tensor: torch.Tensor, calls: AttentionCalls) -> torch.Tensor:
    """A rotated query/key (B, H, n, d), with relevance passed unchanged to its projection.

    Our choice for rotary position embeddings (Su et al., 2021), on which
    the authors defined no rule: the rotation of each pair of features is
    treated like LayerNorm, ``R`` passed unchanged, coordinate by coordinate,
    to the projection's output (B, n, H·d) it was made from. Found by walking
    the autograd graph back through the rotary operations to the one known
    tensor, and checked: that tensor, viewed as (B, H, n, d), has the same
    norm per head and position (a rotation keeps it). Anything else is
    returned as it is (and the engine's path check refuses it).
    """
    sources, stack, rotated = {}, [tensor.grad_fn], False
    seen: set[int] = set()
    while stack and len(seen) < 64:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        known = calls.known(current)
        name = type(current).__name__
        if known is not None:
            sources[id(known)] = known
        elif name in _ROTARY:
            rotated |= name in {"AddBackward0", "MulBackward0"}
            stack.extend(parent for parent, _ in current.next_functions)
    if not rotated or len(sources) != 1:
        return tensor  # no rotary (a view of a projection), or not one we recognise
    (source,) = sources.values()
    batch, heads, n, d = tensor.shape
    if source.shape != (batch, n, heads * d):
        return tensor
    before = source.view(batch, n, heads, d).transpose(1, 2)
    norms = before.detach().float().norm(dim=-1), tensor.detach().float().norm(dim=-1)
    if not torch.allclose(*norms, rtol=1e-3, atol=1e-5):
        return tensor
    return pass_through(before, tensor)


_ACTIVE: ContextVar[AttentionCalls | None] = ContextVar("attnwidget_chefer_pass", default=None)


def active_pass() -> ContextVar[AttentionCalls | None]:
    """The context variable holding the running pass's record (None: plain eager)."""
    return _ACTIVE


def chefer_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager softmax attention with the paper's relevance rules (module docstring).

    Shapes: query (B, H, n, d), key and value (B, H_kv, m, d), H a multiple of
    H_kv (grouped heads are repeated: a fan-out, whose relevance is summed);
    additive mask broadcastable to (B, H, n, m). Returns ``(output (B, n, H,
    d), attention (B, H, n, m))`` like transformers' eager functions. No
    dropout (eval mode). Cross-attention, caches, sinks and soft-capping are
    refused: the paper's rules cover self-attention only.
    """
    calls = _ACTIVE.get()
    check_plain_attention(
        kwargs,
        f"has no rule of Chefer, Gur & Wolf (2021); {_HINT}",
        prefix=f"{type(module).__name__}: ",
    )
    if calls is not None and key.shape[-2] != query.shape[-2]:
        raise ModelNotSupportedError(
            f"{type(module).__name__} attends from {query.shape[-2]} to {key.shape[-2]} "
            f"positions (cross-attention or a cache); the paper's rules cover self-attention; "
            f"{_HINT}"
        )
    if calls is None:  # no pass in this thread's context: plain eager, no rule
        return eager_attention(query, key, value, attention_mask, scaling)
    scaling = default_scaling(query, scaling)
    query, key = _unrotate(query, calls), _unrotate(key, calls)
    key = repeat_kv_heads(key, query.shape[1])
    value = repeat_kv_heads(value, query.shape[1])
    # Q·Kᵀ unscaled, as in the authors' code (the split does not depend on a
    # scale factor, apart from the stabiliser); then scaling, mask and softmax,
    # all of which pass relevance unchanged.
    raw = matmul_split(query, key.transpose(-1, -2), 0.5)
    logits = raw.detach() * scaling
    if attention_mask is not None:
        logits = logits + attention_mask
    weights = pass_through(raw, softmax_weights(logits, query))
    output = matmul_split(weights, value, 0.5)
    calls.modules.append(module)
    return output.transpose(1, 2).contiguous(), weights


def register(*, required: bool = True) -> bool:
    """Register :func:`chefer_attention` under :data:`IMPLEMENTATION` (see
    :func:`attnwidget.relevance.attention_interface.register_attention`: transformers ≥ 5.0)."""
    return register_attention(IMPLEMENTATION, chefer_attention, required=required)
