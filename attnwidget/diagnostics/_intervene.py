"""Edit a model's attention probabilities during a forward pass, without forking its code.

transformers computes softmax attention inside each attention module, through
the function its config names (``config._attn_implementation``), looked up in
``transformers.AttentionInterface``. :func:`attention_function` is registered
there under :data:`IMPLEMENTATION` (with the eager mask): it computes exactly
what the eager implementation computes::

    X = scaling · Q Kᵀ + mask     (B, H, n, n) attention logits
    A = softmax(X)                 (B, H, n, n) attention probabilities
    O = A V                        (B, H, n, d_head)

and, while :func:`edited` is active, hands ``A`` of chosen layers to an *edit*
(``edit(A, allowed) -> A'``, ``allowed`` the keys the mask lets each row see)
before ``A'`` multiplies the values. Layers are numbered by the order of the
attention calls in one forward pass (0 = first layer), which is the layer
order for encoders and decoders alike. :func:`intervention` switches the model
to the function inside :func:`attnwidget.capture.capture_ready` (eval mode,
frozen parameters, hooks snapshot, the model's lock), so afterwards the model's
attention implementation, hooks and training flags are what they were.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from attnwidget.capture.state import all_configs, capture_ready
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.attention_interface import (
    check_plain_attention,
    default_scaling,
    register_attention,
    repeat_kv_heads,
    softmax_weights,
)

#: Name under which :func:`attention_function` is registered with transformers.
IMPLEMENTATION = "attnwidget_diagnostics"

#: ``edit(weights (B, H, n, n), allowed (B, H, n, n) bool) -> new weights``.
Edit = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass
class Pass:
    """One forward pass: the edits by layer, and what each layer's attention was."""

    edits: Mapping[int, Edit] = field(default_factory=dict)
    calls: int = 0
    #: the (possibly edited) probabilities each layer used, in call order
    weights: list[torch.Tensor] = field(default_factory=list)


_ACTIVE: ContextVar[Pass | None] = ContextVar("attnwidget_diagnostics_pass", default=None)


def attention_function(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager softmax attention whose probabilities the active pass may edit.

    Shapes as transformers' eager functions: query (B, H, n, d), key/value
    (B, H_kv, n, d); returns ``(output (B, n, H, d), weights (B, H, n, n))``.
    No dropout (the diagnostics run in eval mode).
    """
    check_plain_attention(
        kwargs, "is not plain softmax attention; the diagnostics edit softmax probabilities only."
    )
    scaling = default_scaling(query, scaling)
    key = repeat_kv_heads(key, query.shape[1])
    value = repeat_kv_heads(value, query.shape[1])
    logits = torch.matmul(query, key.transpose(-1, -2)) * scaling
    if attention_mask is not None:
        logits = logits + attention_mask[..., : key.shape[-2]]
    weights = softmax_weights(logits, query)
    state = _ACTIVE.get()
    if state is not None:
        edit = state.edits.get(state.calls)
        state.calls += 1
        if edit is not None:
            weights = edit(weights, allowed_keys(attention_mask, weights))
        state.weights.append(weights)
    output = torch.matmul(weights, value)
    return output.transpose(1, 2).contiguous(), weights


def allowed_keys(attention_mask: torch.Tensor | None, weights: torch.Tensor) -> torch.Tensor:
    """Boolean (B, H, n, n): the keys each row may attend to (the mask's finite entries)."""
    if attention_mask is None:
        return torch.ones_like(weights, dtype=torch.bool)
    mask = attention_mask[..., : weights.shape[-1]]
    if mask.dtype == torch.bool:
        allowed = mask
    else:
        allowed = mask > torch.finfo(mask.dtype).min / 2
    return allowed.expand_as(weights)


def register(*, required: bool = True) -> bool:
    """Register :func:`attention_function` (transformers ≥ 5.0; see
    :func:`attnwidget.relevance.attention_interface.register_attention`)."""
    try:
        return register_attention(IMPLEMENTATION, attention_function, required=required)
    except ModelNotSupportedError as error:
        import transformers

        raise ModelNotSupportedError(
            "attnwidget.diagnostics edits attention through transformers.AttentionInterface, "
            f"which every supported model calls only from transformers 5.0; this is "
            f"{transformers.__version__}. Upgrade with `pip install -U 'transformers>=5.0'`."
        ) from error


def _switch(model: nn.Module) -> None:
    configs = all_configs(model)
    setter = getattr(model, "set_attn_implementation", None)
    can_set = getattr(model, "_can_set_attn_implementation", None)
    if callable(setter) and (not callable(can_set) or can_set()):
        try:
            setter(IMPLEMENTATION)
        except (ValueError, NotImplementedError, AttributeError, KeyError):
            pass  # set the configs directly below
        if all(getattr(c, "_attn_implementation", None) == IMPLEMENTATION for c in configs):
            return
    for config in configs:
        if hasattr(config, "_attn_implementation_internal"):
            config._attn_implementation_internal = IMPLEMENTATION


@contextmanager
def intervention(model: nn.Module) -> Iterator[nn.Module]:
    """The model in eval mode with :func:`attention_function` installed; all restored.

    Inside, :func:`edited` runs passes with edits; outside any :func:`edited`
    block the function computes plain eager attention.
    """
    register()
    with capture_ready(model):
        _switch(model)  # capture_ready puts every config's implementation back
        yield model


@contextmanager
def edited(edits: Mapping[int, Edit] | None = None) -> Iterator[Pass]:
    """One pass's edits (layer → edit); yields the :class:`Pass` that records weights."""
    state = Pass(edits=dict(edits or {}))
    token = _ACTIVE.set(state)
    try:
        yield state
    finally:
        _ACTIVE.reset(token)


# --- edits ------------------------------------------------------------------


def uniform(weights: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Equal weight on every key a row may see (Wiegreffe & Pinter 2019's baseline)."""
    ones = allowed.to(weights.dtype)
    return ones / ones.sum(dim=-1, keepdim=True).clamp_min(1)


def permute_keys(weights: torch.Tensor, allowed: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Permute each row's weights over its allowed keys (Jain & Wallace 2019).

    ``order`` (same shape, float) ranks the allowed keys of each row: the
    weight of the k-th allowed key (in position order) goes to the allowed
    key with the k-th smallest ``order``. ``order`` equal to the positions is
    the identity; i.i.d. uniform ``order`` is a uniformly random permutation.
    Masked keys keep their (zero) weight.
    """
    n = weights.shape[-1]
    positions = torch.arange(n, device=weights.device, dtype=order.dtype).expand_as(order)
    # allowed keys first (in position order / in ``order``), masked keys after
    source = torch.argsort(torch.where(allowed, positions, positions + 2 * n), dim=-1)
    target = torch.argsort(torch.where(allowed, order, positions + 4 * n + order.abs().max()), -1)
    moved = torch.gather(weights, -1, source)
    return torch.zeros_like(weights).scatter(-1, target, moved)


def random_permutation(generator: torch.Generator) -> Edit:
    """An edit permuting every row of every head with its own random permutation."""

    def edit(weights: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        order = torch.rand(weights.shape, generator=generator).to(weights.device)
        return permute_keys(weights, allowed, order)

    return edit


def remove_key(key: int, rows: torch.Tensor | None) -> Edit:
    """Zero key ``key``'s weight (in ``rows``, a bool (n,) or None for all) and renormalise.

    Serrano & Smith (2019)'s erasure of one attended item. A row left with no
    weight keeps its original weights (nothing to renormalise).
    """

    def edit(weights: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        keep = torch.ones_like(weights)
        if rows is None:
            keep[..., key] = 0
        else:
            keep[..., rows.to(weights.device), key] = 0
        kept = weights * keep
        total = kept.sum(dim=-1, keepdim=True)
        return torch.where(total > 0, kept / total.clamp_min(1e-30), weights)

    return edit


def replace_rows(rows: torch.Tensor, new_rows: torch.Tensor) -> Edit:
    """Replace rows ``rows`` (bool (n,)) of every head by ``new_rows`` (B, H, r, n)."""

    def edit(weights: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        out = weights.clone()
        out[..., rows.to(weights.device), :] = new_rows.to(weights.dtype)
        return out

    return edit
