"""The attention calculator's maths: score functions, masks and one attention step.

Pure functions, numpy in and numpy out (float64), with every bad input
refused by an :class:`~attnwidget.errors.InputError` whose message the
calculator widget can show as it is. Score functions after Luong et al.
(2015), Vaswani et al. (2017), Bahdanau et al. (2015) and Graves et al.
(2014); global, local-m and local-p attention after Luong et al. (2015).
"""

from __future__ import annotations

from attnwidget.teach.attention import AttentionSteps, attention, masked_softmax
from attnwidget.teach.masks import MASK_KINDS, LocalPAlignment, attention_mask, local_p_alignment
from attnwidget.teach.scores import SCORE_KINDS, attention_scores

__all__ = [
    "MASK_KINDS",
    "SCORE_KINDS",
    "AttentionSteps",
    "LocalPAlignment",
    "attention",
    "attention_mask",
    "attention_scores",
    "local_p_alignment",
    "masked_softmax",
]
