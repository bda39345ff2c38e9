"""Chefer, Gur & Wolf's LRP rules as autograd functions: relevance *is* the gradient.

Chefer, Gur & Wolf (CVPR 2021, "Transformer interpretability beyond attention
visualization") propagate a relevance ``R`` from the target logit down to
every attention map with these rules:

* **linear layers**, LRP-αβ with α = 1, β = 0 (positive contributions only;
  the bias is not an input): with ``x⁺ = max(x, 0)``, ``x⁻ = min(x, 0)`` and
  ``W⁺``, ``W⁻`` likewise, ``Z = x⁺W⁺ᵀ + x⁻W⁻ᵀ``, ``S = R / Z`` and
  ``R_x = x⁺ ⊙ (S W⁺) + x⁻ ⊙ (S W⁻)`` (:class:`AlphaBeta`);
* **LayerNorm, activations, softmax, dropout, scaling**: relevance passed
  unchanged, ``R_x = R_y`` (:class:`PassThrough`);
* **two-input operations** ``Z = f(a, b)`` (matmuls, additions): gradient ×
  input split ``R_a = a ⊙ ∂Z/∂a·S``, ``R_b = b ⊙ ∂Z/∂b·S`` with ``S = R / Z``;
  the attention block halves both parts of each of its two matmuls
  (:class:`MatmulSplit`), and residual additions re-normalise the two parts
  so that their sums keep the proportion ``|ΣR_a| : |ΣR_b|`` and add up to
  ``ΣR`` (:class:`ResidualAdd`).

Our extension, for heads the authors' ViT code did not have (BEiT's and
Dinov2's mean pooling): a **mean over tokens** is the linear map with weights
1/N, so it gets α1β0, which for positive weights shares each feature's ``R``
among the tokens by their positive parts, ``R_i = x_i⁺ / Σ_j x_j⁺ · R``
(:class:`TokenMean`). Scalings by a constant pass relevance unchanged
(:func:`pass_through`; see :mod:`.inline`).

Every division is the authors' stabilised one (:func:`safe_divide`).

Each class has a value-preserving forward and a backward that maps the
relevance of its output to that of its inputs. A pass seeds the target logit
with gradient 1 (the authors' one-hot start), so the "gradient" that reaches
a tensor is its relevance; operations between these functions must be
permutations, selections, reshapes or fan-out (whose plain gradients move or
sum relevance correctly), which :mod:`.engine` checks.
"""

from __future__ import annotations

import torch
from torch.autograd import Function

#: Stabiliser of the authors' division.
STABILISER = 1e-9


def safe_divide(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a / (b + 1e-9)`` where ``b ≠ 0`` and 0 where ``b == 0`` (the authors' division).

    (For negative ``b`` the stabiliser is still added, not subtracted, as in
    their code; ``b`` is ≥ 0 in the α1β0 rule, where it matters most.)
    """
    nonzero = b != 0
    return torch.where(nonzero, a / torch.where(nonzero, b + STABILISER, 1.0), 0.0)


class AlphaBeta(Function):
    """Linear layer ``y = x Wᵀ + b`` with the α = 1, β = 0 rule.

    ``forward(x, y, weight)`` returns ``y`` (computed by the model; passed
    detached) and keeps ``x`` and ``weight`` (out_features, in_features).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        # A copy, not a view: models change layer outputs in place (Falcon's
        # fused projections), which autograd refuses on a custom Function's view.
        return y.clone()

    @staticmethod
    def backward(ctx, relevance: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        x, weight = ctx.saved_tensors
        w_pos, w_neg = weight.clamp(min=0), weight.clamp(max=0)
        x_pos, x_neg = x.clamp(min=0), x.clamp(max=0)
        z = x_pos @ w_pos.T + x_neg @ w_neg.T  # ≥ 0: only positive contributions
        s = safe_divide(relevance.to(z.dtype), z)
        r_x = x_pos * (s @ w_pos) + x_neg * (s @ w_neg)
        return r_x.to(x.dtype), None, None


class PassThrough(Function):
    """``y = f(x)`` with relevance passed unchanged: ``R_x = R_y`` (same shape).

    ``forward(x, y)`` returns ``y`` (computed by the model; passed detached).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.shape != y.shape:
            raise ValueError(f"relevance pass-through needs equal shapes, got {x.shape}, {y.shape}")
        ctx.dtype = x.dtype
        return y.clone()  # not a view: see AlphaBeta

    @staticmethod
    def backward(ctx, relevance: torch.Tensor) -> tuple[torch.Tensor, None]:
        return relevance.to(ctx.dtype), None


class MatmulSplit(Function):
    """``Z = a @ b`` with the gradient × input split, each part multiplied by ``factor``.

    ``R_a = factor · a ⊙ (S bᵀ)``, ``R_b = factor · b ⊙ (aᵀ S)``, ``S = R / Z``.
    Inside attention ``factor`` is ½ (the authors' halving after each matmul).
    """

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, factor: float) -> torch.Tensor:
        z = a @ b
        ctx.save_for_backward(a, b, z)
        ctx.factor = factor
        return z

    @staticmethod
    def backward(ctx, relevance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        a, b, z = ctx.saved_tensors
        s = safe_divide(relevance, z)
        r_a = a * (s @ b.transpose(-1, -2))
        r_b = b * (a.transpose(-1, -2) @ s)
        return r_a * ctx.factor, r_b * ctx.factor, None


class ResidualAdd(Function):
    """Residual addition ``Z = a + b`` with the authors' re-normalised split.

    ``R_a = a ⊙ S``, ``R_b = b ⊙ S`` (``S = R / Z``), then with ``s_a = ΣR_a``,
    ``s_b = ΣR_b`` over each example's whole tensor (positions and features)
    ``R_a ← R_a · (|s_a| / (|s_a| + |s_b|) · ΣR) / s_a`` and ``R_b`` likewise,
    so ``ΣR_a + ΣR_b = ΣR`` (exactly, up to the stabiliser). Sums run per
    example (dimension 0), which for the authors' batch of one is the whole
    tensor.
    """

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return a + b

    @staticmethod
    def backward(ctx, relevance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        s = safe_divide(relevance, a + b)
        r_a, r_b = a * s, b * s
        dims = tuple(range(1, relevance.dim()))
        total = relevance.sum(dim=dims, keepdim=True)
        sum_a = r_a.sum(dim=dims, keepdim=True)
        sum_b = r_b.sum(dim=dims, keepdim=True)
        both = sum_a.abs() + sum_b.abs()
        r_a = r_a * safe_divide(safe_divide(sum_a.abs(), both) * total, sum_a)
        r_b = r_b * safe_divide(safe_divide(sum_b.abs(), both) * total, sum_b)
        return r_a, r_b


class TokenMean(Function):
    """``y = x.mean(dims)`` as a linear map with weights 1/N under α1β0 (our extension).

    With ``Z = Σ_j x_j⁺ / N`` (the negative parts meet no negative weight) and
    ``S = R / Z`` (the authors' safe divide): ``R_x = x⁺ / N ⊙ S``, i.e.
    ``R_i = x_i⁺ / Σ_j x_j⁺ · R`` per feature, conserving ``ΣR`` where some
    ``x_j > 0``; a feature negative at every token keeps none of its ``R``
    (the weights have no negative part to carry it), as α1β0 drops it.
    ``forward(x, dims, keepdim)`` computes the mean as the model does.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, dims: tuple[int, ...], keepdim: bool) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.dims = tuple(sorted(d % x.dim() for d in dims))
        ctx.keepdim = keepdim
        return x.mean(dim=dims, keepdim=keepdim)

    @staticmethod
    def backward(ctx, relevance: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (x,) = ctx.saved_tensors
        count = 1
        for d in ctx.dims:
            count *= x.shape[d]
        if not ctx.keepdim:
            for d in ctx.dims:
                relevance = relevance.unsqueeze(d)
        x_pos = x.clamp(min=0)
        z = x_pos.sum(dim=ctx.dims, keepdim=True) / count
        return x_pos / count * safe_divide(relevance.to(x.dtype), z), None, None


def alpha_beta(x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``y`` (= the linear layer's output on ``x``) carrying the α1β0 rule back to ``x``."""
    return AlphaBeta.apply(x, y.detach(), weight.detach())


def pass_through(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``y`` (= ``f(x)``) carrying relevance back to ``x`` unchanged."""
    return PassThrough.apply(x, y.detach())


def residual_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a + b`` with the re-normalised split of :class:`ResidualAdd`."""
    return ResidualAdd.apply(a, b)


def token_mean(x: torch.Tensor, dims: tuple[int, ...], keepdim: bool = False) -> torch.Tensor:
    """``x.mean(dims)`` with the α1β0 rule of :class:`TokenMean` (our extension)."""
    return TokenMean.apply(x, tuple(dims), bool(keepdim))


def matmul_split(a: torch.Tensor, b: torch.Tensor, factor: float = 0.5) -> torch.Tensor:
    """``a @ b`` with the gradient × input split, each part times ``factor``."""
    return MatmulSplit.apply(a, b, float(factor))


def product_split(a: torch.Tensor, b: torch.Tensor, factor: float = 0.5) -> torch.Tensor:
    """Element-wise ``a * b`` split like the attention matmuls (our choice for gates).

    Gradient × input gives each factor the whole ``R`` (``a ⊙ b ⊙ R / (ab) = R``),
    so with ``factor`` ½ each gets half; the authors defined no gated layers.
    """
    return _ProductSplit.apply(a, b, float(factor))


class _ProductSplit(Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, factor: float) -> torch.Tensor:
        z = a * b
        ctx.save_for_backward(z)
        ctx.factor = factor
        return z

    @staticmethod
    def backward(ctx, relevance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        (z,) = ctx.saved_tensors
        part = z * safe_divide(relevance, z) * ctx.factor
        return part, part.clone(), None


#: Backward-node class names of the functions above (the engine's path check).
NODE_NAMES = frozenset(
    f"{cls.__name__}Backward"
    for cls in (AlphaBeta, PassThrough, MatmulSplit, ResidualAdd, TokenMean, _ProductSplit)
)
