"""Which of the paper's rules each leaf module gets, from what the module computes.

Chefer, Gur & Wolf (CVPR 2021) give a rule per kind of layer, not per model
family, so the rule of a leaf module (one without children) follows from its
*role*, which AttnLRP's structure detection decides from what the module
computes (:func:`attnwidget.relevance.lrp.families.roles`, probes in
:mod:`attnwidget.relevance.lrp.structure`), not from its class name or
``config.model_type``. A renamed copy of a supported architecture (XLM-R and
CamemBERT are RoBERTa's code under other names) therefore needs no new code.

Roles → the paper's rules (:func:`paper_rules`):

* **linear**: α1β0 with the module's weight. ``nn.Linear`` (and subclasses)
  keep it as (out, in). Any other affine leaf (GPT-2's ``Conv1D``, a Linear
  copied under another name) gets α1β0 only if its own 2-D ``weight`` *is*
  the matrix of the map: a probe checks ``f(x) − f(0) = x Wᵀ`` (or ``x W``,
  the transposed layout ``Conv1D`` uses); ``f(0)`` is its bias, which α1β0
  ignores like every bias. An affine leaf whose matrix is not a parameter we
  can read (a low-rank product, a weight computed in ``forward``) is refused:
  reconstructing a matrix from probes would be a rule the paper does not use.
* **layer norm, RMS norm, element-wise activation**: relevance passed
  unchanged (the paper's rule for LayerNorm and activations; for RMSNorm, of
  any gain, our extension: it is LayerNorm without centring).
* **passive** (embedding lookups, dropout, identity, element-wise affine
  maps) and **open** (modules the probe cannot call with one tensor, such as
  rotary tables): nothing installed. Lookups sit below the first block, where
  the pass ends; dropout and identity return their input in eval mode;
  a product with a constant parameter (Dinov2's layer scale) is a scaling,
  which :mod:`.inline` passes relevance through where it is consumed; any
  other operation such a module computes on the relevance path leaves an
  autograd node the engine's path check refuses, naming it.
* **router** (a top-k selection, Mixtral) and any other role: refused before
  anything changes, naming the module; AttnLRP has rules for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.chefer.attention import _HINT
from attnwidget.relevance.lrp.families import roles
from attnwidget.relevance.lrp.structure import (
    ACTIVATION,
    LAYER_NORM,
    LINEAR,
    OPEN,
    PASSIVE,
    RMS_NORM,
    Role,
)

#: The two leaf rules of the paper: α1β0 on linear layers, relevance passed unchanged.
ALPHA_BETA, UNCHANGED = "alpha_beta", "unchanged"

#: Roles whose module passes relevance unchanged (LayerNorm, RMSNorm, activations).
_UNCHANGED_ROLES = frozenset({LAYER_NORM, RMS_NORM, ACTIVATION})
#: Roles that get no rule of their own (see the module docstring).
_NO_RULE_ROLES = frozenset({PASSIVE, OPEN})


@dataclass(frozen=True)
class LeafRule:
    """The paper's rule for one leaf module.

    ``kind`` is :data:`ALPHA_BETA` or :data:`UNCHANGED`; ``transposed``: the
    module's ``weight`` is stored (in, out), as GPT-2's ``Conv1D`` keeps it.
    """

    kind: str
    transposed: bool = False

    def weight(self, module: nn.Module) -> torch.Tensor:
        """The (out, in) matrix of a linear leaf."""
        # nn.Module.__getattr__ is typed Tensor | Module; a leaf's weight is a Parameter.
        weight = cast(torch.Tensor, module.weight)
        return weight.T if self.transposed else weight


def leaf_roles(model: nn.Module) -> dict[str, Role]:
    """Every leaf module's role by path; a module without one is refused naming it."""
    try:
        return roles(model)
    except ModelNotSupportedError as error:
        raise ModelNotSupportedError(
            f"chefer2021 with the paper's rules (Chefer, Gur & Wolf 2021) cannot run on "
            f"{type(model).__name__}: {error}"
        ) from error


def paper_rules(model: nn.Module, found: dict[str, Role] | None = None) -> dict[str, LeafRule]:
    """The paper's rule for every leaf module that gets one, by path (nothing changes).

    Args:
        model: the model whose leaves are mapped.
        found: the roles, if already computed (:func:`leaf_roles`).

    Raises:
        ModelNotSupportedError: naming the first module whose role has no rule
            of the paper (a router, an affine map without a readable matrix).
    """
    found = leaf_roles(model) if found is None else found
    modules = dict(model.named_modules())
    rules: dict[str, LeafRule] = {}
    for path, role in found.items():
        module = modules.get(path, model)
        if role.kind in _NO_RULE_ROLES:
            continue
        if role.kind in _UNCHANGED_ROLES:
            rules[path] = LeafRule(UNCHANGED)
        elif role.kind == LINEAR:
            rules[path] = _linear(module, path)
        else:
            raise ModelNotSupportedError(
                f"chefer2021 with the paper's rules (Chefer, Gur & Wolf 2021: α1β0 on linear "
                f"layers, LayerNorm and activations passed unchanged) has no rule for {path} "
                f"({type(module).__name__}), {role.why} (role {role.kind!r}) in "
                f"{type(model).__name__}; {_HINT}"
            )
    return rules


def _linear(module: nn.Module, path: str) -> LeafRule:
    if isinstance(module, nn.Linear):
        return LeafRule(ALPHA_BETA)
    transposed = _weight_layout(module)
    if transposed is None:
        raise ModelNotSupportedError(
            f"{path} ({type(module).__name__}) computes an affine map, but its 'weight' "
            "parameter is not the map's matrix (f(x) − f(0) ≠ x·Wᵀ and ≠ x·W), so the "
            f"α1β0 rule of Chefer, Gur & Wolf (2021) has no weights to split by; {_HINT}"
        )
    return LeafRule(ALPHA_BETA, transposed)


@torch.no_grad()
def _weight_layout(module: nn.Module) -> bool | None:
    """True if ``weight`` is (in, out), False if (out, in), None if it is not the matrix.

    Calls ``forward`` directly (no hooks run) on random rows, once per
    possible layout; a square symmetric weight matches either, correctly.
    """
    weight = getattr(module, "weight", None)
    if not isinstance(weight, torch.Tensor) or weight.ndim != 2:
        return None
    # float32 or wider: a tight check; half precision rounds more
    tol = 1e-4 if torch.finfo(weight.dtype).eps < 1e-6 else 2e-2
    generator = torch.Generator().manual_seed(0)
    for transposed in (False, True):
        width = weight.shape[0] if transposed else weight.shape[1]
        x = torch.randn(3, width, generator=generator).to(weight)
        try:
            moved = module.forward(x) - module.forward(torch.zeros_like(x))
        except Exception:  # this layout's input does not fit the module
            continue
        expected = x @ (weight if transposed else weight.T)
        if not isinstance(moved, torch.Tensor) or moved.shape != expected.shape:
            continue
        if (moved - expected).abs().max() <= tol * (expected.abs().max() + 1e-6):
            return transposed
    return None
