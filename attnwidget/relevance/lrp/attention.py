"""The attention function that runs AttnLRP's rules inside softmax attention.

Registered with transformers' ``AttentionInterface`` (and its mask interface,
with the eager mask) under :data:`IMPLEMENTATION`, so a stock Hugging Face
model switches to it with ``model.set_attn_implementation(IMPLEMENTATION)``
and back again; no model code is replaced. It computes exactly what the
eager implementation computes::

    X = scaling · Q Kᵀ + mask        (H, n, n) attention logits
    A = softmax(X)                    (H, n, n) attention map (returned)
    O = A V                           (H, n, d_head)

and, while an LRP pass is active (:func:`active_pass`), applies the rules:

* ``Q Kᵀ`` and ``A V`` are products of two input-dependent tensors: uniform
  rule, half of the relevance to each factor (gradients of Q, K, V and A
  halved; the cumulative factors are ¼ for Q and K and ½ for V, as in the
  paper's efficient form).
* softmax: the AttnLRP rule ``R_X = X ⊙ (R_A − A ⊙ Σ_j R_A,j)`` is, in
  gradient × input form, the plain softmax gradient, so it is left as is. The
  mask is a bias: it takes ``mask ⊙ g_X``, which is 0 (its gradient is 0 where
  it is −∞-like and it is 0 elsewhere).

The relevance of the attention map is ``R^A = A ⊙ ∂/∂A`` taken on the
returned ``A`` (its gradient already halved by the uniform rule of ``A V``),
and the relevance of the logits ``R^X = (scaling · Q Kᵀ) ⊙ ∂/∂X`` is recorded
per layer (summed over keys) so that the relevance the softmax rule absorbs,
``Σ R^A − Σ R^X``, can be accounted for.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from attnwidget.relevance.attention_interface import (
    check_plain_attention,
    default_scaling,
    register_attention,
    repeat_kv_heads,
    softmax_weights,
)
from attnwidget.relevance.lrp.rules import uniform_rule

#: Name under which the function is registered with transformers.
IMPLEMENTATION = "attnwidget_lrp"


@dataclass
class AttentionLedger:
    """What the attention function records during one LRP pass.

    ``logit_relevance[l]`` is filled during the backward pass: the relevance of
    layer l's attention logits, summed over keys, shape (B, H, n).
    """

    logit_relevance: list[torch.Tensor | None] = field(default_factory=list)
    calls: int = 0
    #: the pass's :class:`~.inline.InlineState`: suspended inside this function,
    #: whose products already get their rules here.
    inline: Any = None
    #: parts of ``logit_relevance[l]`` for attention written inline (see
    #: :mod:`.inline_attention`): the logits' ``X ⊙ g`` and minus each bias's share.
    parts: dict[int, dict[int, torch.Tensor]] = field(default_factory=dict)

    def set_part(self, index: int, key: int, value: torch.Tensor) -> None:
        """Set one part of layer ``index``'s logit relevance (hooks fire in any order)."""
        parts = self.parts.setdefault(index, {})
        parts[key] = value
        total = None
        for part in parts.values():
            total = part if total is None else total + part
        self.logit_relevance[index] = total


_ACTIVE: ContextVar[AttentionLedger | None] = ContextVar("attnwidget_lrp_pass", default=None)


def active_pass() -> ContextVar[AttentionLedger | None]:
    """The context variable holding the running pass's ledger (None: plain eager)."""
    return _ACTIVE


def lrp_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager softmax attention with AttnLRP's rules (see the module docstring).

    Shapes: query (B, H, n, d), key and value (B, H_kv, n, d) with H a
    multiple of H_kv; the mask is additive, broadcastable to (B, H, n, n).
    Returns ``(output (B, n, H, d), attention (B, H, n, n))`` like the eager
    implementations of transformers. Dropout is not applied (LRP runs in eval
    mode); attention variants with sinks or logit soft-capping are refused.
    """
    check_plain_attention(kwargs, "has no LRP rule here; only plain softmax attention.")
    ledger = _ACTIVE.get()
    inline = getattr(ledger, "inline", None)
    if inline is None:
        return _attention(query, key, value, attention_mask, scaling, ledger)
    inline.suspended += 1
    try:
        return _attention(query, key, value, attention_mask, scaling, ledger)
    finally:
        inline.suspended -= 1


def _attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None,
    ledger: AttentionLedger | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    scaling = default_scaling(query, scaling)
    key = repeat_kv_heads(key, query.shape[1])
    value = repeat_kv_heads(value, query.shape[1])
    if ledger is not None:
        query, key, value = uniform_rule(query), uniform_rule(key), uniform_rule(value)
    scores = torch.matmul(query, key.transpose(-1, -2)) * scaling
    logits = scores if attention_mask is None else scores + attention_mask
    weights = softmax_weights(logits, query)
    mixing = weights
    if ledger is not None:
        mixing = uniform_rule(weights)
        if scores.requires_grad:
            index = ledger.calls
            ledger.logit_relevance.append(None)
            kept = scores.detach()

            def record(grad: torch.Tensor, index: int = index, kept: torch.Tensor = kept) -> None:
                ledger.logit_relevance[index] = (kept * grad).sum(dim=-1)

            scores.register_hook(record)
        ledger.calls += 1
    output = torch.matmul(mixing, value)
    return output.transpose(1, 2).contiguous(), weights


def register(*, required: bool = True) -> bool:
    """Register :func:`lrp_attention` under :data:`IMPLEMENTATION` (see
    :func:`attnwidget.relevance.attention_interface.register_attention`: transformers ≥ 5.0)."""
    return register_attention(IMPLEMENTATION, lrp_attention, required=required)
