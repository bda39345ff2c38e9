"""attnwidget: see and explain attention inside Transformer models.

The pipeline, as the folders show it: ``capture`` (model → attention record),
``relevance`` (the code that re-runs a model: LRP engines and rule tables),
``methods`` (pure functions on arrays, registered by name), ``views`` (thin
anywidget classes, one per JS view); ``diagnostics`` (experiments that
intervene on attention, above the methods). Nothing lower imports anything higher.
"""

# No `from __future__ import annotations` here: it would bind the name
# `annotations` in this namespace and hide the attnwidget.annotations package.
import importlib
from typing import Any

from attnwidget._version import __version__
from attnwidget.errors import (
    AttentionRowSumWarning,
    AttentionShapeError,
    AttnWidgetError,
    ConvergenceWarning,
    InputError,
    ModelNotSupportedError,
    NonFiniteError,
    TooLargeError,
    TruncationWarning,
    UnknownMethodError,
)
from attnwidget.methods import (
    MethodInfo,
    Option,
    attention_flow,
    available_methods,
    blank_out,
    get_method,
    grad_attention,
    input_x_gradient,
    integrated_gradients,
    method_info,
    raw_attention,
    register,
)
from attnwidget.methods.chefer2021 import chefer2021
from attnwidget.methods.rollout import rollout
from attnwidget.pipeline.explain import DEFAULT_METHODS, explain
from attnwidget.pipeline.generation import explain_generation
from attnwidget.pipeline.lrp import explain_lrp, lrp
from attnwidget.results.explanation import Explanation
from attnwidget.results.generation import GenerationExplanation

__all__ = [
    "DEFAULT_METHODS",
    "AdjudicationView",
    "AlignmentView",
    "Annotator",
    "AttentionCalculator",
    "AttentionMatrixView",
    "AttentionRowSumWarning",
    "AttentionShapeError",
    "AttnWidgetError",
    "CompareView",
    "Comparison",
    "ConvergenceWarning",
    "EvaluationResult",
    "EvaluationView",
    "Explanation",
    "ExplanationRating",
    "Explorer",
    "FlowView",
    "GenerationExplanation",
    "GenerationView",
    "HeadView",
    "ImageView",
    "InputError",
    "MethodInfo",
    "ModelNotSupportedError",
    "ModelView",
    "NeuronView",
    "NonFiniteError",
    "Option",
    "SaliencyView",
    "TooLargeError",
    "TruncationWarning",
    "UnknownMethodError",
    "__version__",
    "attention_flow",
    "available_methods",
    "blank_out",
    "chefer2021",
    "compare",
    "evaluate",
    "explain",
    "explain_generation",
    "explain_lrp",
    "get_method",
    "grad_attention",
    "head_view",
    "input_x_gradient",
    "integrated_gradients",
    "lrp",  # deprecated alias of explain_lrp, removed in the next release
    "method_info",
    "model_view",
    "raw_attention",
    "register",
    "rollout",
]


_VIEWS = (
    "AdjudicationView",
    "AlignmentView",
    "EvaluationView",
    "Annotator",
    "AttentionCalculator",
    "AttentionMatrixView",
    "CompareView",
    "ExplanationRating",
    "Explorer",
    "FlowView",
    "GenerationView",
    "HeadView",
    "ImageView",
    "ModelView",
    "NeuronView",
    "SaliencyView",
    "head_view",
    "model_view",
)


def __getattr__(name: str) -> Any:
    # Views import anywidget; the core stays importable (and fast) without it.
    if name in _VIEWS:
        return getattr(importlib.import_module(".views", __name__), name)
    if name in ("evaluate", "EvaluationResult", "compare", "Comparison"):  # pandas, on first use
        return getattr(importlib.import_module(".evaluation", __name__), name)
    if name in ("demo", "annotations", "teach", "metrics", "diagnostics"):  # on first use
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attnwidget' has no attribute {name!r}")
