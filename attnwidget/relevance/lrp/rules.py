"""AttnLRP propagation rules in gradient × input form (Achtibat et al., ICML 2024).

Layer-wise relevance propagation (Bach et al., 2015, "On pixel-wise
explanations for non-linear classifier decisions by layer-wise relevance
propagation", PLOS ONE) redistributes the target score backwards, layer by
layer, with a rule per operation. Achtibat et al. (2024, "AttnLRP:
Attention-aware layer-wise relevance propagation for Transformers", ICML)
give rules for every Transformer operation and show that all of them can be
run as an ordinary backward pass with a few modified local gradients: if the
gradient ``g_t`` arriving at a tensor ``t`` is defined so that the relevance
of ``t`` is ``R_t = t ⊙ g_t``, then

* **linear layers and additions, ε-rule** ``R_x = x ⊙ Wᵀ (R_z / (z + ε·sign z))``:
  the plain gradient with ``g_z`` scaled by ``z / (z + ε·sign z)``
  (:func:`epsilon_rule`; ε = 0 is the plain gradient, LRP-0). A bias ``b``
  keeps ``b ⊙ g_z`` for itself (it is not an input).
* **element-wise products and matmuls, uniform rule** ``R_a = R_b = R_{a·b} / 2``:
  the plain gradient halved on both factors (:func:`uniform_rule`).
* **element-wise non-linearities, identity rule** ``R_x = R_{f(x)}``: the local
  gradient ``f'(x)`` replaced by ``f(x) / x`` (:func:`identity_rule`).
* **residual additions**: ε-rule with ε = 0, i.e. the plain gradient; a sum
  ``a + b`` splits ``R`` as ``a/(a+b)`` and ``b/(a+b)``, exactly conservative.
* **softmax**, ``R_x = x ⊙ (R_s − s ⊙ Σ_j R_{s,j})`` (a Taylor expansion at x
  with bias): in this form it *is* the plain softmax gradient, so nothing is
  changed (see :mod:`.attention`). The rule is not conservative: the part
  ``Σ R_s − Σ R_x`` is absorbed by its bias.
* **LayerNorm and RMSNorm, identity rule on the normaliser**: ``1/σ`` treated
  as a constant, i.e. the standard deviation detached; what remains,
  ``γ ⊙ (x − mean)/σ + β``, is a linear map and gets the ε-rule on its output
  like a linear layer (β is a bias). An RMSNorm ``c ⊙ x / rms(x)`` with rms
  constant is diagonal, so its rule is the identity rule
  (see :mod:`.families`, where both are installed).

Every function here is an autograd-level building block with an identity (or
value-preserving) forward, so a model patched with them computes exactly its
usual outputs (up to float rounding in the norms).
"""

from __future__ import annotations

import torch
from torch.autograd import Function

#: Default ε of the ε-rule (linear layers and norms).
DEFAULT_EPSILON = 1e-6


class _ScaleGradient(Function):
    """Identity forward; backward multiplies the gradient by a constant."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, factor: float) -> torch.Tensor:
        ctx.factor = factor
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * ctx.factor, None


class _EpsilonRule(Function):
    """Identity forward on a layer output z; backward ``g ← g · z / (z + ε·sign z)``."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, epsilon: float) -> torch.Tensor:
        size = z.abs()  # z / (z + ε·sign z) = |z| / (|z| + ε)
        ctx.save_for_backward(size / (size + epsilon))
        # Not a view (a view made here may not be modified in place, and models do
        # modify layer outputs in place: Falcon's `mlp_output += attention_output`);
        # the factor is kept instead of z, whose storage such a change rewrites.
        return z.detach()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (factor,) = ctx.saved_tensors
        return grad * factor, None


class _IdentityRule(Function):
    """Forward returns ``y = f(x)`` (given); backward ``g_x = g_y · y / x`` (0 where x = 0)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        ratio = (y / x).masked_fill_(x == 0, 0.0)
        ctx.save_for_backward(ratio)
        return y.view_as(y)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (ratio,) = ctx.saved_tensors
        return grad * ratio, None


def epsilon_rule(z: torch.Tensor, epsilon: float) -> torch.Tensor:
    """The ε-rule of the layer (linear map or sum) that produced ``z``.

    Returns ``z`` unchanged; in the backward pass the gradient arriving at
    ``z`` is scaled by ``z / (z + ε·sign z)``, so that the input relevance is
    ``x ⊙ Wᵀ (R_z / (z + ε·sign z))`` with ``R_z = z ⊙ g_z``. With ε = 0 this
    is the identity (plain gradient, LRP-0).
    """
    if epsilon == 0:
        return z
    return _EpsilonRule.apply(z, float(epsilon))


def uniform_rule(x: torch.Tensor, parts: int = 2) -> torch.Tensor:
    """Mark ``x`` as one of ``parts`` factors of a product (uniform rule).

    Returns ``x`` unchanged; its gradient is divided by ``parts``, so a
    product ``a·b`` (element-wise or matmul) gives each factor half of the
    product's relevance: ``R_a = a ⊙ ((R / (2·ab)) bᵀ)``.
    """
    return _ScaleGradient.apply(x, 1.0 / parts)


def identity_rule(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Identity rule for an element-wise non-linearity ``y = f(x)``: ``R_x = R_y``.

    ``y`` must already be ``f(x)``; the result equals ``y`` but its gradient
    to ``x`` is ``g_y · f(x) / x`` instead of ``g_y · f'(x)``. No stabiliser is
    needed (``f(x)/x`` stays finite near 0 for the activations we cover);
    where x is exactly 0 the gradient is 0, as that unit carries no relevance.
    """
    return _IdentityRule.apply(x, y.detach())
