"""The segmentation test of Chefer, Gur & Wolf (2021, CVPR), on ground-truth masks.

Each map is min–max normalised and thresholded at its mean: pixels above it
are foreground. Over a data set, pixel accuracy is the share of pixels whose
class (foreground/background) is right, and mIoU the mean over the two
classes of (total intersection) / (total union), both summed over all images
before dividing, as their evaluation accumulates them. mAP is the mean over
images of the average precision of the soft map against the mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnwidget.errors import InputError


@dataclass(frozen=True)
class SegmentationScores:
    """Data-set totals: ``pixel_accuracy``, ``miou`` and ``mean_ap`` in [0, 1]."""

    pixel_accuracy: float
    miou: float
    mean_ap: float
    count: int


def threshold_at_mean(heatmap: np.ndarray) -> np.ndarray:
    """bool map: min–max normalised ``heatmap`` above its mean (a flat map: all False)."""
    values = np.asarray(heatmap, dtype=np.float64)
    low, high = values.min(), values.max()
    if high <= low:
        return np.zeros(values.shape, dtype=bool)
    scaled = (values - low) / (high - low)
    return scaled > scaled.mean()


def average_precision(scores: np.ndarray, labels: np.ndarray) -> float:
    """Average precision of ``scores`` ranking the True ``labels``: Σ (R_k − R_{k−1}) P_k.

    One threshold per distinct score (ties enter together), the usual
    definition of average precision. No positive label: 0.
    """
    scores = np.asarray(scores, dtype=np.float64).ravel()
    labels = np.asarray(labels, dtype=bool).ravel()
    if scores.shape != labels.shape:
        raise InputError(f"{scores.size} scores for {labels.size} labels; pass one per pixel.")
    positives = int(labels.sum())
    if positives == 0:
        return 0.0
    order = np.argsort(-scores, kind="stable")
    ranked, hits = scores[order], labels[order].astype(np.float64)
    last = np.r_[np.nonzero(np.diff(ranked))[0], ranked.size - 1]  # end of each tie group
    true_pos = np.cumsum(hits)[last]
    precision = true_pos / (last + 1)
    recall = true_pos / positives
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def segmentation_scores(
    heatmaps: Sequence[np.ndarray], masks: Sequence[np.ndarray]
) -> SegmentationScores:
    """Pixel accuracy, mIoU and mAP of ``heatmaps`` against bool ``masks`` (same shapes)."""
    if len(heatmaps) != len(masks) or not len(masks):
        raise InputError(f"{len(heatmaps)} maps for {len(masks)} masks; pass one map per mask.")
    correct = labelled = 0
    inter, union = np.zeros(2), np.zeros(2)
    precisions = []
    for heatmap, mask in zip(heatmaps, masks, strict=True):
        heatmap, mask = np.asarray(heatmap), np.asarray(mask, dtype=bool)
        if heatmap.shape != mask.shape:
            raise InputError(
                f"a map of shape {heatmap.shape} for a mask of shape {mask.shape}; pass one "
                "score per mask pixel (resize the map to the mask, e.g. upsample patch scores)."
            )
        predicted = threshold_at_mean(heatmap)
        correct += int((predicted == mask).sum())
        labelled += mask.size
        for cls, (p, t) in enumerate(((~predicted, ~mask), (predicted, mask))):
            inter[cls] += (p & t).sum()
            union[cls] += (p | t).sum()
        precisions.append(average_precision(heatmap, mask))
    iou = np.divide(inter, union, out=np.ones(2), where=union > 0)
    return SegmentationScores(
        pixel_accuracy=correct / labelled,
        miou=float(iou.mean()),
        mean_ap=float(np.mean(precisions)),
        count=len(masks),
    )
