"""Layer-wise relevance propagation for stock Hugging Face Transformers.

Two registered methods:

* ``"lrp"``: AttnLRP (Achtibat et al., ICML 2024), LRP (Bach et al., 2015)
  with rules for attention, norms and gating, to the input tokens; the
  relevance of every attention map comes with it (``details["lrp"]``).
* ``"chefer2021"``: relevance × gradient rollout (Chefer, Gur & Wolf, CVPR
  2021) on that relevance.

Modules: :mod:`.rules` (the rules as autograd functions),
:mod:`.attention` (the attention function with the softmax and matmul
rules), :mod:`.families` (the rule table per module type and family),
:mod:`.engine` (install the rules for one pass and restore the model),
:mod:`.relevance` (``lrp``), :mod:`.chefer` (``chefer2021``).
"""

from __future__ import annotations

from .chefer import DEFAULT_START_LAYER, chefer2021
from .engine import LRPRecorder, lrp_rules
from .families import Family, register_family, supported_model_types
from .relevance import LRPResult, lrp, run_lrp
from .rules import DEFAULT_EPSILON

__all__ = [
    "DEFAULT_EPSILON",
    "DEFAULT_START_LAYER",
    "Family",
    "LRPRecorder",
    "LRPResult",
    "chefer2021",
    "lrp",
    "lrp_rules",
    "register_family",
    "run_lrp",
    "supported_model_types",
]
