"""GenerationView's Python side: traits from real generations, word groups, and
each step used in the existing views."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets
from tiny_models import build

import attnwidget
from attnwidget.views import FlowView, GenerationView, HeadView, SaliencyView
from attnwidget.views.core.buffers import decode_float32
from attnwidget.views.generation.generation_view import word_groups


def test_word_groups_follow_each_tokenizer_style() -> None:
    # Byte-level BPE: "Ġ" starts a word; special tokens are words of their own.
    raw = ["<s>", "the", "Ġc", "ab", "inet", "Ġis", "</s>", "x"]
    special = [True, False, False, False, False, False, True, False]
    assert word_groups(raw, special) == [0, 1, 2, 2, 2, 3, 4, 5]
    # SentencePiece: "▁".
    assert word_groups(["▁the", "▁ke", "ys"], [False] * 3) == [0, 1, 1]
    # WordPiece: "##" continues a word.
    assert word_groups(["[CLS]", "ke", "##ys", "are"], [True, False, False, False]) == [0, 1, 1, 2]
    # Word-level vocabularies: one word per token.
    assert word_groups(["[BOS]", "the", "keys"], [True, False, False]) == [0, 1, 2]


@pytest.mark.parametrize("family", ["gpt2-lm", "t5"])
def test_traits_carry_the_generation(family: str) -> None:
    model, tok = build(family)
    gexp = attnwidget.explain_generation(
        model.eval(), tok, "the keys to the", generated=" cabinet are"
    )
    view = GenerationView(gexp, selected_method="rollout", selected_step=1, aggregate="words")
    m, t, n = len(gexp.methods), len(gexp), len(gexp.tokens)
    assert view.shape == [m, t, n] and view.methods == gexp.methods
    scores = decode_float32(view.scores, view.shape)
    for i, name in enumerate(gexp.methods):
        np.testing.assert_array_equal(scores[i], gexp.scores[name])  # NaN where unseen
    assert view.columns == gexp.tokens and view.generated_tokens == gexp.generated_tokens
    assert view.prompt_length == len(gexp.prompt_tokens)
    assert view.signed == [attnwidget.get_method(name).signed for name in gexp.methods]
    assert (view.selected_method, view.selected_step, view.aggregate) == ("rollout", 1, "words")
    assert len(view.words) == n and view.words == sorted(view.words)
    assert "".join(view.word_labels) == "".join(gexp.tokens)
    if family == "t5":  # every step sees the whole source
        assert view.prefix_lengths == [n] * t and not np.isnan(scores).any()
        assert len(view.word_labels) < n  # " cabinet"-style pieces joined
    else:
        assert view.prefix_lengths == [len(gexp.prompt_tokens) + s for s in range(t)]


@pytest.mark.parametrize("family", ["gpt2-lm", "bart"])
def test_each_step_draws_in_the_existing_views(family: str) -> None:
    model, tok = build(family)
    gexp = attnwidget.explain_generation(model.eval(), tok, "the keys to the", generated=" is")
    step = gexp.step(-1)
    assert isinstance(step, attnwidget.Explanation)
    saliency = SaliencyView(step)
    assert saliency.tokens == step.tokens and saliency.methods == gexp.methods
    scores = decode_float32(saliency.scores, saliency.shape)
    np.testing.assert_allclose(scores[0], gexp.scores[gexp.methods[0]][-1][: len(step.tokens)])
    HeadView(step)
    FlowView(step, selected_method="rollout")


def test_selected_method_is_the_name_and_method_still_works_with_a_warning() -> None:
    """The method shown is ``selected_method``; ``method=`` and ``view.method`` warn."""
    model, tok = build("gpt2-lm")
    gexp = attnwidget.explain_generation(model.eval(), tok, "the keys", generated=" are")
    new = GenerationView(gexp, selected_method="rollout")
    with pytest.warns(DeprecationWarning, match="method= is deprecated.*use selected_method=") as w:
        old = GenerationView(gexp, method="rollout")
    assert [r.filename for r in w if r.category is DeprecationWarning] == [__file__]
    assert old.selected_method == new.selected_method == "rollout"
    assert old.get_state(["selected_method"]) == {"selected_method": "rollout"}
    with pytest.warns(DeprecationWarning, match=r"\.method is deprecated.*use \.selected_method"):
        assert old.method == "rollout"
    with pytest.warns(DeprecationWarning, match=r"\.method is deprecated"):
        old.method = "raw"
    assert old.selected_method == "raw"
    with pytest.raises(traitlets.TraitError, match=r"selected_method='nope' is not in"):
        old.selected_method = "nope"
    with pytest.raises(TypeError, match=r"give selected_method= only"):
        GenerationView(gexp, selected_method="raw", method="raw")
    assert "method" not in GenerationView.class_trait_names(sync=True)
