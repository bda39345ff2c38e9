"""sva-deceptive: Pruthi et al.'s (2020) manipulated attention, shipped and re-measured.

The model was fine-tuned from sva-encoder with a penalty on the attention
[CLS] gives the subject (attnwidget.demo.train_deceptive). Claims re-measured
here on held-out sentences the training never saw: it is as accurate as
sva-encoder; raw attention's top word is almost never the subject (it is
for about half of sva-encoder's sentences); the methods that do not read
attention weights directly (blank-out, integrated gradients, LRP) still
find the subject. On 150 sentences (seed 1) the shares were: raw 0 % (sva-encoder
50 %), blank_out 85 %, integrated_gradients 83 %, lrp 99 %; the thresholds
below sit well under those.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import attnwidget
from attnwidget import demo
from attnwidget.demo import grammar
from attnwidget.demo.train import accuracy

METHODS = ["raw", "blank_out", "integrated_gradients", "lrp"]
COUNT = 60


def top_word_is_subject(name: str) -> dict[str, float]:
    model, tokenizer = demo.load(name)
    examples = demo.sentences(COUNT, seed=2)
    hits = dict.fromkeys(METHODS, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # integrated gradients' convergence notes
        for example in examples:
            exp = attnwidget.explain(model, tokenizer, example.text, methods=METHODS)
            for method in METHODS:
                scores = np.asarray(exp.scores[method], dtype=float).copy()
                scores[[0, -1]] = -np.inf  # [CLS] and [SEP] are not words
                hits[method] += int(np.argmax(scores) == example.subject_index)
    return {method: hit / COUNT for method, hit in hits.items()}


@pytest.fixture(scope="module")
def shares() -> dict[str, dict[str, float]]:
    return {name: top_word_is_subject(name) for name in ("sva-encoder", "sva-deceptive")}


def test_as_accurate_as_the_model_it_came_from() -> None:
    model, tokenizer = demo.load("sva-deceptive")
    held_out = grammar.generate(300, seed=3, split="test", attractors=True)
    # As test_demo's bound: shipped 100 % (demo-models page); 0.95 allows 15 of 300 errors, a
    # model truly at 99 % makes 3 ± 1.7.
    assert accuracy(model, tokenizer, held_out) >= 0.95


def test_raw_attention_hides_the_subject(shares: dict) -> None:
    # Measured (README, 500 sentences): 0.0 % and 52.2 %. On these 60, 0.05 allows 3
    # subject tops where the penalised model has none; 0.3 (18 of 60) sits 3.4 binomial
    # sd (√(60·0.52·0.48) ≈ 3.9 sentences) under sva-encoder's expected 31.
    assert shares["sva-deceptive"]["raw"] <= 0.05, shares
    assert shares["sva-encoder"]["raw"] >= 0.3, shares  # the penalty did this, not the task


@pytest.mark.parametrize(
    ("method", "least"), [("blank_out", 0.6), ("integrated_gradients", 0.6), ("lrp", 0.8)]
)
def test_methods_that_do_not_read_the_weights_still_find_it(
    shares: dict, method: str, least: float
) -> None:
    assert shares["sva-deceptive"][method] >= least, shares
