"""Operations written inline in a model's ``forward``, rebuilt to carry the rules.

A module's hooks see tensors, not the operations a parent's ``forward``
applies to them between two modules (``x + attn(ln(x))``, ``logits / 2``,
``tokens[:, 1:].mean(1)``). :func:`resolve` takes a tensor about to be
consumed (by a rule's module, a block, or as the model's logits), walks its
autograd graph back to tensors the pass already knows (outputs of rules,
block inputs), and recomputes the same value from them with each inline
operation replaced by its rule:

* ``a + b`` of two tensors of one shape: the authors' re-normalised
  residual split (:func:`.rules.residual_add`); neither input may itself be
  an addition (a sum of three branches, as in parallel residual streams, has
  no rule of theirs);
* ``a · b`` of two tensors of one shape: the product split
  (:func:`.rules.product_split`; our choice for gates, see :mod:`.engine`);
* ``tanh``, ``gelu``, ``relu``: relevance passed unchanged (the paper's
  rule for activations);
* **our extensions**, for heads and layers the authors' BERT and ViT code
  did not have, each the nearest rule of theirs (Chefer, Gur & Wolf, CVPR
  2021): ``x · c`` and ``x / c`` with ``c`` a constant (a number, or a
  parameter that takes no gradient: BEiT's and Dinov2's layer scale,
  DeiT-with-teacher's ``(cls + distillation) / 2``): relevance passed
  unchanged, as the paper passes the attention's scaling; a mean over
  tokens (``x.mean(dim)``, BEiT's and Dinov2's pooling): a linear map with
  weights 1/N under the α1β0 rule (:func:`.rules.token_mean`);
* slices, selections and concatenations between them are replayed as they
  were (their gradient moves relevance correctly).

The recomputed value must equal the consumed tensor exactly
(``torch.equal``), or the tensor is left as it is, and the engine's path
check then refuses the operation, naming it. Nothing found along the way is
remembered unless the whole value matched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Number
from typing import Any, cast

import torch
from torch import nn

from attnwidget.relevance.chefer.rules import pass_through, product_split, residual_add, token_mean

#: Inline element-wise activations recognised between two modules.
ACTIVATIONS: dict[str, Callable[[Any], Callable[[torch.Tensor], torch.Tensor]]] = {
    "TanhBackward0": lambda _node: torch.tanh,
    "ReluBackward0": lambda _node: torch.relu,
    "GeluBackward0": lambda node: (
        lambda z: nn.functional.gelu(z, approximate=getattr(node, "_saved_approximate", "none"))
    ),
}

#: How far back one resolution walks (a head is a few operations deep).
MAX_DEPTH = 32


@dataclass(frozen=True)
class _Found:
    """A rebuilt value; ``changed``: a rule was put in somewhere below it."""

    tensor: torch.Tensor
    changed: bool


class Rebuild:
    """One resolution: ``known(node)`` gives the pass's tensor for a node, or None."""

    def __init__(self, known: Callable[[Any], torch.Tensor | None]) -> None:
        self.known = known
        #: id(node) → (node, rebuilt value), kept only if the whole value matches
        self.found: dict[int, tuple[Any, _Found]] = {}

    def value(self, node: Any, depth: int = 0, sums: bool = True) -> _Found | None:
        """``node``'s value rebuilt from known tensors, or None where there is no rule.

        ``sums``: whether an addition may be rebuilt here (not directly under another).
        """
        if node is None:
            return None
        known = self.known(node)
        if known is not None:
            return _Found(known, False)
        entry = self.found.get(id(node))
        if entry is not None and entry[0] is node:
            return entry[1]
        if depth > MAX_DEPTH:
            return None
        result = self._rule(node, type(node).__name__, depth + 1, sums)
        if result is not None:
            self.found[id(node)] = (node, result)
        return result

    def _rule(self, node: Any, name: str, depth: int, sums: bool) -> _Found | None:
        parents = [parent for parent, _ in node.next_functions]
        if name == "AddBackward0" and len(parents) == 2 and None not in parents:
            if not sums or getattr(node, "_saved_alpha", 1) != 1:
                return None
            return self._pair(parents, depth, residual_add)
        if name == "MulBackward0" and len(parents) == 2 and None not in parents:
            return self._pair(parents, depth, product_split)
        if name in {"MulBackward0", "DivBackward0"} and len(parents) == 2:
            return self._scaling(node, name, parents, depth, sums)
        if len(parents) != 1 and name != "CatBackward0":
            return None
        if name in ACTIVATIONS:
            z = self.value(parents[0], depth, sums=False)
            return None if z is None else _Found(pass_through(z.tensor, _act(node, z)), True)
        if name == "MeanBackward1":
            x = self.value(parents[0], depth, sums)
            if x is None or tuple(x.tensor.shape) != tuple(node._saved_self_sym_sizes):
                return None
            return _Found(token_mean(x.tensor, tuple(node._saved_dim), node._saved_keepdim), True)
        return self._replay(node, name, parents, depth, sums)

    def _pair(self, parents: list[Any], depth: int, rule: Callable) -> _Found | None:
        a, b = (self.value(parent, depth, sums=False) for parent in parents)
        if a is None or b is None or a.tensor.shape != b.tensor.shape:
            return None
        return _Found(rule(a.tensor, b.tensor), True)

    def _scaling(
        self, node: Any, name: str, parents: list[Any], depth: int, sums: bool
    ) -> _Found | None:
        """``x · c``, ``c · x`` or ``x / c``, ``c`` a constant: relevance passed unchanged."""
        if parents.count(None) != 1:
            return None  # both inputs take a gradient: not a constant
        index = 0 if parents[0] is not None else 1
        if name == "DivBackward0" and index != 0:
            return None  # c / x is not a scaling of x
        constant = node._saved_other if index == 0 else node._saved_self
        if not isinstance(constant, torch.Tensor | Number):
            return None
        x = self.value(parents[index], depth, sums)
        if x is None:
            return None
        # torch's stubs take int | float | bool | Tensor, not numbers.Number; at run time
        # the saved Number scales as it did in the forward pass.
        scale = cast("torch.Tensor | float", constant)
        if name == "DivBackward0":
            y = x.tensor / scale
        else:
            y = x.tensor * scale if index == 0 else scale * x.tensor
        if y.shape != x.tensor.shape:
            return None  # the constant broadcasts x: not one scaling per element
        return _Found(pass_through(x.tensor, y), True)

    def _replay(
        self, node: Any, name: str, parents: list[Any], depth: int, sums: bool
    ) -> _Found | None:
        """Slices, selections and concatenations, done again on rebuilt inputs."""
        if name == "CatBackward0":
            values = [self.value(parent, depth, sums) for parent in parents]
            parts = [part for part in values if part is not None]
            if not values or len(parts) != len(values):
                return None
            joined = torch.cat([part.tensor for part in parts], dim=node._saved_dim)
            return _Found(joined, any(part.changed for part in parts))
        if name not in {"SliceBackward0", "SelectBackward0"}:
            return None
        x = self.value(parents[0], depth, sums)
        if x is None or tuple(x.tensor.shape) != tuple(node._saved_self_sym_sizes):
            return None
        dim = node._saved_dim
        if name == "SelectBackward0":
            return _Found(x.tensor.select(dim, node._saved_index), x.changed)
        where = (slice(None),) * dim + (
            slice(node._saved_start, node._saved_end, node._saved_step),
        )
        return _Found(x.tensor[where], x.changed)


def _act(node: Any, z: _Found) -> torch.Tensor:
    return ACTIVATIONS[type(node).__name__](node)(z.tensor)


def resolve(
    tensor: Any,
    known: Callable[[Any], torch.Tensor | None],
    keep: Callable[[torch.Tensor, Any], torch.Tensor],
) -> Any:
    """``tensor``, or the same value carrying the rules of the inline operations
    that made it (module docstring); ``keep(value, node)`` remembers each rebuilt
    value for its node, once the whole value matched."""
    if not isinstance(tensor, torch.Tensor) or tensor.grad_fn is None:
        return tensor
    node = tensor.grad_fn
    found = known(node)
    if found is not None:
        return found
    rebuild = Rebuild(known)
    result = rebuild.value(node)
    if result is None or not result.changed:
        return tensor  # nothing to rewire (or no rule: the path check names it)
    value = result.tensor
    if value.shape != tensor.shape or value.dtype != tensor.dtype:
        return tensor
    if not torch.equal(value, tensor):
        return tensor
    for inner, rebuilt in rebuild.found.values():
        keep(rebuilt.tensor, inner)
    return value
