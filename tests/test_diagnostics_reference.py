"""Jain & Wallace's (2019) rank correlation and permutation test against independent computations.

``rank_correlation``: Kendall τ-b counted pair by pair and with scipy's
``kendalltau``, on rankings with ties and without; then, on the demo model,
the attention, input × gradient and leave-one-out scores taken by hand from
the model (its attention weights, autograd, UNK substitution) and ranked with
scipy. ``permutation_test``: a one-layer, one-head BERT whose classifier reads
[CLS], so only the [CLS] row's permutation reaches the output: the 4! outcomes
on a four-token input are enumerated with a forward pass written out here.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau
from transformers import BertConfig, BertForSequenceClassification

from attnwidget import demo, diagnostics
from attnwidget.diagnostics import _intervene as iv
from attnwidget.diagnostics.jain_wallace import _tau

needs_interface = pytest.mark.skipif(
    not iv.register(required=False),
    reason="the diagnostics need transformers.AttentionInterface (>=5.0)",
)


def tau_b_by_pairs(a: list[float], b: list[float]) -> float:
    """Kendall's τ-b: (concordant − discordant) / √((pairs − ties in a)(pairs − ties in b))."""
    concordant = discordant = ties_a = ties_b = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
        ties_a += da == 0
        ties_b += db == 0
        concordant += da * db > 0
        discordant += da * db < 0
    pairs = len(a) * (len(a) - 1) // 2
    return (concordant - discordant) / math.sqrt((pairs - ties_a) * (pairs - ties_b))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([0.1, 0.5, 0.2, 0.9, 0.3], [1.0, 3.0, 2.0, 5.0, 0.5]),  # no ties
        ([0.1, 0.1, 0.2, 0.9, 0.9], [1.0, 3.0, 3.0, 5.0, 0.5]),  # ties on both sides
        ([0.2, 0.2, 0.2, 0.7], [4.0, 1.0, 2.0, 3.0]),  # a three-way tie
    ],
)
def test_tau_is_kendalls_tau_b_with_ties_and_without(a: list[float], b: list[float]) -> None:
    tau, p = _tau(np.array(a), np.array(b))
    reference = kendalltau(a, b, variant="b")
    assert tau == pytest.approx(reference.statistic, abs=1e-12)
    assert tau == pytest.approx(tau_b_by_pairs(a, b), abs=1e-12)
    assert p == pytest.approx(reference.pvalue, abs=1e-12)


def _by_hand(model, tokenizer, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[CLS]'s last-layer attention (head mean), |input × gradient|, |blank-out|: words only."""
    encoding = tokenizer(text, return_tensors="pt")
    ids = encoding["input_ids"]
    embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    out = model(
        inputs_embeds=embeds, attention_mask=encoding["attention_mask"], output_attentions=True
    )
    logits = out.logits[0]
    predicted = int(logits.argmax())
    (grad,) = torch.autograd.grad(logits[predicted], embeds)
    gradient = (embeds * grad).sum(-1)[0].detach().double().numpy()
    attention = out.attentions[-1][0].double().mean(0)[0].detach().numpy()
    with torch.no_grad():
        probability = float(logits.double().softmax(-1)[predicted])
        words = [i for i, t in enumerate(ids[0].tolist()) if t not in tokenizer.all_special_ids]
        blank = np.zeros(ids.shape[1])
        for i in words:
            blanked = ids.clone()
            blanked[0, i] = tokenizer.unk_token_id
            p = model(input_ids=blanked).logits[0].double().softmax(-1)[predicted]
            blank[i] = probability - float(p)
    return attention[words], np.abs(gradient[words]), np.abs(blank[words])


@needs_interface
def test_rank_correlation_is_scipys_tau_of_scores_taken_by_hand() -> None:
    model, tokenizer = demo.load("sva-encoder", attn_implementation="eager")
    texts = [example.text for example in demo.sentences(4, seed=5)]
    result = diagnostics.rank_correlation(model, tokenizer, texts)
    for k, text in enumerate(texts):
        attention, gradient, blank = _by_hand(model, tokenizer, text)
        for scores, tau, p in (
            (gradient, result.tau_gradient[k], result.p_gradient[k]),
            (blank, result.tau_loo[k], result.p_loo[k]),
        ):
            reference = kendalltau(attention, scores)
            assert tau == pytest.approx(reference.statistic, abs=1e-9), text
            assert p == pytest.approx(reference.pvalue, rel=1e-6), text
            assert tau == pytest.approx(tau_b_by_pairs(list(attention), list(scores)), abs=1e-9)


def _one_layer_bert(vocab: int) -> BertForSequenceClassification:
    torch.manual_seed(3)
    config = BertConfig(
        vocab_size=vocab, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
        intermediate_size=16, max_position_embeddings=16, initializer_range=0.5,
        hidden_act="gelu", attn_implementation="eager",
    )  # fmt: skip
    return BertForSequenceClassification(config).eval()


def _logits_with_cls_row(
    model: BertForSequenceClassification, ids: torch.Tensor, order
) -> torch.Tensor:
    """The model's forward pass written out, [CLS]'s attention row reordered (p[order])."""
    bert, n = model.bert, ids.shape[0]
    e = bert.embeddings
    h = e.word_embeddings.weight[ids] + e.position_embeddings.weight[:n]
    h = e.LayerNorm(h + e.token_type_embeddings.weight[0])
    layer = bert.encoder.layer[0]
    s = layer.attention.self
    q, k, v = s.query(h), s.key(h), s.value(h)
    probabilities = (q @ k.T / math.sqrt(q.shape[-1])).softmax(-1)
    probabilities = torch.cat([probabilities[0, list(order)][None], probabilities[1:]])
    o = layer.attention.output
    a = o.LayerNorm(o.dense(probabilities @ v) + h)
    f = layer.output.LayerNorm(layer.output.dense(layer.intermediate(a)) + a)
    pooled = torch.tanh(bert.pooler.dense(f[0]))
    return model.classifier(pooled).double()


@needs_interface
def test_permutation_test_draws_each_of_the_enumerated_outcomes() -> None:
    _, tokenizer = demo.load("sva-encoder")
    model = _one_layer_bert(len(tokenizer))
    text = "the dog"
    ids = tokenizer(text, return_tensors="pt")["input_ids"][0]
    assert len(ids) == 4  # [CLS] the dog [SEP]: 4! orders of [CLS]'s row
    with torch.no_grad():
        original = _logits_with_cls_row(model, ids, range(4))
        torch.testing.assert_close(original, model(input_ids=ids[None]).logits[0].double())
        p0 = original.softmax(-1)
        outcomes = {}
        for order in itertools.permutations(range(4)):
            p = _logits_with_cls_row(model, ids, order).softmax(-1)
            outcomes[order] = (0.5 * float((p - p0).abs().sum()), bool(p.argmax() != p0.argmax()))
    tvds = np.array([tvd for tvd, _ in outcomes.values()])
    gaps = np.diff(np.sort(tvds))
    assert gaps.min() > 1e-6  # every order is told apart by its TVD alone
    draws = 240
    result = diagnostics.permutation_test(model, tokenizer, [text], layer=0, permutations=draws)
    assert result.tvd.shape == (1, draws) and result.flipped.shape == (1, draws)
    flips = np.array([flip for _, flip in outcomes.values()])
    seen = np.zeros(len(tvds), dtype=int)
    for tvd, flipped in zip(result.tvd[0], result.flipped[0], strict=True):
        nearest = int(np.argmin(np.abs(tvds - tvd)))
        assert abs(tvds[nearest] - tvd) < 1e-7, tvd  # one of the 24 outcomes
        assert flipped == flips[nearest]
        seen[nearest] += 1
    # Uniform draws: 10 expected per order (binomial sd ≈ 3.1); every order is
    # drawn, and none more than 2.5 times as often as expected.
    assert seen.min() >= 1 and seen.max() <= 25, seen
    with torch.no_grad():
        cls_row = model(input_ids=ids[None], output_attentions=True).attentions[0][0, :, 0]
    assert result.max_attention[0] == pytest.approx(float(cls_row.mean(0).max()), abs=1e-6)
    assert result.median_tvd[0] == pytest.approx(float(np.median(result.tvd[0])))
