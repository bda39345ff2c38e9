"""Chefer, Gur & Wolf's (2021, CVPR) image evaluations, run on a model.

Perturbation: for each removed fraction (0 %, 10 %, …, 90 %) the patches a
map ranks first (positive) or last (negative) are set to zero in the model's
pixel space (normalised pixels, so a removed patch reads as the data set's
mean colour, as the authors zero their normalised inputs), and the top-1
accuracy over the images is recorded; :func:`attnwidget.metrics.area_under_curve`
turns the curve into their AUC. The authors remove pixels of the upsampled
map; removing whole patches is the same ranking at the model's own
resolution (the upsampled map's order within a patch only splits patches).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnwidget.metrics.perturbation import FRACTIONS, removal_order


def perturb_patches(
    pixels: np.ndarray, order: np.ndarray, count: int, patch_size: int, cols: int
) -> np.ndarray:
    """A copy of ``pixels`` (3, H, W) with the first ``count`` patches of ``order`` zeroed."""
    out = np.array(pixels, dtype=np.float32, copy=True)
    for index in order[:count]:
        row, col = divmod(int(index), cols)
        out[
            :, row * patch_size : (row + 1) * patch_size, col * patch_size : (col + 1) * patch_size
        ] = 0
    return out


def perturbation_curve(
    model: torch.nn.Module,
    pixel_values: np.ndarray,
    patch_scores: np.ndarray,
    labels: Sequence[int],
    *,
    patch_size: int,
    positive: bool,
    fractions: Sequence[float] = FRACTIONS,
    batch_size: int = 256,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Top-1 accuracy (len(fractions),) as patches are removed in a map's order.

    Args:
        model: an image classifier (eval mode is used; the model is restored).
        pixel_values: float (N, 3, H, W), the processor's output.
        patch_scores: (N, rows, cols), each image's map (``exp.patch_scores``).
        labels: (N,) the true class of each image.
        positive: most relevant first (True) or least relevant first.
        order: (N, rows·cols) removal orders to use instead of the maps'
            (e.g. random permutations for the random baseline).
    """
    pixel_values = np.asarray(pixel_values, dtype=np.float32)
    scores = np.asarray(patch_scores, dtype=np.float64)
    count, (rows, cols) = pixel_values.shape[0], scores.shape[1:]
    if scores.shape[0] != count or len(labels) != count:
        raise ValueError(
            f"{count} images, {scores.shape[0]} maps and {len(labels)} labels; pass one each."
        )
    orders = (
        np.asarray(order)
        if order is not None
        else np.stack([removal_order(s, positive=positive) for s in scores])
    )
    truth = torch.as_tensor(np.asarray(labels))
    parameter = next(model.parameters())
    was_training = model.training
    model.eval()
    accuracy = []
    try:
        for fraction in fractions:
            removed = round(fraction * rows * cols)
            correct = 0
            for start in range(0, count, batch_size):
                stop = min(start + batch_size, count)
                batch = np.stack(
                    [
                        perturb_patches(pixel_values[i], orders[i], removed, patch_size, cols)
                        for i in range(start, stop)
                    ]
                )
                with torch.no_grad():
                    tensor = torch.as_tensor(batch, dtype=parameter.dtype, device=parameter.device)
                    predicted = model(pixel_values=tensor).logits.argmax(-1).cpu()
                correct += int((predicted == truth[start:stop]).sum())
            accuracy.append(correct / count)
    finally:
        model.train(was_training)
    return np.array(accuracy)


def patch_location(
    patch_scores: np.ndarray, mask: np.ndarray, distractor_mask: np.ndarray, patch_size: int
) -> str:
    """Where a map's top patch lies: ``"target"``, ``"distractor"`` or ``"background"``.

    The object covering more of the patch's pixels (the target on a tie);
    background when neither covers any.
    """
    scores = np.asarray(patch_scores)
    row, col = np.unravel_index(int(np.argmax(scores)), scores.shape)
    rows = slice(row * patch_size, (row + 1) * patch_size)
    cols = slice(col * patch_size, (col + 1) * patch_size)
    on_target = float(np.asarray(mask)[rows, cols].mean())
    on_distractor = float(np.asarray(distractor_mask)[rows, cols].mean())
    if on_target == on_distractor == 0:
        return "background"
    return "target" if on_target >= on_distractor else "distractor"
