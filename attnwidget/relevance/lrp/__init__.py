"""Layer-wise relevance propagation on stock Hugging Face Transformers.

AttnLRP (Achtibat et al., ICML 2024), LRP (Bach et al., 2015) with rules for
attention, norms and gating, run as one modified backward pass of the model.

Modules: :mod:`.rules` (the rules as autograd functions),
:mod:`.attention` (the attention function with the softmax and matmul
rules), :mod:`.structure` (each leaf module's role, from what it computes),
:mod:`.inline` (rules on operations written inline in a ``forward``),
:mod:`.families` (the rules installed per role),
:mod:`.engine` (install the rules for one pass and restore the model),
:mod:`.result` (:func:`run_lrp`: one pass for a captured example).
The registered methods that use it are :mod:`attnwidget.methods.lrp` and
:mod:`attnwidget.methods.chefer2021`.
"""

from __future__ import annotations

from attnwidget.relevance.lrp.engine import LRPRecorder, lrp_rules
from attnwidget.relevance.lrp.families import supported_model_types
from attnwidget.relevance.lrp.result import LRPResult, run_lrp
from attnwidget.relevance.lrp.rules import DEFAULT_EPSILON

__all__ = [
    "DEFAULT_EPSILON",
    "LRPRecorder",
    "LRPResult",
    "lrp_rules",
    "run_lrp",
    "supported_model_types",
]
