"""The widgets: thin anywidget classes over one front-end bundle.

Each view class declares its synced traits; the JS for all views lives in one
ES module built from ``js/`` into ``attnwidget/static/widget.js``.
"""

from __future__ import annotations

from attnwidget.views._base import BUNDLE, BundleMissingError
from attnwidget.views.alignment_view import AlignmentView
from attnwidget.views.annotator import Annotator
from attnwidget.views.attention_calculator import AttentionCalculator
from attnwidget.views.attention_matrix_view import AttentionMatrixView
from attnwidget.views.compat import head_view, model_view
from attnwidget.views.evaluation_view import EvaluationView
from attnwidget.views.explorer import Explorer
from attnwidget.views.flow_view import FlowView
from attnwidget.views.generation_view import GenerationView
from attnwidget.views.head_view import HeadView
from attnwidget.views.image_view import ImageView
from attnwidget.views.model_view import ModelView
from attnwidget.views.neuron_view import NeuronView
from attnwidget.views.saliency import SaliencyView

__all__ = [
    "BUNDLE",
    "AlignmentView",
    "Annotator",
    "AttentionCalculator",
    "AttentionMatrixView",
    "BundleMissingError",
    "EvaluationView",
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
