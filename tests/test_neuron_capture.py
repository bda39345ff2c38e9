"""attnwidget.capture.qk: every head's q and k, read with hooks, checked against the model.

For each tiny stock family (tests/tiny_models.py) and the shipped sva-encoder:
softmax(scale · q·k + mask) from the captured (rotated) q and k equals the
model's own eager ``output_attentions`` for every layer and head; the
unrotated q and k equal x·W + b computed by hand from ``output_hidden_states``
(after ``ln_1`` / ``input_layernorm`` where the family normalises before
attention); the model's hooks and training flags are unchanged afterwards.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import build
from value_reference import model_run

import attnwidget
from attnwidget.capture.qk import qk_layouts, query_keys
from attnwidget.errors import InputError, ModelNotSupportedError

TEXT = "the cat sat on the mat and the dog ran"
FAMILIES = (
    "bert-cls",
    "roberta-cls",
    "xlm-roberta-cls",
    "electra-cls",
    "gpt2-lm",
    "llama-lm",
    "qwen2-lm",
    "mistral-lm",
)


def _np(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().double().cpu().numpy()


def _hooks(model) -> list[tuple[str, int, int, int]]:
    return [
        (name, len(m._forward_hooks), len(m._forward_pre_hooks), int(m.training))
        for name, m in model.named_modules()
    ]


@pytest.fixture(scope="module", params=[*FAMILIES, "sva-encoder"])
def family(request):
    if request.param == "sva-encoder":
        model, tokenizer = attnwidget.demo.load("sva-encoder")
    else:
        model, tokenizer = build(request.param)
    return request.param, model, tokenizer


def _hand_qk(model, hidden, layer: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(n, H·d) q and (n, H_kv·d) k of ``layer`` from its weights and input hidden state."""
    base = model.base_model
    h = hidden[layer][0]
    if hasattr(base, "encoder"):  # BERT family, post-LN: the layer reads h itself
        block = base.encoder.layer[layer].attention.self
        x = _np(h)
        q = x @ _np(block.query.weight).T + _np(block.query.bias)
        k = x @ _np(block.key.weight).T + _np(block.key.bias)
        return q, k, int(block.num_attention_heads)
    if hasattr(base, "h"):  # GPT-2, pre-LN; Conv1D weights are (in, out)
        block = base.h[layer]
        with torch.no_grad():
            x = _np(block.ln_1(h))
        d = x.shape[1]
        w, b = _np(block.attn.c_attn.weight), _np(block.attn.c_attn.bias)
        return x @ w[:, :d] + b[:d], x @ w[:, d : 2 * d] + b[d : 2 * d], model.config.n_head
    block = base.layers[layer]  # Llama-style, pre-norm (RMSNorm)
    with torch.no_grad():
        x = _np(block.input_layernorm(h))
    attn = block.self_attn
    q = x @ _np(attn.q_proj.weight).T
    k = x @ _np(attn.k_proj.weight).T
    if attn.q_proj.bias is not None:
        q, k = q + _np(attn.q_proj.bias), k + _np(attn.k_proj.bias)
    return q, k, model.config.num_attention_heads


def test_weights_from_captured_qk_equal_the_models_attention(family) -> None:
    name, model, tokenizer = family
    captured = query_keys(model, tokenizer, TEXT)
    ids = tokenizer(TEXT)["input_ids"]
    attentions, _hidden = model_run(model, ids)
    n = len(ids)
    assert captured.tokens == tokenizer.convert_ids_to_tokens(ids)
    assert captured.q.shape == captured.k.shape == captured.q_rotated.shape
    assert captured.q.shape[:3] == attentions.shape[:3] and captured.q.dtype == np.float32
    causal = name in {"gpt2-lm", "llama-lm", "qwen2-lm", "mistral-lm"}
    assert captured.causal is causal
    assert captured.rotary is (name in {"llama-lm", "qwen2-lm", "mistral-lm"})
    mask = np.tril(np.ones((n, n))) if causal else np.ones((n, n))
    for layer in range(captured.num_layers):
        # By hand, float64, from the captured rotated q and k.
        q = captured.q_rotated[layer].astype(np.float64)
        k = captured.k_rotated[layer].astype(np.float64)
        d = q.shape[-1]
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d) + np.where(mask > 0, 0.0, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        np.testing.assert_allclose(weights, attentions[layer], atol=2e-5, err_msg=f"{name} {layer}")
        np.testing.assert_allclose(captured.weights(layer), attentions[layer], atol=2e-5)
        np.testing.assert_allclose(float(captured.scale[layer]), 1 / np.sqrt(d), rtol=1e-12)


def test_unrotated_qk_equal_hand_projections(family) -> None:
    _name, model, tokenizer = family
    captured = query_keys(model, tokenizer, TEXT)
    _attentions, hidden = model_run(model, tokenizer(TEXT)["input_ids"])
    for layer in range(captured.num_layers):
        q, k, heads = _hand_qk(model, hidden, layer)
        d = q.shape[1] // heads
        kv_heads = k.shape[1] // d
        assert captured.kv_heads == kv_heads
        for head in range(heads):
            source = head // (heads // kv_heads)
            np.testing.assert_allclose(
                captured.q[layer, head], q[:, head * d : (head + 1) * d], atol=1e-5
            )
            np.testing.assert_allclose(
                captured.k[layer, head], k[:, source * d : (source + 1) * d], atol=1e-5
            )
    if not captured.rotary:
        np.testing.assert_array_equal(captured.q, captured.q_rotated)
        np.testing.assert_array_equal(captured.k, captured.k_rotated)


def test_rotation_changes_q_and_k_but_keeps_their_norms_and_the_first_position() -> None:
    model, tokenizer = build("llama-lm")
    captured = query_keys(model, tokenizer, TEXT)
    assert model.config.num_key_value_heads < model.config.num_attention_heads  # GQA
    assert not np.allclose(captured.q, captured.q_rotated)
    # A rotation: each position's vector keeps its length; position 0 is not turned.
    np.testing.assert_allclose(
        np.linalg.norm(captured.q, axis=-1), np.linalg.norm(captured.q_rotated, axis=-1), rtol=1e-5
    )
    np.testing.assert_allclose(captured.k[:, :, 0], captured.k_rotated[:, :, 0], atol=1e-6)
    # Grouped query heads share one key head: heads 0 and 1 read kv head 0.
    np.testing.assert_array_equal(captured.k[:, 0], captured.k[:, 1])
    assert not np.array_equal(captured.q[:, 0], captured.q[:, 1])


def test_the_model_is_left_as_it_was(family) -> None:
    _name, model, tokenizer = family
    model.train()
    before = _hooks(model)
    implementation = model.config._attn_implementation
    query_keys(model, tokenizer, TEXT)
    assert _hooks(model) == before
    assert model.config._attn_implementation == implementation
    model.eval()
    before = _hooks(model)
    query_keys(model, tokenizer, TEXT)
    assert _hooks(model) == before


def test_hooks_are_removed_when_the_forward_pass_raises() -> None:
    model, tokenizer = build("gpt2-lm")
    before = _hooks(model)
    block = model.transformer.h[1]

    def fail(*_args):
        raise RuntimeError("boom")

    handle = block.register_forward_pre_hook(fail)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            query_keys(model, tokenizer, TEXT)
    finally:
        handle.remove()
    assert _hooks(model) == before


def test_unread_layouts_and_bad_text_are_refused() -> None:
    model, tokenizer = build("distilbert-cls")
    with pytest.raises(ModelNotSupportedError, match="cannot be read"):
        qk_layouts(model)
    model, tokenizer = build("bert-cls")
    with pytest.raises(InputError, match="non-empty string"):
        query_keys(model, tokenizer, "")
    model.config.position_embedding_type = "relative_key"
    try:
        with pytest.raises(ModelNotSupportedError, match="relative"):
            qk_layouts(model)
    finally:
        model.config.position_embedding_type = "absolute"
