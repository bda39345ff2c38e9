"""AttnLRP inside softmax attention written inline in a module's ``forward``.

MPNet, Falcon and DeBERTa-v2 (transformers 5) compute their attention in the
attention module itself instead of calling transformers' attention interface::

    X = q·kᵀ / √d (+ c2p(q) + p2c(k))  + B     logits; B constant: relative-position
    A = softmax(X)                              bias, ALiBi, the mask
    O = A·v

The rules of Achtibat et al. (ICML 2024) apply operation by operation, as
:mod:`.inline` sees them run: ``q·kᵀ`` and ``A·v`` are products of two
input-dependent tensors (uniform rule, already in :mod:`.inline`); a product
with a constant (DeBERTa's content-to-position terms against the position
projections) and a division by a constant are linear (plain gradient); the
softmax rule ``R_X = X ⊙ (R_A − A ⊙ Σ_j R_A,j)`` is, in gradient × input form,
the plain softmax gradient (:func:`softmax_rule` changes nothing in it).

What it adds is the bookkeeping :mod:`.attention` does for the interface path:
the softmax is not conservative, and the relevance it absorbs per layer,
``Σ R^A − Σ R^X``, is accounted by recording the logits' relevance in the
pass's ledger. A constant added to the logits is a bias: it keeps its share
``B ⊙ ∂/∂(sum)`` (read where it is added: :class:`LogitBias`), so the ledger
records the input-dependent part, ``X ⊙ g_X`` minus the biases' shares, exactly
what :func:`.attention.lrp_attention` records (``scaling · Q Kᵀ``, without the
mask). The biases' shares are therefore part of ``softmax_absorbed``.

A bias is attributed to the logits it reaches through linear operations only
(additions, scalings by constants, views, ``masked_fill``): each such result
carries the biases of its operands (:func:`carry`). A softmax is taken for
attention when it runs over the last axis of square ``(…, n, n)`` logits;
any other softmax of input-dependent values (a router written inline, a
softmax over another axis) is refused, naming the module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from attnwidget.relevance.lrp.attention import AttentionLedger

#: Attribute on an input-dependent tensor: the constant biases in it (a tuple).
_BIASES = "_attnwidget_logit_biases"

#: Operations through which a tensor stays "its operands plus constants", by name
#: (``torch.add`` and ``Tensor.add`` alike). Products and divisions only count
#: when at most one operand depends on the input (checked by the caller).
_LINEAR_NAMES = frozenset(
    """add add_ __add__ __radd__ __iadd__ sub sub_ __sub__ __rsub__ __isub__ subtract
    mul mul_ __mul__ __rmul__ __imul__ multiply div div_ __truediv__ __itruediv__ divide
    true_divide neg __neg__ view view_as reshape reshape_as transpose permute contiguous
    flatten unflatten unsqueeze squeeze expand expand_as broadcast_to to float half
    bfloat16 double type_as clone masked_fill masked_fill_ __getitem__ narrow select
    repeat repeat_interleave""".split()
)
_SCALINGS = frozenset(
    """mul mul_ __mul__ __rmul__ __imul__ multiply div div_ __truediv__ __itruediv__
    divide true_divide""".split()
)
_SUBTRACTIONS = frozenset("sub sub_ __sub__ __isub__ subtract".split())


@dataclass(eq=False)
class LogitBias:
    """A constant added to an input-dependent tensor (an LRP bias).

    Its relevance is ``value ⊙ g`` with ``g`` the gradient at the sum it was
    added into. It counts only if the sum reaches attention logits linearly
    (``slot`` set by :func:`softmax_rule`); otherwise it is a bias like a
    linear layer's, outside the attention bookkeeping.
    """

    value: torch.Tensor | float
    numel: int
    slot: tuple[AttentionLedger, int, torch.Size] | None = None

    def hook(self, grad: torch.Tensor) -> None:
        if self.slot is None:
            return
        ledger, index, shape = self.slot
        share = (self.value * grad).reshape(shape).sum(dim=-1)
        ledger.set_part(index, id(self), -share.detach())


def biases(tensor: Any) -> tuple[LogitBias, ...]:
    """The constant biases an input-dependent tensor carries (empty if none)."""
    return getattr(tensor, _BIASES, ()) if isinstance(tensor, torch.Tensor) else ()


def carry(func: Callable[..., Any], operands: list[Any], out: Any, dependent: int) -> None:
    """Give ``out`` the biases of its operands if ``func`` is linear in them."""
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        return
    name = getattr(func, "__name__", "")
    if name not in _LINEAR_NAMES or (name in _SCALINGS and dependent > 1):
        return
    found: list[LogitBias] = []
    for operand in operands:
        for bias in biases(operand):
            if bias not in found:
                found.append(bias)
    if found:
        setattr(out, _BIASES, tuple(found))


def add_bias(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
) -> None:
    """``out = x ± c`` with ``x`` input-dependent and ``c`` constant: record ``c`` as a bias."""
    if not isinstance(out, torch.Tensor) or not out.requires_grad or len(args) < 2:
        return
    first, second = args[0], args[1]
    first_dep, second_dep = (_depends(a) for a in (first, second))
    if first_dep == second_dep:
        return  # a sum of two input-dependent tensors (or of constants): no bias
    name = getattr(func, "__name__", "")
    alpha = kwargs.get("alpha", 1)
    if first_dep:  # x + alpha·c, x − alpha·c, or c − x (__rsub__: self is x)
        constant = second
        sign = -alpha if name in _SUBTRACTIONS else (1 if name == "__rsub__" else alpha)
    else:  # c + alpha·x or c − alpha·x
        constant, sign = first, 1
    if isinstance(constant, (int, float)):
        if constant == 0:
            return
    elif not (isinstance(constant, torch.Tensor) and constant.is_floating_point()):
        return
    bias = LogitBias(value=_scaled(constant, sign), numel=out.numel())
    out.register_hook(bias.hook)
    setattr(out, _BIASES, (*biases(out), bias))


def _scaled(constant: torch.Tensor | float, sign: float) -> torch.Tensor | float:
    value = constant.detach() if isinstance(constant, torch.Tensor) else constant
    return value if sign == 1 else value * sign


def _depends(value: Any) -> bool:
    # as inline.depends (not imported: inline imports this module)
    return (
        isinstance(value, torch.Tensor)
        and value.requires_grad
        and value.is_floating_point()
        and not isinstance(value, nn.Parameter)
    )


def softmax_rule(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    ledger: AttentionLedger | None,
    refuse: Callable[[str], None],
) -> torch.Tensor:
    """An attention softmax written inline: plain gradient, logits' relevance recorded.

    Args:
        func: the softmax function the module called (``F.softmax``, ``Tensor.softmax``, ...).
        args, kwargs: its arguments; the logits are the first.
        ledger: the pass's ledger (None outside a pass: nothing is recorded).
        refuse: raises the mode's error naming the module, with the reason given.
    """
    logits = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if logits.ndim < 3 or logits.shape[-1] != logits.shape[-2]:
        refuse(
            "a softmax of input-dependent values that are not square (…, n, n) attention "
            "logits (a router written inline? LRP holds routing weights constant only in a "
            "module of its own)"
        )
    if not isinstance(dim, int) or dim not in (-1, logits.ndim - 1):
        refuse("a softmax of input-dependent values over an axis other than the last")
    for bias in biases(logits):
        if bias.numel != logits.numel():
            refuse("a constant bias broadcast into the attention logits through a reshape")
    out = func(*args, **kwargs)
    if ledger is None:
        return out
    index = ledger.calls
    ledger.calls += 1
    ledger.logit_relevance.append(None)
    kept = logits.detach()

    def record(grad: torch.Tensor) -> None:
        ledger.set_part(index, 0, (kept * grad).sum(dim=-1).detach())

    logits.register_hook(record)
    for bias in biases(logits):
        bias.slot = (ledger, index, logits.shape)
    return out
