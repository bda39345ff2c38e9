"""``explain(..., keep=...)``: "fused" and "rows" give the scores of "all", from less.

References are explicit loops over the (L, H, n, n) attention and gradient
that ``keep="all"`` returns (Abnar & Zuidema 2020 rollout; Chefer, Gur & Wolf
2021 gradient-weighted attention), not our methods; input × gradient
(Shrikumar et al. 2017) is taken by autograd on the model's input embeddings.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import build

import attnwidget
from attnwidget import demo, explain
from attnwidget.capture import attention_implementation, recompute
from attnwidget.capture import keep as keep_module
from attnwidget.errors import InputError

TEXT = "the cat sat on the mat because it was warm"
METHODS = ["raw", "rollout", "grad_attention", "input_x_gradient"]


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _model(name: str):
    if name == "llama-lm-eager":
        name = "llama-lm"
    if name == "sva-encoder":
        model, tokenizer = demo.load("sva-encoder")
        return model, tokenizer, "the keys to the cabinet"
    model, tokenizer = build(name)
    return model, tokenizer, TEXT


def _rollout_row(att: np.ndarray, q: int, top: int, residual: bool) -> np.ndarray:
    n = att.shape[-1]
    product = np.eye(n)
    for layer in range(top + 1):
        w = att[layer].astype(np.float64).mean(axis=0)
        a = 0.5 * w + 0.5 * np.eye(n) if residual else w
        a = a / a.sum(axis=1, keepdims=True)
        product = a @ product
    return product[q]


def _grad_attention_row(att: np.ndarray, grad: np.ndarray, q: int, start: int) -> np.ndarray:
    n = att.shape[-1]
    relevance = np.eye(n)
    for layer in range(start, att.shape[0]):
        cam = np.zeros((n, n))
        for head in range(att.shape[1]):
            cam += np.maximum(att[layer, head].astype(np.float64) * grad[layer, head], 0.0)
        relevance = relevance + (cam / att.shape[1]) @ relevance
    return relevance[q]


def _input_x_gradient(model, tokenizer, text: str, target: int) -> np.ndarray:
    """Σ_d e·∂y/∂e per token, by autograd on the input embeddings (Shrikumar et al. 2017).

    y is the target's logit: the classifier's, or a causal LM's at the last position.
    """
    encoding = dict(tokenizer(text, return_tensors="pt"))
    ids = encoding.pop("input_ids")
    embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    training = model.training
    model.eval()  # as explain runs it: no dropout
    try:
        logits = model(inputs_embeds=embeds, **encoding).logits
    finally:
        model.train(training)
    logits = logits[0] if logits.dim() == 2 else logits[0, -1]
    assert target == int(logits.argmax())  # explain's default target: the prediction
    (grad,) = torch.autograd.grad(logits[target], embeds)
    return (embeds * grad).sum(-1)[0].detach().double().numpy()


def _check(exp, full, options, input_x_gradient: np.ndarray) -> None:
    att, grad, q = full.attentions, full.attention_grads, full.query_index
    raw = options.get("raw", {})
    if raw.get("head") is None:
        want = att[raw.get("layer", -1)].astype(np.float64).mean(axis=0)[q]
    else:
        want = att[raw["layer"], raw["head"], q]
    np.testing.assert_allclose(exp.scores["raw"], want, rtol=1e-5, atol=1e-7)
    ro = options.get("rollout", {})
    top = ro.get("layer", -1) % att.shape[0]
    want = _rollout_row(att, q, top, ro.get("residual", True))
    np.testing.assert_allclose(exp.scores["rollout"], want, rtol=1e-4, atol=1e-7)
    start = options.get("grad_attention", {}).get("start_layer", 0)
    want = _grad_attention_row(att, grad, q, start)
    np.testing.assert_allclose(exp.scores["grad_attention"], want, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(
        exp.scores["input_x_gradient"], input_x_gradient, rtol=1e-4, atol=1e-6
    )


@pytest.mark.parametrize("name", ["llama-lm", "llama-lm-eager", "bert-cls", "sva-encoder"])
def test_fused_and_rows_give_the_scores_of_all(name, monkeypatch):
    """Llama runs with sdpa and recomputed attention ("-eager": eager attention and hooks)."""
    monkeypatch.setattr(keep_module, "CHUNK_FLOATS", 500)  # several row blocks per layer
    blocks = []
    monkeypatch.setattr(recompute, "ENABLED", name != "llama-lm-eager")
    original = recompute.RecomputeReducer._blocks

    def counted(self, held, grad):
        for block in original(self, held, grad):
            blocks.append(block[:2])
            yield block

    monkeypatch.setattr(recompute.RecomputeReducer, "_blocks", counted)
    model, tokenizer, text = _model(name)
    before = attention_implementation(model)
    variant = {
        "raw": {"layer": 0, "head": 1},
        "rollout": {"layer": 0, "residual": False},
        "grad_attention": {"start_layer": 1},
    }
    for options in ({}, variant):
        full = explain(model, tokenizer, text, methods=METHODS, keep="all", method_options=options)
        assert full.keep == "all" and full.fused_attentions is None
        reference = _input_x_gradient(model, tokenizer, text, full.target_id)
        for keep in ("fused", "rows"):
            exp = explain(
                model, tokenizer, text, methods=METHODS, keep=keep, method_options=options
            )
            assert exp.keep == keep and exp.attentions is None and exp.attention_grads is None
            _check(exp, full, options, reference)
            q = full.query_index
            np.testing.assert_allclose(exp.attention_rows, full.attentions[:, :, q, :], atol=1e-7)
            assert exp.num_layers == full.num_layers and exp.num_heads == full.num_heads
        _check(full, full, options, reference)  # "all" against the loops and autograd
    assert attention_implementation(model) == before
    if name == "llama-lm":  # 500 // (1 example · 4 heads · n tokens) = 4 rows per block
        assert blocks[:2] == [(0, 4), (4, 8)]
    else:
        assert not blocks
    fused = explain(model, tokenizer, text, methods=["raw"], keep="fused")
    np.testing.assert_allclose(
        fused.fused_attentions, full.attentions.mean(axis=1), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(fused.fused_attention(1), full.fused_attention(1), atol=1e-6)


def test_flow_and_discard_ratio_from_fused_maps():
    model, tokenizer = build("gpt2-lm")
    options = {"rollout": {"discard_ratio": 0.3}}
    names = ["rollout", "flow"]
    full = explain(model, tokenizer, TEXT, methods=names, keep="all", method_options=options)
    fused = explain(model, tokenizer, TEXT, methods=names, keep="fused", method_options=options)
    for name in names:
        np.testing.assert_allclose(fused.scores[name], full.scores[name], rtol=1e-4, atol=1e-6)
    with pytest.raises(InputError, match="keep='fused'"):
        explain(model, tokenizer, TEXT, methods=names, keep="rows", method_options=options)


def test_encoder_decoder_query_weights():
    model, tokenizer = build("t5")
    full = explain(model, tokenizer, TEXT, methods=METHODS, keep="all")
    rows = explain(model, tokenizer, TEXT, methods=METHODS, keep="rows")
    for name in METHODS:
        np.testing.assert_allclose(rows.scores[name], full.scores[name], rtol=1e-4, atol=1e-7)
    with pytest.raises(InputError, match="keep='all'"):
        explain(
            model, tokenizer, TEXT, methods=["raw"], keep="rows",
            method_options={"raw": {"head_fusion": "max"}},
        )  # fmt: skip


@pytest.mark.parametrize("name", ["llama-lm", "bert-cls"])
def test_same_length_texts_in_one_batch(name, monkeypatch):
    """Texts of one length run as one batch: each example's rows are its own."""
    monkeypatch.setattr(keep_module, "CHUNK_FLOATS", 300)
    model, tokenizer = build(name)
    texts = ["the cat sat on the mat", "the cat sat on the hat", "a cat sat on the mat"]
    assert len({len(tokenizer(text)["input_ids"]) for text in texts}) == 1
    fulls = explain(model, tokenizer, texts, methods=METHODS, keep="all")
    rows = explain(model, tokenizer, texts, methods=METHODS, keep="rows")
    for text, exp, full in zip(texts, rows, fulls, strict=True):
        _check(exp, full, {}, _input_x_gradient(model, tokenizer, text, full.target_id))


def test_default_keep_rule(monkeypatch):
    assert keep_module.default_keep(12, 12, 512, "rows") == "all"  # BERT-base at 512
    assert keep_module.default_keep(4, 8, 1024, "rows") == "all"  # 2**25 floats
    assert keep_module.default_keep(4, 8, 4096, "rows") == "fused"  # L·n² = 2**26
    assert keep_module.default_keep(4, 8, 8192, "rows") == "rows"
    assert keep_module.default_keep(32, 32, 4096, "rows") == "rows"
    assert keep_module.default_keep(32, 32, 4096, "all") == "all"
    model, tokenizer = build("llama-lm")
    full = explain(model, tokenizer, TEXT, methods=METHODS)
    assert full.keep == "all"
    layers, n = full.num_layers, len(full.tokens)
    monkeypatch.setattr(keep_module, "DEFAULT_KEEP_LIMIT", layers * n * n)
    assert explain(model, tokenizer, TEXT, methods=METHODS).keep == "fused"
    monkeypatch.setattr(keep_module, "DEFAULT_KEEP_LIMIT", layers * n * n - 1)
    assert explain(model, tokenizer, TEXT, methods=METHODS).keep == "rows"
    assert explain(model, tokenizer, TEXT, methods=[*METHODS, "flow"]).keep == "fused"
    spec = {"rollout": {"head_fusion": "max"}}
    assert explain(model, tokenizer, TEXT, methods=["rollout"], method_options=spec).keep == "all"


def test_clear_errors():
    model, tokenizer = build("llama-lm")
    with pytest.raises(InputError, match="not one of 'all', 'fused', 'rows'"):
        explain(model, tokenizer, TEXT, keep="some")
    with pytest.raises(InputError, match=r"'flow' needs keep='fused'"):
        explain(model, tokenizer, TEXT, methods=["flow"], keep="rows")
    with pytest.raises(InputError, match=r"'effective_attention' needs keep='all'"):
        explain(model, tokenizer, TEXT, methods=["effective_attention"], keep="fused")
    with pytest.raises(InputError, match=r"'rollout' needs keep='all' \(head_fusion='max'"):
        explain(
            model, tokenizer, TEXT, methods=["rollout"], keep="fused",
            method_options={"rollout": {"head_fusion": "max"}},
        )  # fmt: skip
    rows = explain(model, tokenizer, TEXT, methods=["raw"], keep="rows")
    for view in (attnwidget.HeadView, attnwidget.ModelView, attnwidget.FlowView):
        with pytest.raises(InputError, match=r"View needs every head's .* keep='all'"):
            view(rows)
    with pytest.raises(InputError, match="keep='all'"):
        rows.fused_attention(0)
    assert repr(rows).startswith("Explanation(kind='causal-lm', n=")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none here)")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cuda_half_precision_rows_match_float32(dtype):
    """The long-input path on a GPU: half-precision weights, keep="rows", vs float32 "all"."""
    model, tokenizer = build("llama-lm")
    full = explain(model, tokenizer, TEXT, methods=METHODS, keep="all")
    model = model.to(device="cuda", dtype=dtype)
    rows = explain(model, tokenizer, TEXT, methods=METHODS, keep="rows")
    assert rows.keep == "rows" and rows.attentions is None
    for name in ("raw", "rollout"):
        np.testing.assert_allclose(rows.scores[name], full.scores[name], atol=2e-2)
    assert np.isfinite(rows.scores["grad_attention"]).all()
    assert attnwidget.explain is explain
