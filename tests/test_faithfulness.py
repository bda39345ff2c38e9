"""The shapes the papers predict, checked on the shipped demo models where they hold.

``bench/faithfulness.py`` (500 sentences, seed 0) gave, positive /
negative perturbation AUC of accuracy (lower / higher is better):

=============  ===========  ===========  ===========  ===========  =========
model          raw          rollout      lrp          chefer2021   random
=============  ===========  ===========  ===========  ===========  =========
sva-encoder    45.9 / 83.5  42.7 / 86.5  43.5 / 86.6  46.7 / 82.5  66 / 65
sva-causal     58.0 / 46.1  42.7 / 60.2  33.4 / 69.9  50.4 / 53.8  52 / 52
=============  ===========  ===========  ===========  ===========  =========

Asserted below (on 200 sentences, seed 0), each margin argued beside it from the
figures this sample gives and their spread over six other samples of 200
(``demo.sentences(200, seed=s)``, s = 1 … 6; gaps in AUC points as mean ± sd,
smallest in brackets), so that a retrain or another sample is unlikely to cross it:

* Abnar & Zuidema (2020): rollout is more faithful than raw attention (both
  models, both orders), and on the encoder it finds the subject far more often.
* Achtibat et al. (2024): AttnLRP is the most faithful of these methods on
  the causal LM (positive order), and clearly better than random on both.
* AttnLRP finds the subject of (almost) every encoder sentence.

* Chefer et al. (2021): chefer2021 (the paper's own LRP rules, all layers)
  is more faithful than raw attention on the causal LM.

Not asserted, because it does not hold here: Chefer et al.'s ordering
"theirs ≥ rollout ≥ raw". With the paper's relevance, chefer2021 is slightly
*less* faithful than raw attention on the encoder (46.7 / 82.5 against
45.9 / 83.5; with AttnLRP's relevance, ``relevance="attnlrp"``, it was
45.0 / 85.2), and below rollout on both models.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

demo = pytest.importorskip("attnwidget.demo")
faithfulness = pytest.importorskip("faithfulness")

pytestmark = pytest.mark.slow

N, SEED = 200, 0
METHODS = ["raw", "rollout", "lrp", "chefer2021"]


@pytest.fixture(scope="module")
def results():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # The text demo models (the shipped ViT has its own evaluation, bench/vision.py).
        return {
            name: faithfulness.evaluate(name, N, SEED, METHODS)
            for name in ("sva-encoder", "sva-causal")
        }
    finally:
        torch.set_num_threads(threads)


def auc(result, method: str, order: str) -> float:
    return result.auc(method, order, "accuracy")


@pytest.mark.parametrize("model", ["sva-encoder", "sva-causal"])
def test_rollout_is_more_faithful_than_raw_attention(results, model: str) -> None:
    r = results[model]
    # Rollout's lead over raw attention, positive / negative order: sva-encoder 3.3 / 2.5
    # here, 3.6 ± 1.0 (2.1) / 3.1 ± 0.8 (2.3) on the six; sva-causal 16.9 / 13.5 here,
    # 16.5 ± 1.6 (14.0) / 13.3 ± 2.8 (8.3). The encoder's lead is small: a margin of 1
    # keeps it 2.6 sd away (2, as on the causal LM, would be 1.6 / 1.4 sd); the causal
    # LM's 2 sits 4 sd or more under its lead.
    margin = 1 if model == "sva-encoder" else 2
    assert auc(r, "rollout", "positive") < auc(r, "raw", "positive") - margin
    assert auc(r, "rollout", "negative") > auc(r, "raw", "negative") + margin
    if model == "sva-encoder":
        # Subject top-1, rollout minus raw: 0.49 here, 0.51 ± 0.03 (0.47); 0.3 is 7 sd
        # under (raw finds the subject half the time, rollout always: 52 % / 100 % on 500).
        assert r.subject_rate["rollout"] > r.subject_rate["raw"] + 0.3


def test_lrp_finds_the_encoders_subject(results) -> None:
    # 200 of 200 here and in each of the six other samples (500 of 500 in the table).
    # 0.9 allows 20 misses; a method truly at 99 % misses 2 ± 1.4 (binomial sd), while
    # chance (a random one of the sentence's 5-21 word tokens) is 0.12 and raw attention
    # gets 0.51.
    assert results["sva-encoder"].subject_rate["lrp"] >= 0.9


@pytest.mark.parametrize("model", ["sva-encoder", "sva-causal"])
def test_lrp_beats_a_random_order(results, model: str) -> None:
    r = results[model]
    # LRP's lead over a random order, positive / negative: sva-encoder 23.1 / 21.5 here,
    # 21.0 ± 1.8 (18.6) / 20.4 ± 2.0 (18.0); sva-causal 18.7 / 18.6 here, 17.8 ± 1.7
    # (15.4) / 16.6 ± 1.7 (14.4). 10 is 4 sd or more under each.
    assert auc(r, "lrp", "positive") < auc(r, "random", "positive") - 10
    assert auc(r, "lrp", "negative") > auc(r, "random", "negative") + 10


def test_lrp_is_the_most_faithful_on_the_causal_lm(results) -> None:
    r = results["sva-causal"]
    # LRP's lead (positive order) over raw / rollout / chefer2021 / random: 24.5 / 7.5 /
    # 15.6 / 18.7 here; 24.5 ± 1.6 / 8.0 ± 2.2 (4.3) / 16.2 ± 2.1 / 17.8 ± 1.7 on the
    # six. Rollout is the closest: 3 would sit 2.3 sd under its lead, 2 sits 2.7 sd.
    for other in ("raw", "rollout", "chefer2021", "random"):
        assert auc(r, "lrp", "positive") < auc(r, other, "positive") - 2


def test_chefer2021_is_more_faithful_than_raw_attention_on_the_causal_lm(results) -> None:
    r = results["sva-causal"]
    # chefer2021's lead over raw, positive / negative: 8.9 / 7.9 here, 8.3 ± 2.9 (4.1) /
    # 7.4 ± 2.2 (4.0) on the six: 2.9 and 3.4 sd above 0. (On the encoder it is
    # -0.4 ± 0.8 / -0.5 ± 1.1, hence not asserted there.)
    assert auc(r, "chefer2021", "positive") < auc(r, "raw", "positive")
    assert auc(r, "chefer2021", "negative") > auc(r, "raw", "negative")
