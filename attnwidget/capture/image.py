"""Capture for Vision Transformers: image → attention record, one pass per image.

What differs from text (:mod:`.run`): the input is a pixel tensor, the
tokens are a few special ones (CLS; DeiT's distillation token; Dinov2's
registers) followed by one token per patch in row-major order, and the
"input embeddings" whose gradient input × gradient reads are the patch
projections (the output of ``model.get_input_embeddings()``, before the
special tokens and position embeddings are added): that is what each patch
contributes, as a word embedding is what each word contributes. Special
tokens have no input of their own, so their embedding rows are zero.

The patch grid is read from the model's patch size and the input, never
assumed (a 224-pixel ViT-B/16 has 14×14, a 32-pixel demo ViT/4 8×8); inputs
of another size than the config's get ``interpolate_pos_encoding=True``
where the model takes it.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from attnwidget.capture.image_inputs import ImageInput
from attnwidget.capture.kinds import ENCODER, IMAGE
from attnwidget.capture.record import AttentionRecord, ModelCall
from attnwidget.capture.state import autograd_on
from attnwidget.capture.targets import resolve_query_index, resolve_target
from attnwidget.errors import InputError, ModelNotSupportedError, NonFiniteError

#: Config fields of windowed-attention vision models (Swin and its kin).
_WINDOWED = ("window_size",)


def check_image_model(model: Any) -> None:
    """Refuse vision models whose attention is not one global token graph."""
    config = getattr(model, "config", None)
    if any(getattr(config, f, None) is not None for f in _WINDOWED):
        raise ModelNotSupportedError(
            f"{type(model).__name__} uses windowed attention (shifted local windows, "
            "merged between stages): no token attends to the whole image and the token set "
            "changes between stages, so there is no layer-to-layer attention graph for "
            "rollout, flow and the attention-based methods to follow. Use a global-attention "
            "ViT (ViT, DeiT, BEiT, Dinov2)."
        )
    patch = getattr(config, "patch_size", None)
    if patch is None or not hasattr(model, "get_input_embeddings"):
        raise ModelNotSupportedError(
            f"{type(model).__name__} has no patch embedding (config.patch_size); attnwidget "
            "explains Vision Transformers: ViT, DeiT, BEiT, Dinov2."
        )


def patch_size_of(model: Any) -> int:
    """The patch side in pixels (square patches)."""
    patch = model.config.patch_size
    if isinstance(patch, (tuple, list)):
        if patch[0] != patch[1]:
            raise ModelNotSupportedError(f"non-square patches {tuple(patch)} are not supported.")
        patch = patch[0]
    return int(patch)


def special_names(model: Any, count: int) -> list[str]:
    """Names of the ``count`` special tokens before the patches."""
    names = ["[CLS]"]
    registers = int(getattr(model.config, "num_register_tokens", 0) or 0)
    if count - 1 - registers == 1:  # DeiT's distillation token sits right after CLS
        names.append("[DIST]")
    names += [f"[REG{i + 1}]" for i in range(registers)]
    names += [f"[SPECIAL{i}]" for i in range(len(names), count)]
    return names[:count]


def patch_label(row: int, col: int) -> str:
    """How a patch token is named in views: its grid position."""
    return f"({row},{col})"


def _model_kwargs(model: Any, pixels: torch.Tensor) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"pixel_values": pixels}
    size = getattr(model.config, "image_size", None)
    size = tuple(size) if isinstance(size, (tuple, list)) else (size, size)
    accepted = inspect.signature(model.forward).parameters
    if tuple(pixels.shape[-2:]) != size and "interpolate_pos_encoding" in accepted:
        kwargs["interpolate_pos_encoding"] = True
    return kwargs


class PatchLeaf:
    """A forward hook that makes the patch projections a leaf autograd can differentiate."""

    def __init__(self) -> None:
        self.leaf: torch.Tensor | None = None

    def __call__(self, _module: Any, _inputs: Any, output: Any) -> Any:
        first = output[0] if isinstance(output, tuple) else output
        leaf = first.detach().requires_grad_(True)
        self.leaf = leaf
        return (leaf, *output[1:]) if isinstance(output, tuple) else leaf


def capture_images(
    model: Any,
    inputs: Sequence[ImageInput],
    *,
    target: Any = None,
    query_index: int | None = None,
) -> list[AttentionRecord]:
    """Attention records of ``inputs`` (prepared images), one forward+backward each."""
    check_image_model(model)
    return [_capture_one(model, item, target=target, query_index=query_index) for item in inputs]


def _capture_one(
    model: Any, item: ImageInput, *, target: Any, query_index: int | None
) -> AttentionRecord:
    patch = patch_size_of(model)
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    pixels = item.pixel_values.to(device=device, dtype=dtype)
    height, width = pixels.shape[-2:]
    if height % patch or width % patch or height < patch or width < patch:
        raise InputError(
            f"the pixel input is {height}×{width}, not a multiple of the patch size {patch}; "
            "resize the image (the model's image processor does) or crop it to a multiple."
        )
    grid = (height // patch, width // patch)
    kwargs = _model_kwargs(model, pixels)
    hook = PatchLeaf()
    with autograd_on():
        handle = model.get_input_embeddings().register_forward_hook(hook)
        try:
            outputs = model(**kwargs, output_attentions=True, return_dict=True)
        finally:
            handle.remove()
        attentions = getattr(outputs, "attentions", None)
        if not attentions or any(a is None for a in attentions):
            raise ModelNotSupportedError(
                f"{type(model).__name__} returned no attention weights even with eager "
                "attention; it may not be a softmax-attention Vision Transformer."
            )
        n = attentions[0].shape[-1]
        specials = n - grid[0] * grid[1]
        if specials < 1 or hook.leaf is None or hook.leaf.shape[1] != grid[0] * grid[1]:
            raise ModelNotSupportedError(
                f"{type(model).__name__}'s attention covers {n} tokens, which does not fit a "
                f"{grid[0]}×{grid[1]} patch grid plus special tokens; its patches are not "
                "one token each (only plain ViT-style patch tokens are supported)."
            )
        logits = outputs.logits[0].float()
        if not torch.isfinite(logits).all():
            raise NonFiniteError("the model's logits contain NaN/inf; run it in float32.")
        row = 0 if query_index is None else resolve_query_index(query_index, 0, n)
        target_id, label = resolve_target(
            target, logits.detach().cpu().numpy(), kind=ENCODER, model=model, tokenizer=None
        )
        grads = torch.autograd.grad(logits[target_id], [hook.leaf, *attentions], allow_unused=True)
    attn = np.stack([a[0].detach().float().cpu().numpy() for a in attentions])
    attn_grads = np.stack(
        [
            np.zeros(a.shape[1:], np.float32) if g is None else g[0].detach().float().numpy()
            for a, g in zip(attentions, grads[1:], strict=True)
        ]
    )
    for name, array in (("attention", attn), ("attention gradient", attn_grads)):
        if not np.isfinite(array).all():
            raise NonFiniteError(f"the captured {name} contains NaN/inf; run in float32.")
    leaf = hook.leaf[0].detach().float().cpu().numpy()
    leaf_grad = np.zeros_like(leaf) if grads[0] is None else grads[0][0].float().cpu().numpy()
    embeddings = np.zeros((n, leaf.shape[-1]), np.float32)
    embedding_grads = np.zeros_like(embeddings)
    embeddings[specials:], embedding_grads[specials:] = leaf, leaf_grad
    names = special_names(model, specials)
    tokens = names + [patch_label(r, c) for r in range(grid[0]) for c in range(grid[1])]
    special_mask = np.zeros(n, dtype=bool)
    special_mask[:specials] = True
    single = {k: (v.detach() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
    assert item.black_pixels is not None  # ImageInput.__post_init__ fills it
    record = AttentionRecord(
        kind=IMAGE,
        input_ids=np.zeros(0, dtype=np.int64),
        raw_tokens=list(tokens),
        tokens=tokens,
        special_mask=special_mask,
        attentions=attn,
        attention_grads=attn_grads,
        embeddings=embeddings,
        embedding_grads=embedding_grads,
        logits=logits.detach().cpu().numpy(),
        target_id=target_id,
        target_label=label,
        query_index=row,
        call=ModelCall(model, IMAGE, single, row, target_id, ()),
        image=item.image,
        patch_grid=grid,
        patch_size=patch,
        special_tokens=list(range(specials)),
        black_pixels=item.black_pixels[0].detach().float().cpu().numpy(),
    )
    return record
