"""Metrics: pure functions on arrays that score explanations.

Faithfulness (does removing what a method ranks first change the model?) and
plausibility against ground truth (does a map cover the object a person would
mark?). Each function cites the paper whose protocol it follows.
"""

from .perturbation import FRACTIONS, area_under_curve, removal_order
from .segmentation import (
    SegmentationScores,
    average_precision,
    segmentation_scores,
    threshold_at_mean,
)

__all__ = [
    "FRACTIONS",
    "SegmentationScores",
    "area_under_curve",
    "average_precision",
    "removal_order",
    "segmentation_scores",
    "threshold_at_mean",
]
