"""The widgets: thin anywidget classes over one front-end bundle.

Each view class declares its synced traits; the JS for all views lives in one
ES module built from ``js/`` into ``attnwidget/static/widget.js``.
"""

from __future__ import annotations

from ._base import BUNDLE, BundleMissingError
from .alignment_view import AlignmentView
from .annotator import Annotator
from .attention_calculator import AttentionCalculator
from .attention_matrix_view import AttentionMatrixView
from .compat import head_view, model_view
from .evaluation_view import EvaluationView
from .explorer import Explorer
from .flow_view import FlowView
from .generation_view import GenerationView
from .head_view import HeadView
from .image_view import ImageView
from .model_view import ModelView
from .neuron_view import NeuronView
from .saliency import SaliencyView

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
