"""explain() on real (tiny, random-weight) Hugging Face models of every family."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import torch
from tiny_models import FAMILIES, MORE_FAMILIES, build

import attnwidget
from attnwidget.capture import attention_implementation
from attnwidget.errors import InputError, ModelNotSupportedError, TruncationWarning

TEXT = "the keys to the cabinet are on the table"
MLM_TEXT = "the keys to the [MASK] are on the table"


def text_for(family: str) -> str:
    return MLM_TEXT if family == "bert-mlm" else TEXT


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_gives_well_formed_explanations(family: str) -> None:
    model, tokenizer = build(family)
    exp = attnwidget.explain(model, tokenizer, text_for(family))
    ids = tokenizer(text_for(family))["input_ids"]
    n = len(ids)
    assert len(exp.tokens) == n
    assert exp.attentions.dtype == np.float32
    assert exp.attentions.shape[0] == 2 and exp.attentions.shape[-2:] == (n, n)
    assert np.allclose(exp.attentions.sum(-1), 1.0, atol=1e-5)
    assert not any(t.startswith(("Ġ", "##", "▁")) for t in exp.tokens)
    assert set(exp.scores) == set(attnwidget.DEFAULT_METHODS)
    for scores in exp.scores.values():
        assert scores.shape == (n,) and np.isfinite(scores).all()
    if family == "bert-mlm":
        expected_query = ids.index(tokenizer.mask_token_id)
    elif family in {"gpt2-lm", "gpt2-cls", "llama-lm", "qwen2-lm", "mistral-lm"}:
        expected_query = n - 1
    else:
        expected_query = 0  # CLS; the first decoder position for encoder-decoders
    assert exp.query_index == expected_query
    if family in {"t5", "bart"}:
        assert exp.kind == "encoder-decoder"
        m = len(exp.decoder_tokens)
        assert exp.decoder_attentions.shape[-2:] == (m, m)
        assert exp.cross_attentions.shape[-2:] == (m, n)


def plain_attention_gradients(model, tokenizer, text: str, row: int, target: int):
    """Independent capture: eager model, retain_grad on the returned attention."""
    model.set_attn_implementation("eager")
    model.eval()
    inputs = tokenizer(text, return_tensors="pt")
    outputs = model(**inputs, output_attentions=True)
    for attention in outputs.attentions:
        attention.retain_grad()
    logits = outputs.logits[0] if outputs.logits.ndim == 2 else outputs.logits[0, row]
    logits[target].backward()
    model.zero_grad(set_to_none=True)
    return np.stack([a.grad[0].numpy() for a in outputs.attentions])


@pytest.mark.parametrize("family", ["bert-cls", "gpt2-lm", "llama-lm", "distilbert-cls"])
def test_attention_and_gradients_match_an_independent_capture(family: str) -> None:
    model, tokenizer = build(family)
    exp = attnwidget.explain(model, tokenizer, TEXT)
    reference_model, _ = build(family)  # same seed, same weights, untouched by explain
    grads = plain_attention_gradients(
        reference_model, tokenizer, TEXT, exp.query_index, exp.target_id
    )
    assert np.abs(grads).max() > 0
    assert np.allclose(exp.attention_grads, grads, atol=1e-6, rtol=1e-4)
    # input × gradient against a hook on the embedding layer of the stock model
    captured = {}

    def keep(_module, _inputs, output):
        output.retain_grad()
        captured["embeds"] = output

    handle = reference_model.get_input_embeddings().register_forward_hook(keep)
    outputs = reference_model(**tokenizer(TEXT, return_tensors="pt"))
    handle.remove()
    logits = outputs.logits[0] if outputs.logits.ndim == 2 else outputs.logits[0, exp.query_index]
    logits[exp.target_id].backward()
    embeds = captured["embeds"]
    expected = (embeds * embeds.grad)[0].sum(-1).detach().numpy()
    assert np.allclose(exp.scores["input_x_gradient"], expected, atol=1e-6, rtol=1e-4)


def test_default_target_is_the_prediction_and_probabilities_match() -> None:
    model, tokenizer = build("bert-cls")
    exp = attnwidget.explain(model, tokenizer, TEXT)
    model.eval()  # a freshly built model is in training mode (dropout)
    with torch.no_grad():
        logits = model(**tokenizer(TEXT, return_tensors="pt")).logits[0].numpy()
    assert exp.target_id == int(np.argmax(logits))
    assert exp.target == model.config.id2label[exp.target_id]
    assert np.allclose(exp.logits, logits, atol=1e-5)
    assert np.allclose(exp.probabilities, np.exp(logits) / np.exp(logits).sum(), atol=1e-6)


def test_model_is_left_exactly_as_it_was() -> None:
    model, tokenizer = build("bert-cls")
    model.train()
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    model.classifier.eval()  # a mixed mode must come back mixed
    before_impl = attention_implementation(model)
    assert before_impl == "sdpa"
    flags = {name: p.requires_grad for name, p in model.named_parameters()}
    modes = {name: m.training for name, m in model.named_modules()}
    state = {k: v.clone() for k, v in model.state_dict().items()}
    attnwidget.explain(model, tokenizer, TEXT, methods=list(attnwidget.available_methods()))
    assert attention_implementation(model) == before_impl
    assert {name: p.requires_grad for name, p in model.named_parameters()} == flags
    assert {name: m.training for name, m in model.named_modules()} == modes
    assert all(p.grad is None for p in model.parameters())
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks
        assert not module._backward_hooks
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


def test_model_is_restored_when_the_call_raises() -> None:
    model, tokenizer = build("bert-cls")
    model.train()
    with pytest.raises(InputError, match=r"unknown label 'neutral'.*negative"):
        attnwidget.explain(model, tokenizer, TEXT, target="neutral")
    assert model.training and attention_implementation(model) == "sdpa"
    assert all(p.requires_grad for p in model.parameters())


def test_classifier_targets() -> None:
    model, tokenizer = build("bert-cls")
    by_name = attnwidget.explain(model, tokenizer, TEXT, target="POSITIVE")
    by_index = attnwidget.explain(model, tokenizer, TEXT, target=1)
    assert by_name.target_id == by_index.target_id == 1
    assert np.allclose(by_name.scores["input_x_gradient"], by_index.scores["input_x_gradient"])
    other = attnwidget.explain(model, tokenizer, TEXT, target=0)
    assert not np.allclose(other.scores["input_x_gradient"], by_index.scores["input_x_gradient"])
    with pytest.raises(InputError, match=r"not a valid class index: expected 0..1"):
        attnwidget.explain(model, tokenizer, TEXT, target=2)


def test_causal_lm_token_targets() -> None:
    model, tokenizer = build("gpt2-lm")
    token_id = tokenizer.convert_tokens_to_ids("Ġthe")
    by_piece = attnwidget.explain(model, tokenizer, TEXT, target="Ġthe")
    by_text = attnwidget.explain(model, tokenizer, TEXT, target=" the")
    assert by_piece.target_id == by_text.target_id == token_id
    assert by_piece.target == "the"
    with pytest.raises(InputError, match=r"is \d+ tokens"):
        attnwidget.explain(model, tokenizer, TEXT, target=" cabinetry")
    with pytest.raises(InputError, match="not a valid token id"):
        attnwidget.explain(model, tokenizer, TEXT, target=10**6)


def test_masked_lm_needs_a_mask() -> None:
    model, tokenizer = build("bert-mlm")
    with pytest.raises(InputError, match=r"no \[MASK\] token"):
        attnwidget.explain(model, tokenizer, TEXT)
    exp = attnwidget.explain(model, tokenizer, TEXT, query_index=3)
    assert exp.query_index == 3


def test_query_index_override_and_range() -> None:
    model, tokenizer = build("gpt2-lm")
    exp = attnwidget.explain(model, tokenizer, TEXT, query_index=-2)
    assert exp.query_index == len(exp.tokens) - 2
    with pytest.raises(InputError, match="out of range"):
        attnwidget.explain(model, tokenizer, TEXT, query_index=100)


def test_batches_equal_single_explanations() -> None:
    model, tokenizer = build("bert-cls")
    texts = [TEXT, "a dog runs", "the cats sleep in the park"]
    batch = attnwidget.explain(model, tokenizer, texts)
    assert isinstance(batch, list) and len(batch) == 3
    for text, exp in zip(texts, batch, strict=True):
        single = attnwidget.explain(model, tokenizer, text)
        assert exp.tokens == single.tokens
        assert exp.attentions.shape == single.attentions.shape  # no padding anywhere
        assert np.allclose(exp.attentions, single.attentions, atol=1e-6)
        for name in single.scores:
            assert np.allclose(exp.scores[name], single.scores[name], atol=1e-5)


@pytest.mark.parametrize("family", ["bert-cls", "roberta-cls"])
def test_sentence_pairs_record_the_segment_boundary(family: str) -> None:
    model, tokenizer = build(family)
    exp = attnwidget.explain(model, tokenizer, "a dog runs", text_pair="the cats sleep")
    start = exp.sentence_b_start
    assert start is not None
    sep = {"bert-cls": "[SEP]", "roberta-cls": "</s>"}[family]
    assert exp.tokens[start - 1] == sep and exp.tokens[start] == "the"
    assert attnwidget.explain(model, tokenizer, "a dog runs").sentence_b_start is None


def test_encoder_decoder_query_reads_through_cross_attention() -> None:
    model, tokenizer = build("t5")
    exp = attnwidget.explain(model, tokenizer, TEXT, decoder_text="the keys")
    decoder_ids = tokenizer("the keys", add_special_tokens=False)["input_ids"]
    assert exp.decoder_tokens[0] == "<pad>" and len(exp.decoder_tokens) == 1 + len(decoder_ids)
    assert exp.query_index == len(decoder_ids)
    weights = exp.cross_attentions[-1].mean(0)[exp.query_index]
    assert np.allclose(exp.scores["raw"], weights @ exp.attentions[-1].mean(0), atol=1e-5)
    flows = attnwidget.explain(model, tokenizer, TEXT, decoder_text="the keys", methods=["flow"])
    every_row = attnwidget.attention_flow(exp.attentions.astype(np.float64))
    assert np.allclose(flows.scores["flow"], weights @ every_row, atol=1e-5)


def test_bfloat16_model_returns_float32_numpy() -> None:
    model, tokenizer = build("gpt2-lm")
    model = model.to(torch.bfloat16)
    exp = attnwidget.explain(model, tokenizer, TEXT)
    assert exp.attentions.dtype == np.float32
    assert all(s.dtype == np.float32 and np.isfinite(s).all() for s in exp.scores.values())
    assert next(model.parameters()).dtype == torch.bfloat16


def test_integrated_gradients_and_blank_out_on_a_real_model() -> None:
    model, tokenizer = build("bert-cls")
    exp = attnwidget.explain(
        model,
        tokenizer,
        TEXT,
        methods=["integrated_gradients", "blank_out"],
        method_options={"integrated_gradients": {"steps": 64}},
    )
    info = exp.details["integrated_gradients"]
    assert abs(info["completeness_gap"]) < 0.05 * abs(info["target_delta"]) + 1e-4
    assert exp.scores["integrated_gradients"].sum() == pytest.approx(
        info["target_delta"] + info["completeness_gap"], abs=1e-4
    )
    # blank-out of token 3 by hand: replace it with [UNK] and compare probabilities
    ids = tokenizer(TEXT, return_tensors="pt")["input_ids"]
    blanked = ids.clone()
    blanked[0, 3] = tokenizer.unk_token_id
    model.eval()
    with torch.no_grad():
        p = model(input_ids=ids).logits.softmax(-1)[0, exp.target_id]
        q = model(input_ids=blanked).logits.softmax(-1)[0, exp.target_id]
    assert exp.scores["blank_out"][3] == pytest.approx(float(p - q), abs=1e-5)
    assert exp.scores["blank_out"][0] == 0.0  # [CLS] is never blanked


def test_bad_input_errors() -> None:
    model, tokenizer = build("bert-cls")
    with pytest.raises(InputError, match="empty"):
        attnwidget.explain(model, tokenizer, "   ")
    with pytest.raises(InputError, match="empty list"):
        attnwidget.explain(model, tokenizer, [])
    long_text = " ".join(["the keys"] * 40)
    with pytest.raises(InputError, match=r"at most 64.*truncation=True"):
        attnwidget.explain(model, tokenizer, long_text)
    with pytest.warns(TruncationWarning):
        exp = attnwidget.explain(model, tokenizer, long_text, truncation=True)
    assert len(exp.tokens) == 64
    with pytest.raises(attnwidget.UnknownMethodError, match="known methods"):
        attnwidget.explain(model, tokenizer, TEXT, methods=["flowz"])
    with pytest.raises(InputError, match="decoder_text"):
        attnwidget.explain(model, tokenizer, TEXT, decoder_text="x")


def test_a_model_without_a_head_or_attention_is_refused() -> None:
    import transformers as tf

    _, tokenizer = build("bert-cls")
    bare = tf.BertModel(
        tf.BertConfig(
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            vocab_size=len(tokenizer),
        )
    )
    # A bare encoder has attention but no score: methods that explain one are refused.
    with pytest.raises(InputError, match="AutoModelForSequenceClassification"):
        attnwidget.explain(bare, tokenizer, TEXT, methods=["grad_attention"])
    mamba = tf.MambaForCausalLM(
        tf.MambaConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, state_size=4)
    )
    mamba.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ModelNotSupportedError, match="no attention weights"):
            attnwidget.explain(mamba, tokenizer, TEXT)
    assert mamba.training  # restored after the error


def test_non_finite_attention_is_reported() -> None:
    model, tokenizer = build("bert-cls")
    with torch.no_grad():
        model.bert.encoder.layer[0].attention.self.query.weight[0, 0] = float("nan")
    with pytest.raises(attnwidget.NonFiniteError, match="NaN/inf"):
        attnwidget.explain(model, tokenizer, TEXT)


def _eager_reference_attentions(model, tokenizer, text: str) -> np.ndarray:
    """The stock model's returned attention, its configs set to eager by hand."""
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "_attn_implementation_internal"):
            config._attn_implementation_internal = "eager"
    model.eval()
    # Only what forward() takes: older transformers refuse e.g. token_type_ids on Gemma.
    accepted = inspect.signature(model.forward).parameters
    inputs = {k: v for k, v in tokenizer(text, return_tensors="pt").items() if k in accepted}
    with torch.no_grad():
        outputs = model(**inputs, output_attentions=True)
    return np.stack([a[0].float().numpy() for a in outputs.attentions])


@pytest.mark.parametrize("family", MORE_FAMILIES)
def test_captured_attention_of_more_families_is_the_models_eager_attention(family: str) -> None:
    # Falcon, MPNet and DeBERTa-v2 write attention inline and refuse
    # set_attn_implementation; left on sdpa, Falcon's captured rows looked
    # past the diagonal. The capture must see the eager (masked) weights.
    model, tokenizer = build(family)
    before = attention_implementation(model)
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["raw"], query_index=1)
    assert attention_implementation(model) == before
    reference_model, _ = build(family)
    expected = _eager_reference_attentions(reference_model, tokenizer, TEXT)
    assert exp.attentions.shape == expected.shape
    assert np.allclose(exp.attentions, expected, atol=1e-6)
    assert np.allclose(exp.attentions.sum(-1), 1.0, atol=1e-5)
    if family.endswith("-lm"):  # decoders: nothing above the diagonal
        assert np.abs(np.triu(exp.attentions, k=1)).max() == 0.0
