"""Pixel-space attribution for images: baselines, integrated gradients, patch occlusion.

A Vision Transformer's gradient methods could stop at the patch embeddings, but
the two that compare the input with a reference input are defined on pixels:

* Integrated gradients (Sundararajan, Taly & Yan 2017) integrate the pixel
  gradient along the straight path from a baseline image to the input; their
  paper uses a black image. Sturmfels, Lundberg & Lee (2020, "Visualizing
  the Impact of Feature Attribution Baselines", Distill) compare black, blurred
  and other baselines: a baseline says what "absent" means, and a black
  baseline cannot credit black pixels.
* Occlusion (Zeiler & Fergus 2014), the image form of Abnar & Zuidema's (2020)
  blank-out: each patch in turn is replaced by the same patch of a baseline
  image and the drop in the target's probability is its score.

Pixel scores are summed over the channels and then over each patch, so a
patch token's score is the sum of its pixels' (integrated gradients keeps its
completeness: the patch scores still sum to y(x) − y(x')). All arrays here are
in the model's pixel space (after the image processor's rescaling and
normalisation), (3, H, W).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.methods.gradients import integrated_gradients

#: The named pixel baselines.
PIXEL_BASELINES = ("black", "blurred", "mean")

#: ``value_and_grad(pixels (B, 3, H, W)) -> (values (B,), gradients (B, 3, H, W))``.
PixelValueAndGrad = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
#: ``probability(pixels (B, 3, H, W)) -> target probability (B,)``.
PixelProbability = Callable[[np.ndarray], np.ndarray]


def pixel_baseline(
    pixels: np.ndarray,
    kind: str | np.ndarray,
    *,
    black: np.ndarray | None = None,
    sigma: float | None = None,
) -> np.ndarray:
    """The baseline image (3, H, W) for ``pixels`` (3, H, W).

    Args:
        pixels: the input as the model reads it.
        kind: ``"black"`` (a black image through the model's processor:
            ``black``, zeros when not given), ``"mean"`` (every pixel the
            image's mean colour; the processor's normalisation is affine per
            channel, so this is the mean colour as the model reads it) or
            ``"blurred"`` (a Gaussian blur of the image with standard
            deviation ``sigma`` pixels, default min(H, W) / 8, the way
            Sturmfels et al. 2020 blur); or a (3, H, W) array used as it is.
        black: (3, H, W) black image as the model reads it.
        sigma: blur width in pixels, for ``"blurred"``.
    """
    pixels = np.asarray(pixels, dtype=np.float64)
    if pixels.ndim != 3:
        raise InputError(f"pixels must be (3, H, W), got shape {pixels.shape}.")
    if isinstance(kind, np.ndarray):
        if kind.shape != pixels.shape:
            raise InputError(
                f"a pixel baseline array must have the input's shape {pixels.shape}, got "
                f"{kind.shape}; or pass one of {', '.join(map(repr, PIXEL_BASELINES))}."
            )
        return np.asarray(kind, dtype=np.float64)
    if kind == "black":
        if black is None:
            return np.zeros_like(pixels)
        return np.broadcast_to(np.asarray(black, dtype=np.float64), pixels.shape).copy()
    if kind == "mean":
        return np.broadcast_to(pixels.mean(axis=(1, 2), keepdims=True), pixels.shape).copy()
    if kind == "blurred":
        from scipy.ndimage import gaussian_filter

        width = float(sigma) if sigma is not None else min(pixels.shape[1:]) / 8.0
        if not width > 0:
            raise InputError(f"the blur's sigma must be positive, got {sigma}.")
        return np.stack([gaussian_filter(c, width, mode="reflect") for c in pixels])
    raise InputError(
        f"unknown pixel baseline {kind!r}; use one of {', '.join(map(repr, PIXEL_BASELINES))} "
        "or a (3, H, W) array."
    )


def patch_sums(values: np.ndarray, patch_size: int) -> np.ndarray:
    """(H, W) per-pixel values → (rows·cols,) their sums over each patch, row by row."""
    values = np.asarray(values, dtype=np.float64)
    height, width = values.shape
    if patch_size < 1 or height % patch_size or width % patch_size:
        raise InputError(f"a {height}×{width} map does not split into {patch_size}-pixel patches.")
    rows, cols = height // patch_size, width // patch_size
    return values.reshape(rows, patch_size, cols, patch_size).sum(axis=(1, 3)).reshape(-1)


def pixel_integrated_gradients(
    value_and_grad: PixelValueAndGrad,
    pixels: np.ndarray,
    baseline: np.ndarray,
    **options: Any,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Integrated gradients on pixels: (H, W) scores summed over channels, and the info.

    The path runs from ``baseline`` to ``pixels`` (both (3, H, W)); ``options``
    are :func:`~attnwidget.methods.gradients.integrated_gradients`'s (``steps``,
    ``max_steps``, ``tolerance``, ``batch_size``), with the same adaptive step
    search and completeness report.
    """
    pixels = np.asarray(pixels, dtype=np.float64)
    channels, height, width = pixels.shape

    def as_points(array: np.ndarray) -> np.ndarray:  # (3, H, W) -> (H·W, 3)
        return array.reshape(channels, height * width).T

    def wrapped(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        batch = points.shape[0]
        images = points.transpose(0, 2, 1).reshape(batch, channels, height, width)
        values, grads = value_and_grad(images)
        grads = np.asarray(grads, dtype=np.float64).reshape(batch, channels, height * width)
        return values, grads.transpose(0, 2, 1)

    scores, info = integrated_gradients(
        wrapped, as_points(pixels), baseline=as_points(np.asarray(baseline, np.float64)), **options
    )
    return scores.reshape(height, width), info


def patch_occlusion(
    probability: PixelProbability,
    pixels: np.ndarray,
    baseline: np.ndarray,
    patch_size: int,
    *,
    batch_size: int = 64,
) -> np.ndarray:
    """Drop in the target's probability when each patch is replaced by the baseline's.

    Returns (rows·cols,) signed scores, row by row (positive: the patch
    supported the target).
    """
    pixels = np.asarray(pixels, dtype=np.float64)
    baseline = np.asarray(baseline, dtype=np.float64)
    _, height, width = pixels.shape
    if height % patch_size or width % patch_size:
        raise InputError(
            f"a {height}×{width} image does not split into {patch_size}-pixel patches."
        )
    rows, cols = height // patch_size, width // patch_size
    base = float(np.asarray(probability(pixels[None]))[0])
    scores = np.zeros(rows * cols)
    window: tuple[int | slice, ...]  # (channels, rows, columns) of one patch
    for start in range(0, rows * cols, batch_size):
        chunk = np.arange(start, min(start + batch_size, rows * cols))
        variants = np.repeat(pixels[None], chunk.size, axis=0)
        for slot, index in enumerate(chunk):
            r, c = divmod(int(index), cols)
            window = (slice(None), slice(r * patch_size, (r + 1) * patch_size))
            window += (slice(c * patch_size, (c + 1) * patch_size),)
            where = (slot, *window)  # not inline: mypy reads a starred index as 3.11 syntax
            variants[where] = baseline[window]
        scores[chunk] = base - np.asarray(probability(variants), dtype=np.float64)
    return scores
