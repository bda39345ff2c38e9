"""Comparisons for the CompareView tests: a small fixed one, and real ones.

:func:`fixed_comparison` is :func:`attnwidget.compare` over an explanation
made from seeded attention plus a hand-written signed method, with a stub
tokenizer that names the special ids (no model: agreement and a token
rationale's plausibility only; faithfulness figures can be added). Its
numbers are the same on every machine, so the JS fixture is written from it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

import attnwidget
from attnwidget.results.explanation import Explanation

TOKENS = ["[CLS]", "the", "keys", "are", "on", "the", "table", "[SEP]"]
IDS = [101, 5, 6, 7, 8, 5, 9, 102]
#: A signed method: [CLS] and [SEP] far above every word (left out of the range).
SIGNED = [3.0, -0.5, 0.25, 0.25, -0.125, 0.75, -1.0, 2.0]
#: The human rationale over the tokens ("keys", "table").
RATIONALE = [0, 0, 1, 0, 0, 0, 1, 0]


def explanation(tokens: list[str] | None = None) -> Explanation:
    tokens = list(TOKENS if tokens is None else tokens)
    n = len(tokens)
    rng = np.random.default_rng(22)
    weights = rng.random((2, 2, n, n)).astype(np.float32) ** 3
    weights /= weights.sum(-1, keepdims=True)
    exp = Explanation.from_attentions(weights, tokens, methods=["raw", "rollout"])
    signed = np.resize(np.asarray(SIGNED, dtype=np.float32), n)
    exp.scores["signed_demo"] = signed
    exp.input_ids = (
        np.array([IDS[0], *([5] * (n - 2)), IDS[-1]]) if tokens != TOKENS else np.array(IDS)
    )
    return exp


def fixed_comparison(*, tokens: list[str] | None = None, figures: bool = True) -> Any:
    """3 methods over 8 tokens (6 compared), with plausibility and made-up faithfulness."""
    import pandas as pd

    exp = explanation(tokens)
    stub = SimpleNamespace(all_special_ids=[101, 102])
    n = len(exp.tokens)
    rationale = np.resize(np.asarray(RATIONALE), n)
    comparison = attnwidget.compare(
        exp, tokenizer=stub, rationale=rationale, rationale_unit="tokens", replacement_id=0
    )
    if figures:
        # What compare() gives with a model: one column per faithfulness metric.
        comparison.faithfulness = pd.DataFrame(
            {"comprehensiveness_aopc": [0.5, 0.25, -0.125], "sufficiency_aopc": [0.1, 0.3, 0.2]},
            index=comparison.methods,
        )
    return comparison
