"""attention_norm (Kobayashi et al., 2020) against a slow reference from the paper's
definition, the head output it decomposes, and the views that show it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import build
from value_reference import FAMILIES, LONG, explained, model_run, reference_values

import attnwidget
from attnwidget import demo
from attnwidget.capture import capture_ready
from attnwidget.methods.attention_norm import attention_norm


def reference_norms(attentions, values, outputs) -> np.ndarray:
    """‖α_ij f(x_j)‖ with f(x_j) = (x_j W_V + b_V) W_O^h, one entry at a time."""
    num_layers, heads, n, _ = attentions.shape
    out = np.zeros_like(attentions)
    for layer in range(num_layers):
        for head in range(heads):
            for j in range(n):
                f = values[layer, head, j] @ outputs[layer, head]
                for i in range(n):
                    out[layer, head, i, j] = np.linalg.norm(attentions[layer, head, i, j] * f)
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_matches_the_reference_on_every_family(family: str) -> None:
    model, tokenizer = build(family)
    exp = explained(model, tokenizer, LONG, ["attention_norm"])
    attentions, values, outputs = reference_values(model, exp.input_ids)
    expected = reference_norms(attentions, values, outputs)
    got = exp.details["attention_norm"]["maps"]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(
        exp.scores["attention_norm"], expected[-1].mean(0)[exp.query_index], rtol=1e-4, atol=1e-7
    )
    # The norm is not the weight: the ranking of keys differs somewhere.
    raw = attentions[-1].mean(0)[exp.query_index]
    assert np.argsort(raw).tolist() != np.argsort(exp.scores["attention_norm"]).tolist()


def test_matches_the_reference_on_the_demo_model() -> None:
    model, tokenizer = demo.load("sva-encoder")
    text = demo.sentences(1, seed=0)[0].text
    exp = explained(model, tokenizer, text, ["attention_norm"])
    attentions, values, outputs = reference_values(model, exp.input_ids)
    np.testing.assert_allclose(
        exp.details["attention_norm"]["maps"],
        reference_norms(attentions, values, outputs),
        rtol=1e-4,
        atol=1e-7,
    )


#: The output projection of layer 0 per family, and whether it has a bias.
OUTPUT_PROJECTIONS = {
    "bert-cls": lambda m: m.bert.encoder.layer[0].attention.output.dense,
    "gpt2-lm": lambda m: m.transformer.h[0].attn.c_proj,
    "llama-lm": lambda m: m.model.layers[0].self_attn.o_proj,
}


@pytest.mark.parametrize("family", sorted(OUTPUT_PROJECTIONS))
def test_the_vectors_sum_to_the_attention_output(family: str) -> None:
    # Σ_h Σ_j α^h_ij f_h(x_j) + b_O is what the output projection returns (Kobayashi et
    # al.'s decomposition): the captured values and W_O slices are the model's.
    model, tokenizer = build(family)
    exp = explained(model, tokenizer, LONG, ["attention_norm"])
    projection = OUTPUT_PROJECTIONS[family](model)
    seen = []
    handle = projection.register_forward_hook(lambda _m, _i, out: seen.append(out.detach()))
    try:
        model_run(model, exp.input_ids)
    finally:
        handle.remove()
    output = seen[0][0].double().numpy()
    _, values, outputs = reference_values(model, exp.input_ids)
    vectors = np.einsum("hjv,hvd->hjd", values[0], outputs[0])
    total = np.einsum("hij,hjd->id", exp.attentions[0].astype(np.float64), vectors)
    bias = getattr(projection, "bias", None)
    if bias is not None:
        total += bias.detach().double().numpy()
    np.testing.assert_allclose(total, output, atol=1e-5)


def test_heads_combined_is_the_norm_of_the_summed_vectors() -> None:
    model, tokenizer = build("bert-cls")
    exp = explained(
        model,
        tokenizer,
        LONG,
        ["attention_norm"],
        method_options={"attention_norm": {"heads_combined": True, "layer": 0}},
    )
    attentions, values, outputs = reference_values(model, exp.input_ids)
    q, (_, heads, n, _) = exp.query_index, attentions.shape
    expected = np.zeros(n)
    for j in range(n):
        summed = sum(attentions[0, h, q, j] * values[0, h, j] @ outputs[0, h] for h in range(heads))
        expected[j] = np.linalg.norm(summed)
    np.testing.assert_allclose(exp.scores["attention_norm"], expected, rtol=1e-4, atol=1e-7)
    # Heads can cancel: never more than the sum of the per-head norms.
    per_head = exp.details["attention_norm"]["maps"][0, :, q].sum(0)
    assert (expected <= per_head + 1e-5).all()


def test_pure_function_is_weight_times_vector_norm() -> None:
    rng = np.random.default_rng(0)
    a = rng.dirichlet(np.ones(6), size=(2, 3, 6))
    values, weights = rng.normal(size=(2, 3, 6, 4)), rng.normal(size=(2, 3, 4, 5))
    norms = np.linalg.norm(values @ weights, axis=-1)
    np.testing.assert_allclose(attention_norm(a, values, weights), a * norms[:, :, None, :])
    with pytest.raises(ValueError, match="head_output_weights has shape"):
        attention_norm(a, values, weights[:, :, :3])


def test_gqa_heads_read_their_shared_values() -> None:
    # Llama-style grouped-query attention: query heads 0, 1 share kv head 0, heads 2, 3 kv 1.
    model, tokenizer = build("llama-lm")
    ids = tokenizer(LONG)["input_ids"]
    from attnwidget.capture.run import Item, capture

    with capture_ready(model):
        (record,) = capture(
            model,
            tokenizer,
            [Item(ids, None, None)],
            kind="causal-lm",
            target=None,
            query_index=None,
            values=True,
        )
    values = record.head_values
    np.testing.assert_array_equal(values[:, 0], values[:, 1])
    np.testing.assert_array_equal(values[:, 2], values[:, 3])
    assert not np.array_equal(values[:, 0], values[:, 2])
    assert not any(layer.self_attn.v_proj._forward_hooks for layer in model.model.layers)
    with torch.no_grad():
        weight = model.model.layers[1].self_attn.o_proj.weight.T.numpy()
    np.testing.assert_array_equal(record.head_output_weights[1, 3], weight[24:32])


def test_the_views_show_it() -> None:
    model, tokenizer = build("bert-cls")
    exp = explained(model, tokenizer, LONG, ["raw", "attention_norm"])
    maps = exp.details["attention_norm"]["maps"]
    share = maps / maps.sum(-1, keepdims=True)
    head = attnwidget.HeadView(exp, matrix="attention_norm", selected_token=0)
    assert [m["key"] for m in head.matrices] == ["self", "attention_norm"]
    assert head.matrices[1]["label"] == "Attention norm (row share)"
    np.testing.assert_allclose(head.selection["weights"], share[0, :, 0], rtol=1e-6)
    model_view = attnwidget.ModelView(exp)
    model_view.matrix = "attention_norm"
    assert model_view.matrix == "attention_norm"
    flow = attnwidget.FlowView(exp, selected_method="attention_norm")
    assert "attention_norm" in flow.methods
    assert not flow.signed[flow.methods.index("attention_norm")]
    np.testing.assert_allclose(
        flow.paths().scores_down, share[-1].mean(0)[flow.selected_token], rtol=1e-5
    )
    saliency = attnwidget.SaliencyView(exp, methods=["attention_norm"])
    np.testing.assert_allclose(saliency.score_matrix()[0], exp.scores["attention_norm"])


def test_a_list_of_texts_gets_each_its_own_values() -> None:
    # Texts are batched by length; each record keeps its own values.
    model, tokenizer = build("gpt2-lm")
    texts = [LONG, "the dog ran to the park", "the cat sat on the mat"]
    batch = attnwidget.explain(model, tokenizer, texts, methods=["attention_norm"])
    assert len(batch[1].tokens) == len(batch[2].tokens)  # these two run as one batch
    for text, exp in zip(texts, batch, strict=True):
        single = explained(model, tokenizer, text, ["attention_norm"])
        np.testing.assert_allclose(
            exp.details["attention_norm"]["maps"],
            single.details["attention_norm"]["maps"],
            rtol=1e-5,
            atol=1e-7,
        )
