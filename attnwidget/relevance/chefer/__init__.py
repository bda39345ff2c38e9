"""Chefer, Gur & Wolf's LRP relevance (CVPR 2021) on stock Hugging Face Transformers.

The relevance that "chefer2021" multiplies with the attention gradients, by
the paper's own rules (α1β0 on linear layers; LayerNorm, activations and
softmax passed unchanged; two-input operations split by gradient × input,
residual additions re-normalised, attention matmuls halved), run as one
modified backward pass. BERT-family encoders and ViT/DeiT classifiers
follow the paper; GPT-2 and Llama-style decoders (Qwen2, Mistral) and the
vision heads the authors did not have (DeiT with a teacher, BEiT, Dinov2)
use our extension of its rules (see :mod:`.engine`).

Modules: :mod:`.rules` (the rules as autograd functions), :mod:`.attention`
(the attention function), :mod:`.leaves` (each leaf module's rule, from the
role AttnLRP's structure detection finds for it), :mod:`.inline` (inline
operations between modules rebuilt with their rules), :mod:`.engine`
(install them for one pass, check the path, restore the model),
:mod:`.result` (:func:`run_chefer_relevance`).
"""

from __future__ import annotations

from attnwidget.relevance.chefer.engine import CheferRecorder, chefer_rules
from attnwidget.relevance.chefer.leaves import LeafRule, paper_rules
from attnwidget.relevance.chefer.result import CheferRelevance, check_runs, run_chefer_relevance

__all__ = [
    "CheferRecorder",
    "CheferRelevance",
    "LeafRule",
    "check_runs",
    "chefer_rules",
    "paper_rules",
    "run_chefer_relevance",
]
