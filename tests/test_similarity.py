"""Sentence embeddings: explain(bare encoder, target="similarity", text_pair=...).

Every reference here is computed in the test from the model's own outputs
(plain torch: mean pooling, cosine, gradients, rollout written out), never by
calling attnwidget twice, on tiny configs built here. The real
all-MiniLM-L6-v2 weights: tests/test_similarity_minilm.py.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
import transformers as tf
from tiny_models import roberta_tokenizer, wordpiece_tokenizer

import attnwidget
from attnwidget.errors import InputError, ModelNotSupportedError

A, B = "the dog runs in the park", "a dog sleeps in the park"
LRP_OK = int(tf.__version__.split(".")[0]) >= 5  # the relevance engines need transformers 5


def tiny_bert(seed: int = 0) -> tuple[tf.BertModel, object]:
    """A 2-layer BertModel whose larger init range gives non-uniform attention."""
    torch.manual_seed(seed)
    tok = wordpiece_tokenizer()
    config = tf.BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        initializer_range=0.3,
    )
    model = tf.BertModel(config).eval()
    model.set_attn_implementation("eager")
    return model, tok


def ids_of(tok: object, text: str) -> torch.Tensor:
    return torch.tensor([tok(text)["input_ids"]])


def pooled(model: torch.nn.Module, embeds: torch.Tensor, ids: torch.Tensor, pooling: str):
    """Our own pooling, written out: mean over every token, or the first one."""
    out = model(inputs_embeds=embeds, attention_mask=torch.ones_like(ids))
    hidden = out.last_hidden_state[0]
    return hidden.mean(dim=0) if pooling == "mean" else hidden[0]


def reference_gradient(model, tok, text: str, other: str, pooling: str):
    """(cosine, input × gradient) of ``text`` against ``other`` held fixed, in plain torch."""
    ids, other_ids = ids_of(tok, text), ids_of(tok, other)
    with torch.no_grad():
        fixed = pooled(model, model.embeddings.word_embeddings(other_ids), other_ids, pooling)
    embeds = model.embeddings.word_embeddings(ids).detach().requires_grad_(True)
    value = torch.nn.functional.cosine_similarity(pooled(model, embeds, ids, pooling), fixed, dim=0)
    (grad,) = torch.autograd.grad(value, [embeds])
    return float(value.detach()), (embeds * grad).sum(-1)[0].detach().numpy()


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_input_x_gradient_is_the_cosine_gradient_of_the_pooled_embedding(pooling: str) -> None:
    model, tok = tiny_bert()
    exp = attnwidget.explain(
        model,
        tok,
        A,
        text_pair=B,
        target="similarity",
        pooling=pooling,
        methods=["input_x_gradient"],
    )
    value, first = reference_gradient(model, tok, A, B, pooling)
    _, second = reference_gradient(model, tok, B, A, pooling)
    assert exp.kind == "embedding" and exp.target == "similarity" and exp.pooling == pooling
    assert exp.target_score == pytest.approx(value, abs=1e-5)
    assert exp.tokens[0] == "[CLS]" and exp.pair_tokens[2] == "dog"
    assert len(exp.pair_tokens) == ids_of(tok, B).shape[1]
    np.testing.assert_allclose(exp.scores["input_x_gradient"], first, atol=1e-6)
    np.testing.assert_allclose(exp.pair_scores["input_x_gradient"], second, atol=1e-6)


def test_attention_methods_read_the_pooled_query() -> None:
    """Mean pooling: the average of every row; cls: the first row (rollout written out)."""
    model, tok = tiny_bert()
    ids = ids_of(tok, A)
    with torch.no_grad():
        maps = torch.stack(model(input_ids=ids, output_attentions=True).attentions)[:, 0]
    fused = maps.double().mean(dim=1).numpy()  # (L, n, n), mean over heads
    n = fused.shape[-1]
    rolled = np.eye(n)
    for layer in fused:
        step = 0.5 * layer + 0.5 * np.eye(n)
        rolled = (step / step.sum(-1, keepdims=True)) @ rolled
    uniform = np.full(n, 1.0 / n)
    assert np.abs(fused[-1] - fused[-1].mean(0)).max() > 0.05  # rows differ: a real test
    for pooling, query in (("mean", uniform), ("cls", np.eye(n)[0])):
        exp = attnwidget.explain(
            model,
            tok,
            A,
            text_pair=B,
            target="similarity",
            pooling=pooling,
            methods=["raw", "rollout"],
        )
        np.testing.assert_allclose(exp.scores["raw"], query @ fused[-1], atol=1e-6)
        np.testing.assert_allclose(exp.scores["rollout"], query @ rolled, atol=1e-6)


def test_integrated_gradients_add_up_to_the_change_in_similarity() -> None:
    model, tok = tiny_bert()
    exp = attnwidget.explain(
        model, tok, A, text_pair=B, target="similarity", methods=["integrated_gradients"]
    )
    ids, other_ids = ids_of(tok, A), ids_of(tok, B)
    with torch.no_grad():
        fixed = pooled(model, model.embeddings.word_embeddings(other_ids), other_ids, "mean")
        embeds = model.embeddings.word_embeddings(ids)
        cos = torch.nn.functional.cosine_similarity
        value = float(cos(pooled(model, embeds, ids, "mean"), fixed, dim=0))
        # The baseline: zero token embeddings (positions and segments stay).
        base = float(cos(pooled(model, torch.zeros_like(embeds), ids, "mean"), fixed, dim=0))
    scores = exp.scores["integrated_gradients"]
    info = exp.details["integrated_gradients"]
    assert info["converged"]
    assert info["target_value"] == pytest.approx(value, abs=1e-5)
    assert info["baseline_value"] == pytest.approx(base, abs=1e-5)
    assert scores.sum() == pytest.approx(
        value - base, abs=0.01 * max(abs(value), abs(value - base))
    )
    assert exp.pair_scores["integrated_gradients"].shape == (other_ids.shape[1],)


def test_blank_out_is_the_drop_in_similarity() -> None:
    model, tok = tiny_bert()
    exp = attnwidget.explain(model, tok, A, text_pair=B, target="similarity", methods=["blank_out"])
    ids, other_ids = ids_of(tok, A), ids_of(tok, B)
    cos = torch.nn.functional.cosine_similarity
    with torch.no_grad():
        fixed = pooled(model, model.embeddings.word_embeddings(other_ids), other_ids, "mean")

        def similarity(variant: torch.Tensor) -> float:
            embeds = model.embeddings.word_embeddings(variant)
            return float(
                cos(pooled(model, embeds, variant, "mean").double(), fixed.double(), dim=0)
            )

        full = similarity(ids)
        expected = np.zeros(ids.shape[1])
        for j in range(1, ids.shape[1] - 1):  # [CLS] and [SEP] are not blanked
            variant = ids.clone()
            variant[0, j] = tok.unk_token_id
            expected[j] = full - similarity(variant)
    np.testing.assert_allclose(exp.scores["blank_out"], expected, atol=1e-5)
    assert np.abs(expected).max() > 1e-3


@pytest.mark.skipif(not LRP_OK, reason="lrp and chefer2021 need transformers>=5")
def test_lrp_conserves_the_similarity_at_the_last_layer() -> None:
    """With ‖p‖ held, s is linear in the last hidden states: their relevance sums to s."""
    model, tok = tiny_bert()
    exp = attnwidget.explain(
        model, tok, A, text_pair=B, target="similarity", methods=["lrp", "chefer2021"]
    )
    for details in (exp.details["lrp"], exp.pair_details["lrp"]):
        top = details["layer_relevance"][-1].sum()
        assert top == pytest.approx(exp.target_score, rel=1e-4)
        assert details["target_score"] == pytest.approx(exp.target_score, abs=1e-6)
    for scores in (exp.scores, exp.pair_scores):
        assert all(np.isfinite(scores[name]).all() for name in ("lrp", "chefer2021"))


def test_chefer2021_starts_with_alpha_beta_on_the_pooled_dot_product() -> None:
    """The relevance handed to the last hidden states, for the paper's rules: with the
    norm held, s = Σ h_ik w_ik (w_ik = v̂_k / (n‖p‖)), and α1β0 gives each term's
    positive part (same-signed h and w) its share of a unit relevance."""
    from contextlib import nullcontext

    from attnwidget.capture.record import ModelCall, SimilarityTarget
    from attnwidget.relevance.chefer import CheferRecorder
    from attnwidget.relevance.similarity import SimilarityScore

    model, tok = tiny_bert()
    ids, other_ids = ids_of(tok, A), ids_of(tok, B)
    with torch.no_grad():
        other = pooled(model, model.embeddings.word_embeddings(other_ids), other_ids, "mean")
    kwargs = {"attention_mask": torch.ones_like(ids)}
    call = ModelCall(
        model, "embedding", kwargs, 0, 0, ids[0].tolist(), SimilarityTarget(other, "mean")
    )
    seen: dict[str, torch.Tensor] = {}

    def keep(_module, _args, out) -> None:
        seen["h"] = out.last_hidden_state.detach()[0].double()

        def relevance(grad: torch.Tensor) -> None:
            seen["r"] = grad[0].double()

        out.last_hidden_state.register_hook(relevance)

    handle = model.register_forward_hook(keep)
    try:
        run = SimilarityScore(call).rerun(lambda _model: nullcontext(CheferRecorder()))
    finally:
        handle.remove()
    h = seen["h"]
    p = h.mean(dim=0)
    w = (other.double() / other.double().norm())[None, :] / (h.shape[0] * p.norm())
    terms = h * w
    positive = torch.where((h > 0) == (w > 0), terms, torch.zeros_like(terms)).clamp(min=0)
    np.testing.assert_allclose(seen["r"].numpy(), (positive / positive.sum()).numpy(), atol=1e-6)
    assert run.value == pytest.approx(
        float(torch.nn.functional.cosine_similarity(p, other.double(), dim=0)), abs=1e-5
    )


def test_swapping_the_texts_swaps_the_scores() -> None:
    model, tok = tiny_bert()
    methods = ["raw", "flow", "grad_attention", "input_x_gradient", "integrated_gradients"]
    options = {"integrated_gradients": {"steps": 8}}
    kwargs = dict(target="similarity", methods=methods, method_options=options)
    forward = attnwidget.explain(model, tok, A, text_pair=B, **kwargs)
    backward = attnwidget.explain(model, tok, B, text_pair=A, **kwargs)
    assert forward.target_score == pytest.approx(backward.target_score, abs=1e-6)
    assert forward.tokens == backward.pair_tokens and forward.pair_tokens == backward.tokens
    for name in methods:
        np.testing.assert_allclose(forward.scores[name], backward.pair_scores[name], atol=1e-6)
        np.testing.assert_allclose(forward.pair_scores[name], backward.scores[name], atol=1e-6)


def test_every_method_applies_to_an_xlm_roberta_pair() -> None:
    torch.manual_seed(1)
    tok = roberta_tokenizer()
    config = tf.XLMRobertaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=70,
        pad_token_id=tok.pad_token_id,
        type_vocab_size=1,
    )
    model = tf.XLMRobertaModel(config).eval()
    names = attnwidget.available_methods()
    if not LRP_OK:
        names = [n for n in names if n not in ("lrp", "chefer2021")]
    options = {"integrated_gradients": {"steps": 8}}
    exp = attnwidget.explain(
        model, tok, A, text_pair=B, target="similarity", methods=names, method_options=options
    )
    n, m = len(tok(A)["input_ids"]), len(tok(B)["input_ids"])
    assert sorted(exp.scores) == sorted(names) == sorted(exp.pair_scores)
    for name in names:
        assert exp.scores[name].shape == (n,) and exp.pair_scores[name].shape == (m,)
        assert np.isfinite(exp.scores[name]).all() and np.isfinite(exp.pair_scores[name]).all()
    assert exp.pair_attentions.shape == (2, 4, m, m)


def test_a_bare_encoder_without_a_target_gets_the_attention_methods() -> None:
    model, tok = tiny_bert()
    ids = ids_of(tok, A)
    with torch.no_grad():
        maps = torch.stack(model(input_ids=ids, output_attentions=True).attentions)[:, 0]
    last = maps[-1].double().mean(dim=0).numpy()
    exp = attnwidget.explain(model, tok, A)
    assert exp.methods == ["raw", "rollout"] and exp.target is None and exp.query_index == 0
    np.testing.assert_allclose(exp.scores["raw"], last[0], atol=1e-6)
    row = attnwidget.explain(model, tok, A, query_index=3, methods=["raw", "flow"])
    np.testing.assert_allclose(row.scores["raw"], last[3], atol=1e-6)
    mean = attnwidget.explain(model, tok, A, pooling="mean", methods=["raw"])
    np.testing.assert_allclose(mean.scores["raw"], last.mean(axis=0), atol=1e-6)
    for method in ("grad_attention", "integrated_gradients", "lrp"):
        with pytest.raises(InputError, match=rf"{method}.*target='similarity'.*text_pair.*head"):
            attnwidget.explain(model, tok, A, methods=["raw", method])


def test_bad_similarity_inputs_are_refused() -> None:
    model, tok = tiny_bert()
    cases = [
        (dict(target="similarity"), r"text_pair"),
        (dict(target="similarity", text_pair=B, pooling="max"), r"pooling='max'.*'mean'.*'cls'"),
        (dict(target="similarity", text_pair=B, query_index=1), r"query_index=1.*pooling"),
        (dict(text_pair=B), r"target='similarity'"),
        (dict(target="positive", text_pair=B), r"no class.*target='similarity'"),
        (dict(target="similarity", text_pair=B, decoder_text="x"), r"decoder_text"),
        (dict(pooling="mean", query_index=2), r"pass one"),
    ]
    if "keep" in inspect.signature(attnwidget.explain).parameters:
        cases.append((dict(target="similarity", text_pair=B, keep="rows"), r"keep='rows'"))
    for kwargs, message in cases:
        with pytest.raises(InputError, match=message):
            attnwidget.explain(model, tok, A, **kwargs)
    torch.manual_seed(0)
    classifier = tf.BertForSequenceClassification(model.config)
    for kwargs, message in (
        (dict(pooling="mean"), r"pooling is for bare encoders.*AutoModel"),
        (dict(target="similarity", text_pair=B), r"target='similarity' is for bare encoders"),
    ):
        with pytest.raises(InputError, match=message):
            attnwidget.explain(classifier, tok, A, **kwargs)


def test_mpnet_refuses_what_it_cannot_give_and_explains_the_rest() -> None:
    torch.manual_seed(2)
    tok = wordpiece_tokenizer()
    model = tf.MPNetModel(
        tf.MPNetConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
        )
    ).eval()
    exp = attnwidget.explain(model, tok, A, text_pair=B, target="similarity")
    value, first = reference_gradient(model, tok, A, B, "mean")
    assert exp.target_score == pytest.approx(value, abs=1e-5)
    np.testing.assert_allclose(exp.scores["input_x_gradient"], first, atol=1e-6)
    with pytest.raises(ModelNotSupportedError, match="value"):
        attnwidget.explain(
            model, tok, A, text_pair=B, target="similarity", methods=["effective_attention"]
        )


def test_target_score_is_the_target_logit_for_a_classifier() -> None:
    torch.manual_seed(0)
    model, tok = tiny_bert()
    classifier = tf.BertForSequenceClassification(model.config).eval()
    exp = attnwidget.explain(classifier, tok, A, target=1, methods=["raw"])
    with torch.no_grad():
        logits = classifier(input_ids=ids_of(tok, A)).logits[0]
    assert exp.target_score == pytest.approx(float(logits[1]), abs=1e-5)
    assert exp.pair_tokens is None and exp.pair_scores == {} and exp.pooling is None


def test_saliency_view_shows_the_pair_as_a_second_row() -> None:
    pytest.importorskip("anywidget")
    from attnwidget.views import SaliencyView

    model, tok = tiny_bert()
    exp = attnwidget.explain(model, tok, A, text_pair=B, target="similarity")
    view = SaliencyView(exp, methods=["rollout", "input_x_gradient"])
    assert view.pair_tokens == list(exp.pair_tokens)
    assert view.pair_shape == [2, len(exp.pair_tokens)]
    pair = np.frombuffer(view.pair_scores, dtype="<f4").reshape(view.pair_shape)
    np.testing.assert_array_equal(pair[1], exp.pair_scores["input_x_gradient"])
    assert view.target_score == pytest.approx(exp.target_score)
    plain = attnwidget.explain(model, tok, A)
    view.set_explanation(plain)
    assert view.pair_tokens == [] and view.pair_shape == [0, 0]


def test_the_other_views_show_either_text() -> None:
    pytest.importorskip("anywidget")
    from attnwidget.views import FlowView, HeadView, ModelView

    model, tok = tiny_bert()
    exp = attnwidget.explain(
        model, tok, A, text_pair=B, target="similarity", methods=["rollout", "chefer2021"]
    )
    second = exp.pair_explanation()
    assert second.tokens == exp.pair_tokens and second.target_score == exp.target_score
    np.testing.assert_array_equal(second.scores["rollout"], exp.pair_scores["rollout"])
    for shown in (exp, second):
        assert HeadView(shown).tokens == shown.tokens
        assert ModelView(shown).tokens == shown.tokens
        assert FlowView(shown, selected_method="rollout").selected_method == "rollout"
    with pytest.raises(ValueError, match="no second text"):
        attnwidget.explain(model, tok, A).pair_explanation()
