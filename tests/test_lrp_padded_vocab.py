"""Token ids past the tokenizer's vocabulary (padded embedding matrices) get a readable label.

Phi-3 and GPT-NeoX checkpoints pad their embedding and output matrices beyond
the tokenizer's size; such an id can be predicted, but the tokenizer has no
text for it (``convert_ids_to_tokens`` returns None). The tiny configs here
have ``PADDING`` such rows.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_lrp import TEXT, randomise
from tiny_models import PADDING, build

import attnwidget
from attnwidget.capture.tokens import token_label

FAMILIES = ["phi3-lm", "gpt-neox-lm"]


def force_prediction(model: torch.nn.Module, tokenizer, token_id: int) -> None:
    """Make ``token_id`` the prediction: its output row points along the last hidden state."""
    ids = tokenizer(TEXT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        hidden = model(ids, output_hidden_states=True).hidden_states[-1][0, -1]
        model.get_output_embeddings().weight[token_id] = 50 * hidden / hidden.norm()


@pytest.mark.parametrize("family", FAMILIES)
def test_a_predicted_padding_id_is_labelled_and_explained(family: str) -> None:
    model, tokenizer = build(family)
    randomise(model, 0, biases=False)
    padded = len(tokenizer) + PADDING // 2
    assert model.config.vocab_size > padded  # the id is a real row of the model
    assert tokenizer.convert_ids_to_tokens(padded) is None  # but the tokenizer has no text
    force_prediction(model, tokenizer, padded)
    exp = attnwidget.explain(
        model,
        tokenizer,
        TEXT,
        methods=["lrp", "chefer2021"],
        method_options={"lrp": {"epsilon": 0.0}, "chefer2021": {"relevance": "attnlrp"}},
    )
    assert exp.target_id == padded
    assert exp.target == f"<id {padded}>"
    d = exp.details["lrp"]  # and LRP explains it, conserving as usual
    gap = d["target_score"] - d["input_relevance"].sum() - d["softmax_absorbed"].sum()
    assert abs(gap) <= 1e-5 * (abs(d["target_score"]) + np.abs(d["input_relevance"]).sum())


@pytest.mark.parametrize("family", FAMILIES)
def test_a_padding_id_given_as_target_is_labelled(family: str) -> None:
    model, tokenizer = build(family)
    last = model.config.vocab_size - 1
    exp = attnwidget.explain(model, tokenizer, TEXT, target=last, methods=["lrp"])
    assert (exp.target_id, exp.target) == (last, f"<id {last}>")
    assert all(isinstance(t, str) for t in exp.tokens)


def test_token_label_inside_and_outside_the_vocabulary() -> None:
    _, tokenizer = build("phi3-lm")
    (word,) = tokenizer.encode(" the", add_special_tokens=False)  # "Ġthe"
    assert token_label(word, tokenizer) == "the"
    assert token_label(tokenizer.bos_token_id, tokenizer) == "<s>"  # special: kept as is
    assert token_label(len(tokenizer), tokenizer) == f"<id {len(tokenizer)}>"
