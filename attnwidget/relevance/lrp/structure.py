"""What each leaf module of a model is, decided from what it computes.

AttnLRP (Achtibat et al., ICML 2024) needs a rule per operation; for a leaf
module (one without children) the rule follows from what the module does, not
from its class name or ``config.model_type``, so a renamed copy of a supported
architecture needs no new code. :func:`leaf_role` decides, in this order:

1. **Types that say it** (fast path): ``nn.Linear`` and GPT-2's ``Conv1D``
   (linear), ``nn.LayerNorm``, ``nn.Embedding`` and subclasses such as OPT's
   learned positions (lookups), dropout and identity, torch's activation modules.
2. **A probe** on a small random input, calling the module's ``forward``
   directly (no hooks run):

   * output *i* depends on input *i* only, and not affinely: an element-wise
     **activation** (identity rule);
   * ``y = c ⊙ x / rms(x)`` with ``c`` the same for every row (scale-invariant,
     no centring): an **RMSNorm** of any flavour, e.g. Llama's ``w ⊙ x/rms``
     or Gemma's ``(1 + w) ⊙ x/rms``; with the root mean square held constant
     the map is diagonal, so its rule is the identity rule ``R_x = R_y``;
   * ``y = γ ⊙ (x − mean)/σ + β`` (fitted per column): a **LayerNorm**;
   * affine (``f(a + b) = f(a) + f(b) − f(0)``, ``f(2a) = 2 f(a) − f(0)``): a
     **linear** map (ε-rule);
   * a tuple with an integer tensor (a top-k selection), e.g. Mixtral's
     router: a **router**; its outputs are treated as constants (the routing
     weights scale the experts' outputs like fixed coefficients, so relevance
     flows through the experts only; the choice of experts is not explained).
3. A module the probe cannot call with one tensor (rotary tables take position
   ids, OPT's positions take a mask) runs as it is, and the operations inside it
   meet :mod:`.inline`'s rules: if one of them is non-linear on the relevance
   path without a rule, the pass is refused naming the module.

A module the probe can call but that matches none of the above (e.g. a softmax
module inside an MLP) is refused before the pass, naming its path and class.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attnwidget.errors import ModelNotSupportedError

LINEAR, ACTIVATION, RMS_NORM, LAYER_NORM = "linear", "activation", "rms_norm", "layer_norm"
PASSIVE, ROUTER, OPEN = "passive", "router", "open"

_ACTIVATION_TYPES = (
    nn.GELU,
    nn.SiLU,
    nn.Tanh,
    nn.ReLU,
    nn.LeakyReLU,
    nn.Mish,
    nn.ELU,
    nn.Hardtanh,
    nn.Sigmoid,
    nn.Softplus,
)
_PASSIVE_TYPES = (nn.Embedding, nn.EmbeddingBag, nn.Identity, nn.modules.dropout._DropoutNd)


@dataclass(frozen=True)
class Role:
    """A leaf module's role. ``gain`` is ``"weight"``, ``"1+weight"`` or None (LayerNorm γ)."""

    kind: str
    why: str
    gain: str | None = None
    epsilon: float | None = None


def _is_conv1d(module: nn.Module) -> bool:
    # GPT-2's Conv1D: x @ W + b with W (in, out); recognised by type when it is that class.
    try:
        from transformers.pytorch_utils import Conv1D
    except ImportError:  # pragma: no cover - transformers is a dependency
        return False
    return isinstance(module, Conv1D)


def leaf_role(module: nn.Module, path: str) -> Role:
    """The :class:`Role` of one leaf module, or a clear error naming it."""
    if isinstance(module, nn.Linear) or _is_conv1d(module):
        return Role(LINEAR, "a linear layer")
    if isinstance(module, nn.LayerNorm):
        if len(module.normalized_shape) != 1:
            raise ModelNotSupportedError(
                f"{path} ({type(module).__name__}) normalises over more than the last "
                "dimension; LRP's LayerNorm rule covers the last dimension only."
            )
        return Role(LAYER_NORM, "nn.LayerNorm", "weight" if module.weight is not None else None)
    if isinstance(module, _PASSIVE_TYPES):
        return Role(PASSIVE, "a lookup, dropout or identity")
    if isinstance(module, _ACTIVATION_TYPES):
        return Role(ACTIVATION, "an element-wise activation")
    return _probe(module, path)


# ---- the probe --------------------------------------------------------------


def _candidate_dims(module: nn.Module) -> list[int]:
    dims: list[int] = []
    for param in module.parameters(recurse=False):
        for size in (param.shape[-1], param.shape[0]) if param.ndim else ():
            if size > 1 and size not in dims:
                dims.append(int(size))
    return dims or [8]


def _close(a: torch.Tensor, b: torch.Tensor, scale: float, tol: float) -> bool:
    return bool(((a - b).abs().max() <= tol * scale).item())


@torch.no_grad()
def _probe(module: nn.Module, path: str) -> Role:
    param = next(module.parameters(recurse=False), None)
    dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
    device = param.device if param is not None else torch.device("cpu")
    # float32 or wider keeps the probe's tests meaningful; half precision is looser
    tol = 1e-4 if torch.finfo(dtype).eps < 1e-6 else 2e-2
    generator = torch.Generator().manual_seed(0)
    for dim in _candidate_dims(module):

        def sample(rows: int = 4, scale: float = 3.0, dim: int = dim) -> torch.Tensor:
            x = torch.randn(rows, dim, generator=generator) * scale + 0.7
            return x.to(device=device, dtype=dtype)

        x = sample()
        try:
            y = module.forward(x)
        except Exception:  # any failure: the probe's input does not fit this module
            continue
        if isinstance(y, (tuple, list)):
            if any(isinstance(t, torch.Tensor) and not t.is_floating_point() for t in y):
                return Role(ROUTER, "returns a selection (integer indices) and its weights")
            break
        if not isinstance(y, torch.Tensor) or not y.is_floating_point():
            break
        scale = float(y.abs().max()) + 1e-6
        if y.shape == x.shape and _elementwise(module, x, y):
            if _affine(module, x, sample(), tol):
                return Role(PASSIVE, "an element-wise affine map (its gradient is the rule)")
            return Role(ACTIVATION, "an element-wise non-linear function")
        if y.shape == x.shape:
            role = _normalisation(module, x, y, scale, tol)
            if role is not None:
                return role
        if _affine(module, x, sample(), tol):
            return Role(LINEAR, "an affine map")
        raise ModelNotSupportedError(
            f"LRP does not know the role of {path} ({type(module).__name__}): on a probe "
            "input it is neither linear, an element-wise activation, a LayerNorm or "
            "RMSNorm, nor a router, so no AttnLRP rule fits it. Supported are models built "
            "from those pieces and attention through transformers' attention interface."
        )
    return Role(OPEN, "not callable with one tensor; its operations are checked as they run")


def _elementwise(module: nn.Module, x: torch.Tensor, y: torch.Tensor) -> bool:
    """Output (i, j) changes, and nothing else does, when input (i, j) changes."""
    for i, j in ((0, 0), (1, x.shape[1] - 1)):
        moved = x.clone()
        moved[i, j] += 0.37
        changed = module.forward(moved) != y
        if changed.sum() > 1 or (changed.sum() == 1 and not changed[i, j]):
            return False
    return True


def _affine(module: nn.Module, a: torch.Tensor, b: torch.Tensor, tol: float) -> bool:
    f = module.forward
    zero = f(torch.zeros_like(a))
    fa, fb = f(a), f(b)
    scale = float(fa.abs().max() + fb.abs().max() + zero.abs().max()) + 1e-6
    return _close(f(a + b) + zero, fa + fb, scale, tol) and _close(
        f(2 * a) + zero, 2 * fa, scale, tol
    )


def _normalisation(
    module: nn.Module, x: torch.Tensor, y: torch.Tensor, scale: float, tol: float
) -> Role | None:
    """RMSNorm or LayerNorm, recognised by scale invariance and the shape of the map."""
    wide, out = x.double(), y.double()
    if not _close(module.forward(x * 4).double(), out, scale, 10 * tol):
        return None  # a norm's output does not change when its input is scaled
    rms = wide.pow(2).mean(-1, keepdim=True).sqrt()
    gains = out * rms / wide  # c in y = c ⊙ x / rms(x), one row per probe row
    if _close(gains, gains[:1].expand_as(gains), float(gains.abs().max()) + 1e-6, 10 * tol):
        return Role(RMS_NORM, "an RMSNorm: y = c ⊙ x / rms(x)")
    centred = wide - wide.mean(-1, keepdim=True)
    normal = centred / centred.pow(2).mean(-1, keepdim=True).sqrt()
    # fit y = γ n + β per column over the probe rows (4 rows, 2 unknowns)
    design = torch.stack([normal, torch.ones_like(normal)], dim=-1).permute(1, 0, 2)
    solution = torch.linalg.lstsq(design, out.T.unsqueeze(-1)).solution[..., 0]
    fitted = (design @ solution.unsqueeze(-1))[..., 0].T
    if not _close(fitted, out, scale, 10 * tol):
        return None
    gamma = solution[:, 0]
    weight = getattr(module, "weight", None)
    gain = None
    if isinstance(weight, torch.Tensor) and weight.shape == gamma.shape:
        if torch.allclose(weight.double(), gamma, rtol=1e-2, atol=1e-3):
            gain = "weight"
        elif torch.allclose(1 + weight.double(), gamma, rtol=1e-2, atol=1e-3):
            gain = "1+weight"
    if gain is None and not torch.allclose(gamma, torch.ones_like(gamma), rtol=1e-2, atol=1e-3):
        return None  # a LayerNorm whose γ is not a parameter we can read: no rule here
    return Role(LAYER_NORM, "a LayerNorm: y = γ ⊙ (x − mean)/σ + β", gain, _epsilon(module))


def _epsilon(module: nn.Module) -> float:
    for name in ("eps", "variance_epsilon", "epsilon", "layer_norm_eps"):
        value = getattr(module, name, None)
        if isinstance(value, (int, float)):
            return float(value)
    return 1e-5
