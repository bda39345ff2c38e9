"""Metrics: pure functions on arrays that score explanations.

Faithfulness (does removing what a method ranks first change the model?),
plausibility against ground truth (does a map cover the object, or the
tokens, a person would mark?), and agreement (between annotators, and between
methods). Each function cites the paper whose protocol it follows.
"""

from attnwidget.metrics.agreement import (
    BootstrapCI,
    RankAgreement,
    bootstrap_ci,
    cohen_kappa,
    krippendorff_alpha,
    pairwise_token_f1,
    rank_agreement,
)
from attnwidget.metrics.faithfulness import (
    AOPC_BINS,
    ErasureCurves,
    aopc,
    comprehensiveness,
    erasure_curves,
    sufficiency,
    top_k_mask,
)
from attnwidget.metrics.method_agreement import (
    AGREEMENT_METRICS,
    normalised_ranks,
    pair_agreement,
    rank_spread,
    top_k_overlap,
    top_k_size,
)
from attnwidget.metrics.perturbation import (
    FRACTIONS,
    PerturbationCurve,
    area_under_curve,
    perturbation_curve_tokens,
    removal_order,
)
from attnwidget.metrics.plausibility import (
    PRF,
    auprc,
    discretize,
    iou_f1,
    mask_spans,
    mean_auprc,
    span_iou,
    token_prf,
)
from attnwidget.metrics.segmentation import (
    SegmentationScores,
    average_precision,
    segmentation_scores,
    threshold_at_mean,
)

__all__ = [
    "AGREEMENT_METRICS",
    "AOPC_BINS",
    "FRACTIONS",
    "PRF",
    "BootstrapCI",
    "ErasureCurves",
    "PerturbationCurve",
    "RankAgreement",
    "SegmentationScores",
    "aopc",
    "area_under_curve",
    "auprc",
    "average_precision",
    "bootstrap_ci",
    "cohen_kappa",
    "comprehensiveness",
    "discretize",
    "erasure_curves",
    "iou_f1",
    "krippendorff_alpha",
    "mask_spans",
    "mean_auprc",
    "normalised_ranks",
    "pair_agreement",
    "pairwise_token_f1",
    "perturbation_curve_tokens",
    "rank_agreement",
    "rank_spread",
    "removal_order",
    "segmentation_scores",
    "span_iou",
    "sufficiency",
    "threshold_at_mean",
    "token_prf",
    "top_k_mask",
    "top_k_overlap",
    "top_k_size",
]
