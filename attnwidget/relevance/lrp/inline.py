"""AttnLRP's rules on operations written inline in a model's ``forward``.

Most of a Transformer's non-linear operations sit in modules that get a rule
of their own (:mod:`.structure`), but some are written inline in a parent's
``forward``: Llama's gated product ``act(gate(x)) * up(x)``, Phi-3's fused
``gate_up_proj`` split in two halves that are multiplied, RoBERTa's
``torch.tanh`` in the classifier head, Mixtral's experts computed with
``F.linear`` on 3-D weight tensors. A ``TorchFunctionMode`` sees every torch
operation the model runs during the LRP pass and, by what the operation is and
whether its operands depend on the input (``requires_grad``; the parameters are
frozen for the pass), applies the rule of Achtibat et al. (ICML 2024):

* product of two input-dependent tensors (``*``, ``matmul``, ``einsum``):
  uniform rule, the gradient of each factor halved (:func:`.rules.uniform_rule`);
  a product with a constant (a scale, a rotary table, a routing weight treated
  as constant) is linear and keeps the plain gradient.
* ``F.linear``: ε-rule on its output, like a linear module.
* element-wise activations called as functions (``tanh``, ``gelu``, ``silu``,
  ...): identity rule.
* additions, concatenations, views, indexing, centring sums: linear, plain
  gradient (the ε-rule with ε = 0). Parallel residual blocks (GPT-NeoX) need
  nothing more: ``x + attn(ln1(x)) + mlp(ln2(x))`` is a sum.
* softmax over the last axis of square ``(…, n, n)`` logits: softmax attention
  written inline (MPNet, Falcon, DeBERTa-v2): the plain gradient (the softmax
  rule in this form), with the logits' relevance recorded for the absorption
  accounting and constants added to the logits kept as biases
  (:mod:`.inline_attention`).
* any other softmax, log-softmax or fused attention kernel, division by an
  input-dependent tensor, powers, roots, exponentials and other non-linear
  operations without a rule: refused, naming the module that runs them (e.g.
  a router or a normalisation written inline).

Inside modules that have a rule of their own (norms, activations, linear layers,
the attention function) the mode is suspended: their output is replaced as a
whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.lrp.attention import AttentionLedger
from attnwidget.relevance.lrp.inline_attention import add_bias, carry, softmax_rule
from attnwidget.relevance.lrp.rules import epsilon_rule, identity_rule, uniform_rule

T = torch.Tensor


def depends(value: Any) -> bool:
    """True for a floating tensor that depends on the input (not a parameter)."""
    return (
        isinstance(value, torch.Tensor)
        and value.requires_grad
        and value.is_floating_point()
        and not isinstance(value, nn.Parameter)
    )


_PRODUCTS = {
    torch.mul,
    torch.multiply,
    T.mul,
    T.multiply,
    T.__mul__,
    T.__rmul__,
    torch.matmul,
    T.matmul,
    T.__matmul__,
    T.__rmatmul__,
    torch.bmm,
    T.bmm,
    torch.mm,
    T.mm,
}
_ADDITIONS = {torch.add, T.add, T.__add__, T.__radd__, T.__iadd__, T.add_}
_IN_PLACE_PRODUCTS = {T.mul_, T.__imul__, T.multiply_}
_DIVISIONS = {
    torch.div,
    torch.divide,
    torch.true_divide,
    T.div,
    T.divide,
    T.true_divide,
    T.__truediv__,
    T.__rtruediv__,
    T.div_,
    T.__itruediv__,
}
_ACTIVATIONS = {
    torch.tanh,
    T.tanh,
    F.tanh,
    torch.sigmoid,
    T.sigmoid,
    F.sigmoid,
    torch.relu,
    T.relu,
    F.relu,
    F.gelu,
    F.silu,
    F.mish,
    F.leaky_relu,
    F.elu,
    F.relu6,
    F.hardtanh,
    F.softplus,
}
_SOFTMAX = {torch.softmax, T.softmax, F.softmax}
_SUBTRACTIONS = {
    torch.sub,
    torch.subtract,
    T.sub,
    T.subtract,
    T.__sub__,
    T.__rsub__,
    T.__isub__,
    T.sub_,
}
#: Products fused with a sum: the uniform rule would need their factors apart.
_FUSED_PRODUCTS = {
    torch.baddbmm,
    T.baddbmm,
    torch.addbmm,
    T.addbmm,
    torch.addmm,
    T.addmm,
    torch.addcmul,
    T.addcmul,
    torch.addcdiv,
    T.addcdiv,
}
_ATTENTION = {
    torch.log_softmax,
    T.log_softmax,
    F.log_softmax,
    F.scaled_dot_product_attention,
}
_NO_RULE = {
    torch.exp,
    T.exp,
    torch.log,
    T.log,
    torch.pow,
    T.pow,
    T.__pow__,
    T.__rpow__,
    torch.sqrt,
    T.sqrt,
    torch.rsqrt,
    T.rsqrt,
    torch.reciprocal,
    T.reciprocal,
    torch.abs,
    T.abs,
    torch.erf,
    T.erf,
    torch.sin,
    torch.cos,
    torch.var,
    T.var,
    torch.std,
    T.std,
    torch.norm,
    T.norm,
    F.layer_norm,
    F.rms_norm,
    F.group_norm,
    F.normalize,
}


@dataclass
class InlineState:
    """What the mode needs: ε, the module stack (for messages), suspension depth."""

    epsilon: float
    stack: list[nn.Module] = field(default_factory=list)
    suspended: int = 0
    names: dict[int, str] = field(default_factory=dict)
    #: outputs of position/segment embedding lookups not yet added to the input
    pending: dict[int, torch.Tensor] = field(default_factory=dict)
    #: called with (lookup output, the sum it was added into) when that happens
    on_source: Callable[[torch.Tensor, torch.Tensor], None] | None = None
    #: the pass's attention ledger, for softmax attention written inline
    ledger: AttentionLedger | None = None

    def where(self) -> str:
        """``path (Class)`` of the innermost module running now."""
        if not self.stack:
            return "the model"
        module = self.stack[-1]
        return f"{self.names.get(id(module), '?')} ({type(module).__name__})"


def _operands(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    values = list(args) + list(kwargs.values())
    if values and isinstance(values[0], str):  # einsum("ij,jk->ik", a, b)
        values = values[1:]
    if len(values) == 1 and isinstance(values[0], (list, tuple)):
        values = list(values[0])
    return values


class InlineRules(TorchFunctionMode):
    """The torch-function mode that applies the rules above (see the module docstring)."""

    def __init__(self, state: InlineState) -> None:
        super().__init__()
        self.state = state

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        state = self.state
        if state.suspended or not state.stack:
            return func(*args, **kwargs)
        operands = _operands(args, kwargs)
        dependent = sum(depends(v) for v in operands)
        out = self._apply(func, args, kwargs, dependent)
        # constant biases on their way to attention logits (inline_attention)
        carry(func, operands, out, dependent)
        if func in _ADDITIONS or func in _SUBTRACTIONS:
            add_bias(func, args, kwargs, out)
        return out

    def _apply(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict, dependent: int
    ) -> Any:
        state = self.state
        if func in _ADDITIONS and state.pending:
            return self._addition(func, args, kwargs)
        if func in _PRODUCTS or func is torch.einsum:
            return self._product(func, args, kwargs)
        if func is F.linear:
            out = func(*args, **kwargs)
            return epsilon_rule(out, state.epsilon) if depends(out) else out
        if func in _ACTIVATIONS and args and depends(args[0]):
            return identity_rule(args[0], func(*args, **kwargs))
        if func in _SOFTMAX and dependent:
            return softmax_rule(
                func, args, kwargs, state.ledger, lambda what: self._refuse(func, what)
            )
        if func in _DIVISIONS and len(args) > 1:
            denominator = args[0] if func is T.__rtruediv__ else args[1]
            if depends(denominator):
                self._refuse(func, "a division by an input-dependent tensor (a normalisation?)")
        elif func in _IN_PLACE_PRODUCTS:
            if dependent > 1:
                self._refuse(func, "an in-place product of two input-dependent tensors")
        elif func in _ATTENTION and dependent:
            self._refuse(
                func,
                "attention computed by a fused kernel or a log-softmax inside the module "
                "instead of through transformers' attention interface "
                "(ALL_ATTENTION_FUNCTIONS) or a softmax written out, so its attention "
                "weights and their rules are out of reach",
            )
        elif func in _FUSED_PRODUCTS and dependent > 1:
            self._refuse(
                func,
                "a fused product-plus-sum of input-dependent tensors (e.g. Bloom's "
                "alibi.baddbmm(q, k) attention logits), which has no LRP rule here",
            )
        elif func in _NO_RULE and dependent:
            self._refuse(func, "a non-linear operation that has no LRP rule here")
        return func(*args, **kwargs)

    def _addition(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict) -> Any:
        """Track where position/segment lookups join the input (their relevance is read there).

        The relevance of a summand ``p`` of ``s = e + p`` is ``p ⊙ ∂/∂s`` (a sum
        passes its gradient unchanged), read at ``s`` because ``p`` itself, a
        lookup in a frozen table, is not on the path autograd differentiates.
        """
        state = self.state
        out = func(*args, **kwargs)
        found = [
            a for a in args[:2] if isinstance(a, torch.Tensor) and state.pending.get(id(a)) is a
        ]
        for summand in found:
            del state.pending[id(summand)]
        if found and depends(out):
            for summand in found:
                if state.on_source is not None:
                    state.on_source(summand, out)
        elif found:  # e.g. position + segment embeddings first: their sum is the lookup now
            state.pending[id(out)] = out
        return out

    def _product(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict) -> Any:
        """Uniform rule when two factors depend on the input; else a linear map."""
        if func is torch.einsum:
            equation, *factors = args
            if len(factors) == 1 and isinstance(factors[0], (list, tuple)):
                factors = list(factors[0])
            if sum(depends(f) for f in factors) > 1:
                if len(factors) != 2:
                    self._refuse(func, "a product of more than two input-dependent tensors")
                factors = [uniform_rule(f) if depends(f) else f for f in factors]
            return func(equation, *factors, **kwargs)
        if len(args) >= 2 and depends(args[0]) and depends(args[1]):
            return func(uniform_rule(args[0]), uniform_rule(args[1]), *args[2:], **kwargs)
        return func(*args, **kwargs)

    def _refuse(self, func: Callable[..., Any], what: str) -> None:
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
        raise ModelNotSupportedError(
            f"LRP cannot go through {self.state.where()}: it runs {name}, {what}. "
            "Only modules whose every non-linear operation has an AttnLRP rule are "
            "supported (see attnwidget.relevance.lrp.structure for what is recognised)."
        )
