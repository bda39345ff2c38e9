"""The widgets: thin anywidget classes over one front-end bundle.

Each view class declares its synced traits; the JS for all views lives in one
ES module built from ``js/`` into ``attnwidget/static/widget.js``.
"""

from __future__ import annotations

from attnwidget.views.annotate.adjudication_view import AdjudicationView
from attnwidget.views.annotate.alignment_view import AlignmentView
from attnwidget.views.annotate.annotator import Annotator
from attnwidget.views.annotate.rating_view import ExplanationRating
from attnwidget.views.attention.compat import head_view, model_view
from attnwidget.views.attention.head_view import HeadView
from attnwidget.views.attention.model_view import ModelView
from attnwidget.views.attention.neuron_view import NeuronView
from attnwidget.views.compare.compare_view import CompareView
from attnwidget.views.core.base import BUNDLE, BundleMissingError
from attnwidget.views.evaluate.evaluation_view import EvaluationView
from attnwidget.views.explorer.explorer import Explorer
from attnwidget.views.flow.flow_view import FlowView
from attnwidget.views.generation.generation_view import GenerationView
from attnwidget.views.image.image_view import ImageView
from attnwidget.views.matrix.matrix_view import AttentionMatrixView
from attnwidget.views.saliency.saliency_view import SaliencyView
from attnwidget.views.teach.calculator import AttentionCalculator

__all__ = [
    "BUNDLE",
    "AdjudicationView",
    "AlignmentView",
    "Annotator",
    "AttentionCalculator",
    "AttentionMatrixView",
    "BundleMissingError",
    "CompareView",
    "EvaluationView",
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
]
