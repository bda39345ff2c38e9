"""diagnostics.seed_variance (Wiegreffe & Pinter 2019) against a hand computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from attnwidget import demo, diagnostics
from attnwidget.errors import InputError

TEXTS = ["the keys to the cabinet", "the author that the critics praise"]


def tiny_bert(seed: int, vocab: int) -> BertForSequenceClassification:
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, num_labels=2,
    )  # fmt: skip
    config._attn_implementation = "eager"
    return BertForSequenceClassification(config).eval()


def by_hand(model, tokenizer, text: str, layer: int) -> tuple[np.ndarray, np.ndarray]:
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    row = out.attentions[layer][0].double().mean(0)[0].numpy()  # [CLS] row, mean over heads
    return row, out.logits[0].double().softmax(-1).numpy()


def jsd(p: np.ndarray, q: np.ndarray) -> float:
    m = (p + q) / 2
    kl = lambda a: float(np.sum(np.where(a > 0, a * np.log(a / m), 0.0)))  # noqa: E731
    return 0.5 * kl(p) + 0.5 * kl(q)


@pytest.mark.parametrize("layer", [0, -1])
def test_pairs_equal_the_hand_computation(layer: int) -> None:
    _, tokenizer = demo.load("sva-encoder")
    models = [tiny_bert(seed, len(tokenizer)) for seed in (0, 1, 2)]
    result = diagnostics.seed_variance(models, tokenizer, TEXTS, layer=layer)
    assert result.pairs == [(0, 1), (0, 2), (1, 2)]
    for p, (i, j) in enumerate(result.pairs):
        for s, text in enumerate(TEXTS):
            row_i, out_i = by_hand(models[i], tokenizer, text, layer)
            row_j, out_j = by_hand(models[j], tokenizer, text, layer)
            assert result.attention_jsd[p, s] == pytest.approx(jsd(row_i, row_j), rel=1e-6)
            assert result.output_tvd[p, s] == pytest.approx(
                0.5 * np.abs(out_i - out_j).sum(), rel=1e-6, abs=1e-12
            )
            assert result.same_decision[p, s] == (out_i.argmax() == out_j.argmax())
    assert result.attention_jsd.min() > 0  # different seeds, different attention
    frame = result.to_dataframe()
    assert len(frame) == 3 * len(TEXTS)


def test_a_model_against_itself_varies_nowhere() -> None:
    model, tokenizer = demo.load("sva-encoder")
    result = diagnostics.seed_variance([model, model], tokenizer, TEXTS)
    assert np.all(result.attention_jsd < 1e-12) and np.all(result.output_tvd < 1e-12)
    assert result.summary()["same decision"] == 1.0
    assert "Attention across training seeds" in str(result)


def test_fewer_than_two_models_is_refused() -> None:
    model, tokenizer = demo.load("sva-encoder")
    with pytest.raises(InputError, match="two or more"):
        diagnostics.seed_variance([model], tokenizer, TEXTS)
