"""Evaluation: run a model again to test explanations (faithfulness), and compare
them with ground truth, over data sets. Builds on :mod:`attnwidget.metrics`.

:func:`evaluate` scores every method with every metric over a data set
(locally or on Dask, resumable from a results file) and returns an
:class:`EvaluationResult`; :mod:`.metrics_registry` names the metrics.
:func:`compare` compares every method on one input (agreement,
faithfulness, plausibility) and returns a :class:`Comparison`.
"""

from attnwidget.evaluation.compare import compare
from attnwidget.evaluation.comparison import Comparison
from attnwidget.evaluation.evaluate import evaluate
from attnwidget.evaluation.metrics_registry import (
    FAITHFULNESS,
    PLAUSIBILITY,
    Metric,
    MetricInput,
    available_metrics,
    get_metric,
    register_metric,
)
from attnwidget.evaluation.result import EvaluationResult
from attnwidget.evaluation.vision import patch_location, perturb_patches, perturbation_curve

__all__ = [
    "FAITHFULNESS",
    "PLAUSIBILITY",
    "Comparison",
    "EvaluationResult",
    "Metric",
    "MetricInput",
    "available_metrics",
    "compare",
    "evaluate",
    "get_metric",
    "patch_location",
    "perturb_patches",
    "perturbation_curve",
    "register_metric",
]
