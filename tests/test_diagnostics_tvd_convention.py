"""``uniform_baseline(convention="wiegreffe_pinter")``: the authors' binary TVD.

Wiegreffe & Pinter (2019, EMNLP) measure ½|Δp| of the positive class; the
standard total variation ½ Σ_c |Δp_c| is twice that on a binary model. The
original distribution p is computed here from the model's logits directly
(not by our code), and q is recovered from each convention's number.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidget import demo, diagnostics
from attnwidget.errors import InputError


def test_the_authors_tvd_is_half_the_positive_class_change() -> None:
    model, tokenizer = demo.load("sva-encoder", attn_implementation="eager")
    texts = [s.text for s in demo.sentences(6, seed=3)]
    ours = diagnostics.uniform_baseline(model, tokenizer, texts)
    theirs = diagnostics.uniform_baseline(model, tokenizer, texts, convention="wiegreffe_pinter")
    assert theirs.convention == "wiegreffe_pinter" and ours.convention == "standard"
    assert np.all(ours.tvd > 1e-4), ours.tvd  # uniform attention moves every prediction
    for text, total, positive in zip(texts, ours.tvd, theirs.tvd, strict=True):
        with torch.no_grad():
            logits = model(**tokenizer(text, return_tensors="pt")).logits[0].double()
        p = torch.softmax(logits, -1).numpy()
        # Binary: q = p + (−d, d) with d = q₁ − p₁, so ½ Σ|Δp| = |d| and theirs is ½|d|.
        assert positive == pytest.approx(total / 2, rel=1e-5, abs=1e-9)
        # q₁ = p₁ ± d must be a probability for one of the signs
        assert any(0 - 1e-9 <= p[1] + sign * 2 * positive <= 1 + 1e-9 for sign in (-1, 1))


def test_the_authors_tvd_refuses_a_model_without_two_classes() -> None:
    import transformers as tf
    from tiny_models import build

    binary, tokenizer = build("bert-cls")
    config = tf.BertConfig(**{**binary.config.to_dict(), "num_labels": 3})
    model = tf.BertForSequenceClassification(config).eval()  # a real three-class model
    with pytest.raises(InputError, match=r"binary classifier.*convention='standard'"):
        diagnostics.uniform_baseline(model, tokenizer, ["a b"], convention="wiegreffe_pinter")
    with pytest.raises(InputError, match=r"'standard'.*'wiegreffe_pinter'"):
        diagnostics.uniform_baseline(model, tokenizer, ["a b"], convention="W&P")
