"""Which models LRP takes: the tested families, and clear refusals of the others.

Every refusal names what blocks the model and leaves it exactly as it was
(the snapshot of ``tests/test_lrp.py``: attention implementation, flags,
modes, weights, hooks, no parameter gradients).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_lrp import ATTNLRP, LRP_FAMILIES, TEXT, assert_same, snapshot
from tiny_models import REFUSED_FAMILIES, build

import attnwidget
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.lrp import lrp_rules, supported_model_types

# ---- unsupported models ---------------------------------------------------------


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_encoder_decoder_models_are_refused_clearly(family: str) -> None:
    model, tokenizer = build(family)
    model.train()
    before = snapshot(model)
    with pytest.raises(ModelNotSupportedError, match="encoder-decoder"):
        attnwidget.explain(model, tokenizer, TEXT, methods=["lrp"])
    assert_same(model, before)


@pytest.mark.parametrize("family", sorted(REFUSED_FAMILIES))
def test_attention_without_a_rule_is_refused_naming_the_module(family: str) -> None:
    """Bloom computes its attention logits inline as ``alibi.baddbmm(q, k)``: a product
    fused with a sum, whose factors the uniform rule cannot reach."""
    model, tokenizer = build(family)
    model.train()
    before = snapshot(model)
    with pytest.raises(ModelNotSupportedError) as info:
        attnwidget.explain(
            model, tokenizer, TEXT, methods=["lrp", "chefer2021"], method_options=ATTNLRP
        )
    message = str(info.value)
    assert f"({REFUSED_FAMILIES[family]})" in message and ".0." in message  # path and class
    assert "baddbmm" in message and "no LRP rule" in message
    assert_same(model, before)


def test_attention_maps_off_the_relevance_path_are_refused() -> None:
    """XLNet returns attention maps its output does not depend on through the gradient
    (relevance reaches its logits but not the maps): refused rather than a zero
    attention relevance."""
    model, tokenizer = build("xlnet-cls")
    model.train()
    before = snapshot(model)
    with pytest.raises(ModelNotSupportedError, match="not the softmax output"):
        attnwidget.explain(model, tokenizer, TEXT, methods=["lrp"])
    assert_same(model, before)


@pytest.mark.parametrize("family", ["mpnet-cls", "deberta-v2-cls", "falcon-lm"])
def test_attention_written_inline_runs_the_rules_on_the_softmax_it_returns(family: str) -> None:
    """MPNet, DeBERTa-v2 and Falcon compute softmax attention inside their own modules:
    one logit-relevance record per layer, and the attention maps returned are the
    softmax outputs the relevance flows through (R^A = A ⊙ ∂y/∂A is not zero, and its
    sum, minus what the softmax absorbs, is what reaches the logits)."""
    model, tokenizer = build(family)
    exp = attnwidget.explain(
        model, tokenizer, TEXT, methods=["lrp"], method_options={"lrp": {"epsilon": 0.0}}
    )
    d = exp.details["lrp"]
    layers = exp.num_layers
    assert d["softmax_absorbed"].shape == (layers,)
    relevance = d["attention_relevance"].astype(np.float64)
    assert np.all(np.abs(relevance).sum(axis=(1, 2, 3)) > 0)  # every layer's map is on the path
    grads = exp.attention_grads  # plain gradients: the maps are the captured attention
    assert grads.shape == relevance.shape


def test_an_inline_softmax_that_is_not_attention_is_refused_naming_the_module() -> None:
    """A softmax over non-square values (here: a classifier head's probabilities written
    inline) is not attention; LRP has no rule for it."""
    model, tokenizer = build("mpnet-cls")
    head = model.classifier
    forward = head.forward
    head.forward = lambda features, **kw: torch.softmax(forward(features, **kw), dim=-1)
    before = snapshot(model)
    with pytest.raises(ModelNotSupportedError, match=r"classifier \(MPNetClassificationHead\)"):
        attnwidget.explain(model, tokenizer, TEXT, methods=["lrp"])
    assert_same(model, before)


def test_a_leaf_module_without_a_role_is_refused_before_anything_changes() -> None:
    model, tokenizer = build("gpt2-lm")
    model.transformer.h[1].mlp.act = torch.nn.Softmax(dim=-1)  # not element-wise, not a norm
    model.train()
    before = snapshot(model)
    with pytest.raises(ModelNotSupportedError, match=r"transformer\.h\.1\.mlp\.act \(Softmax\)"):
        attnwidget.explain(model, tokenizer, TEXT, methods=["lrp"])
    assert_same(model, before)


def test_supported_model_types() -> None:
    assert supported_model_types() == [
        "albert",
        "bert",
        "camembert",
        "deberta-v2",
        "distilbert",
        "electra",
        "falcon",
        "gemma",
        "gpt2",
        "gpt_neox",
        "llama",
        "mistral",
        "mixtral",
        "mpnet",
        "opt",
        "phi3",
        "qwen2",
        "roberta",
        "xlm-roberta",
    ]
    for family in LRP_FAMILIES:  # the list is the tested families
        assert build(family)[0].config.model_type in supported_model_types()


def test_mixture_of_experts_runs_its_eager_loop_during_the_pass() -> None:
    """Mixtral's experts default to grouped_mm; the pass switches them to the eager loop
    (F.linear per expert, the gated product, the routing weights), then back."""
    model, _ = build("mixtral-lm")
    assert model.config._experts_implementation == "grouped_mm"
    with lrp_rules(model):
        assert model.config._experts_implementation == "eager"
    assert model.config._experts_implementation == "grouped_mm"
