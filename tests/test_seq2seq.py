"""The seq2seq demo models: accuracy, agreement with attnwidget.teach, determinism, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidget import demo, teach
from attnwidget.demo import seq2seq
from attnwidget.demo.train_seq2seq import Seq2SeqSettings, accuracy, train
from attnwidget.errors import InputError

NAMES = [f"seq2seq-{kind}" for kind in seq2seq.KINDS]


@pytest.fixture(scope="module")
def models() -> dict[str, tuple[seq2seq.Seq2SeqAttention, seq2seq.Vocab]]:
    return {name: demo.load(name) for name in NAMES}


def test_every_kind_is_a_demo_model() -> None:
    assert set(NAMES) <= set(demo.DEMO_MODELS)
    assert set(seq2seq.KINDS) - {"local-p"} <= set(teach.SCORE_KINDS)


def test_held_out_split_is_disjoint() -> None:
    train_texts = {s for s, _ in seq2seq.examples(2000, split="train")}
    test_texts = {s for s, _ in seq2seq.examples(300, split="test")}
    assert not train_texts & test_texts
    assert all(t == s[::-1] for s, t in seq2seq.examples(50))


@pytest.mark.parametrize("name", NAMES)
def test_held_out_exact_match(models, name: str) -> None:
    model, vocab = models[name]
    # The weakest shipped model scores 98.5 % (README, seq2seq-scaled_dot): 4.5 ± 2.1
    # errors of 300 (binomial sd), against the 15 that 0.95 allows, 5 sd away.
    assert accuracy(model, vocab, n=300, seed=1) >= 0.95


@pytest.mark.parametrize("name", NAMES)
def test_weights_equal_teach_attention(models, name: str) -> None:
    model, vocab = models[name]
    for text in ("abcdefghij", "qwert", "zzyxvu"):
        result = seq2seq.translate(model, vocab, text)
        q = result.queries.astype(np.float64)
        k = result.keys.astype(np.float64)
        n = len(text)
        params = model.score_params(n)
        alignment = None
        if model.kind == "local-p":
            alignment = teach.local_p_alignment(q, n, **model.local_p_params())
        steps = teach.attention(q, k, k, model.score_kind, alignment=alignment, **params)
        np.testing.assert_allclose(result.alignment, steps.final_weights, atol=2e-5)
        assert result.alignment.shape == (len(result.output_tokens), n)


def test_translate_result(models) -> None:
    model, vocab = models["seq2seq-additive"]
    result = seq2seq.translate(model, vocab, "abcdef")
    assert result.input_tokens == list("abcdef")
    assert result.output_text == "fedcba"
    assert result.output_tokens[-1] == "</s>"
    assert result.alignment.dtype == np.float32
    np.testing.assert_allclose(result.alignment.sum(axis=1), 1.0, atol=1e-5)
    # the reversal's alignment is the anti-diagonal
    assert list(result.alignment[:6].argmax(axis=1)) == [5, 4, 3, 2, 1, 0]


def test_local_weights_vanish_outside_the_window(models) -> None:
    model, vocab = models["seq2seq-local-p"]
    for text in ("abcdefghij", "klmnop"):
        result = seq2seq.translate(model, vocab, text)
        n = len(text)
        local = teach.local_p_alignment(
            result.queries.astype(np.float64), n, **model.local_p_params()
        )
        outside = ~teach.attention_mask(
            n,
            kind="local-p",
            q=result.queries.astype(np.float64),
            **model.local_p_params(),
        )
        assert outside.any()
        assert np.all(result.alignment[outside] == 0)
        assert np.array_equal(outside, ~local.mask)


def test_training_is_deterministic() -> None:
    settings = Seq2SeqSettings(steps=30)
    first, _ = train("additive", settings)
    second, _ = train("additive", settings)
    for (name, a), (_, b) in zip(
        first.state_dict().items(), second.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty"),
        ("abc", "too short.*at least 5"),
        ("abc1", "unknown symbol.*'1'.*lowercase"),
        ("ABC", "unknown symbol"),
        ("abcdefghijklmnop", "too long.*at most 10"),
        (3, "string"),
    ],
)
def test_bad_input_is_refused(models, text, match: str) -> None:
    model, vocab = models["seq2seq-dot"]
    with pytest.raises(InputError, match=match):
        seq2seq.translate(model, vocab, text)


def test_translate_refuses_other_models(models) -> None:
    _, vocab = models["seq2seq-dot"]
    with pytest.raises(InputError, match="seq2seq demo model"):
        seq2seq.translate(object(), vocab, "abc")  # type: ignore[arg-type]
