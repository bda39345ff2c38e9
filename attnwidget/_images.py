"""Patch scores as image heat maps, the way the ViT explanation papers draw them.

A Vision Transformer scores tokens: a few special ones (CLS, DeiT's
distillation token, Dinov2's registers) followed by one token per image patch
in row-major order. Chefer, Gur & Wolf (2021, CVPR) turn the CLS row into an
image by dropping the special columns, reshaping to the patch grid and
upsampling bilinearly by the patch size (``torch.nn.functional.interpolate``,
``mode="bilinear"``, corners not aligned); their evaluations then min–max
normalise the map. :func:`patch_map` and :func:`upsample` do exactly that, so
maps compare with theirs pixel for pixel.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def patch_positions(num_tokens: int, special_tokens: Sequence[int]) -> np.ndarray:
    """Indices of the patch tokens: every token that is not special, in order."""
    special = set(int(i) for i in special_tokens)
    return np.array([i for i in range(num_tokens) if i not in special], dtype=np.int64)


def patch_map(
    scores: np.ndarray, special_tokens: Sequence[int], grid: tuple[int, int]
) -> np.ndarray:
    """(n,) token scores → float32 (rows, cols), special tokens left out."""
    values = np.asarray(scores, dtype=np.float32)
    positions = patch_positions(values.shape[0], special_tokens)
    rows, cols = grid
    if positions.size != rows * cols:
        raise ValueError(
            f"{positions.size} patch tokens do not fill a {rows}×{cols} patch grid; the scores "
            "must cover the special tokens and then every patch, row by row."
        )
    return values[positions].reshape(rows, cols)


def upsample(
    patches: np.ndarray, patch_size: int, size: tuple[int, int] | None = None
) -> np.ndarray:
    """(rows, cols) → float32 (rows·patch, cols·patch) by bilinear interpolation.

    As the authors do: ``interpolate(scale_factor=patch_size, mode="bilinear")``
    with ``align_corners=False``. With ``size`` (height, width) different from
    the model's input (an image the processor resized), the result is then
    resized bilinearly to ``size``.
    """
    import torch
    from torch.nn.functional import interpolate

    grid = torch.as_tensor(np.asarray(patches, dtype=np.float32))[None, None]
    with torch.no_grad():
        out = interpolate(grid, scale_factor=patch_size, mode="bilinear", align_corners=False)
        if size is not None and tuple(out.shape[-2:]) != tuple(size):
            out = interpolate(out, size=tuple(size), mode="bilinear", align_corners=False)
    return out[0, 0].numpy().astype(np.float32)


def min_max(values: np.ndarray) -> np.ndarray:
    """Rescale to [0, 1] (a constant map becomes all zeros), as the evaluations do."""
    values = np.asarray(values, dtype=np.float32)
    low, high = float(values.min()), float(values.max())
    if high - low <= 0:
        return np.zeros_like(values)
    return (values - low) / (high - low)
