"""Explorer (Python side): re-explaining on text and target changes, errors kept in the widget."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from attnwidget import demo, explain
from attnwidget.errors import InputError
from attnwidget.views import Explorer, FlowView, SaliencyView


@functools.cache
def encoder() -> tuple[Any, Any]:
    return demo.load("sva-encoder")


@functools.cache
def causal() -> tuple[Any, Any]:
    return demo.load("sva-causal")


def test_text_change_reexplains_and_every_view_updates() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, "the keys to the cabinet")
    assert explorer.error == ""
    first = explorer.explanation
    assert first is not None and "keys" in first.tokens
    saliency, flow = explorer.views["saliency"], explorer.views["flow"]
    assert isinstance(saliency, SaliencyView) and isinstance(flow, FlowView)
    assert list(explorer.tabs.children)[: len(explorer.views)] == list(explorer.views.values())
    other = {
        name: view for name, view in explorer.views.items() if name not in ("saliency", "flow")
    }

    explorer.text_box.value = "the key near the old doors"  # as if typed + Enter
    second = explorer.explanation
    assert second is not None and second is not first and "doors" in second.tokens
    # The same widgets show the new explanation (no new comm for these two).
    assert explorer.views["saliency"] is saliency and explorer.views["flow"] is flow
    assert saliency.tokens == second.tokens == flow.tokens
    for name in other:  # views without set_explanation are rebuilt with the new tokens
        assert explorer.views[name].tokens == second.tokens
    assert np.allclose(
        saliency.score_matrix()[saliency.methods.index("rollout")], second.scores["rollout"]
    )
    assert "Explaining target" in explorer.status.value


def test_bad_input_is_shown_and_the_views_stay() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, "the dog near the houses")
    good = explorer.explanation
    flow = explorer.views["flow"]
    explorer.text = ""
    assert "empty" in explorer.error and explorer.status.value.startswith("Error:")
    assert explorer.status.style.text_color
    assert explorer.explanation is good and flow.tokens == good.tokens
    explorer.text = "the " * 100  # longer than the model accepts
    assert "at most" in explorer.error and explorer.explanation is good
    explorer.text = "the dogs"
    assert explorer.error == "" and explorer.explanation.tokens[1:3] == ["the", "dogs"]
    assert not explorer.status.style.text_color


def test_empty_explorer_waits_for_text() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer)
    assert explorer.explanation is None and explorer.views == {}
    assert "Type a text" in explorer.status.value
    explorer.text = "the keys"
    assert explorer.explanation is not None and set(explorer.views) >= {"saliency", "flow"}


def test_targets_and_method_picker() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, "the keys to the cabinet")
    labels = [label for label, _ in explorer.target_picker.options]
    assert labels == ["predicted", "singular", "plural"]
    predicted = explorer.explanation.target
    other = "singular" if predicted == "plural" else "plural"
    explorer.target_picker.value = other
    assert explorer.explanation.target == other and explorer.target == other
    explorer.target = None
    assert explorer.explanation.target == predicted

    flow = explorer.views["flow"]
    values = [value for _, value in explorer.method_picker.options]
    # The flow view's methods, then the path methods computed when picked.
    assert values[: len(flow.methods)] == list(flow.methods)
    assert {"lrp", "chefer2021"} <= set(values) - set(flow.methods)
    explorer.method_picker.value = "flow"
    assert flow.selected_method == "flow"
    flow.selected_method = "raw"
    assert explorer.method_picker.value == "raw"
    # The flow method survives a text change.
    explorer.text = "the key to the cabinets"
    assert flow.selected_method == "raw"

    # A token chosen in the saliency view shows where it goes in the flow view.
    explorer.views["saliency"].selected_token = 2
    assert (flow.selected_layer, flow.selected_token) == (0, 2)
    flow.select(0, 3)
    assert explorer.views["saliency"].selected_token == 3


def test_flow_method_names_the_flow_views_start_and_method_still_works() -> None:
    """``flow_method`` beside ``methods``; the old ``method=`` warns and gives the same."""
    model, tokenizer = encoder()
    new = Explorer(model, tokenizer, "the keys to the cabinet", flow_method="raw")
    assert new.views["flow"].selected_method == "raw" and new.method_picker.value == "raw"
    warned = "method= is deprecated.*use flow_method="
    with pytest.warns(DeprecationWarning, match=warned) as record:
        old = Explorer(model, tokenizer, "the keys to the cabinet", method="raw")
    assert [w.filename for w in record if w.category is DeprecationWarning] == [__file__]
    assert old.views["flow"].selected_method == "raw" and old.method_picker.value == "raw"
    assert old.method_picker.options == new.method_picker.options
    with pytest.raises(TypeError, match=r"give flow_method= only \(method= is its deprecated"):
        Explorer(model, tokenizer, "the keys", flow_method="raw", method="raw")
    assert Explorer(model, tokenizer, "the keys").views["flow"].selected_method == "rollout"


def test_language_model_targets_are_likely_tokens() -> None:
    model, tokenizer = causal()
    explorer = Explorer(model, tokenizer, "the keys to the cabinet")
    options = explorer.target_picker.options
    assert options[0][0] == "predicted" and len(options) == 1 + 5
    token_id = options[2][1]  # the runner-up token
    explorer.target_picker.value = token_id
    assert explorer.explanation.target_id == token_id
    assert explorer.target == token_id


def test_unknown_target_is_reported() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, "the keys", target="sideways")
    assert explorer.explanation is None and "sideways" in explorer.error


def test_explorer_offers_the_lrp_methods_where_supported() -> None:
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, "the keys to the cabinet")
    explorer.wait()  # the engines' checks run after the first drawing
    assert {"lrp", "chefer2021"} <= set(explorer.methods)
    assert not {"lrp", "chefer2021"} & set(explorer.explanation.scores)  # not yet computed
    explorer.compute("lrp", "chefer2021")
    assert {"lrp", "chefer2021"} <= set(explorer.explanation.scores)
    assert {"lrp", "chefer2021"} <= set(explorer.views["flow"].methods)


# -- length: the advice in the error works, and the limit is a parameter --------------


def _long_text(words: int) -> str:
    base = "the keys to the old cabinet near the doors are on the table".split()
    return " ".join(base[i % len(base)] for i in range(words))


def test_too_long_text_advice_works_truncation_is_accepted() -> None:
    model, tokenizer = encoder()
    text = _long_text(80)  # 82 tokens with [CLS] and [SEP]; the model takes 64
    strict = Explorer(model, tokenizer, text, methods=["rollout"])
    assert strict.explanation is None and strict.max_length == 64 and not strict.truncation
    assert "82 tokens long" in strict.error and "at most 64" in strict.error
    assert "truncation=True" in strict.error
    # Following the advice: the first 64 tokens are explained, and the status says so.
    cut = Explorer(model, tokenizer, text, methods=["rollout"], truncation=True)
    assert cut.error == "" and cut.explanation is not None
    reference = explain(model, tokenizer, text, methods=["rollout"], truncation=True)
    assert cut.explanation.tokens == reference.tokens and len(reference.tokens) == 64
    np.testing.assert_allclose(cut.explanation.scores["rollout"], reference.scores["rollout"])
    assert "82 tokens long: only its first 64 are explained" in cut.status.value


def test_max_length_is_a_parameter() -> None:
    model, tokenizer = encoder()
    text = _long_text(20)  # 22 tokens
    explorer = Explorer(model, tokenizer, text, methods=["rollout"], max_length=12)
    assert explorer.max_length == 12 and explorer.explanation is None
    assert "22 tokens long" in explorer.error and "max_length=12" in explorer.error
    assert "raise max_length" in explorer.error
    explorer.text = _long_text(8)  # fits: explained as usual
    assert explorer.error == "" and len(explorer.explanation.tokens) == 10
    shown = explorer.explanation

    cut = Explorer(model, tokenizer, text, methods=["rollout"], max_length=12, truncation=True)
    expected = tokenizer.convert_ids_to_tokens(
        tokenizer(text, truncation=True, max_length=12)["input_ids"]
    )
    assert cut.explanation.tokens == expected and len(expected) == 12
    assert "first 12 are explained" in cut.status.value
    # A longer limit than the model's is refused; so is a limit that is no count.
    with pytest.raises(ValueError, match=r"max_length=65 is more than the model accepts \(64"):
        Explorer(model, tokenizer, "the keys", max_length=65)
    for bad in (0, -3, 2.5, "12", True):
        with pytest.raises(ValueError, match="must be a positive number of tokens"):
            Explorer(model, tokenizer, "the keys", max_length=bad)
    with pytest.raises(TypeError, match="truncation='yes' must be True or False"):
        Explorer(model, tokenizer, "the keys", truncation="yes")
    assert explorer.explanation is shown  # nothing above touched the first Explorer


def test_max_length_cut_keeps_the_words_of_a_subword_text() -> None:
    """On a WordPiece tokenizer the cut ends at a token boundary: the model sees
    exactly the first max_length tokens of the full text."""
    from tiny_models import build

    model, tokenizer = build("bert-cls")
    text = "unbelievably interesting keys to the cabinets " * 6
    explorer = Explorer(model, tokenizer, text, methods=["rollout"], max_length=16, truncation=True)
    ids = tokenizer(text, truncation=True, max_length=16)["input_ids"]
    assert explorer.explanation.input_ids.tolist() == ids


# -- the relevance methods are offered by structure; target labels of padded ids ------


def test_a_renamed_copy_of_a_supported_model_gets_the_relevance_methods() -> None:
    """A BERT rebuilt under other class names and a new model_type (no list knows it)."""
    from test_chefer2021_reference import randomise
    from test_chefer2021_structure import renamed
    from tiny_models import build

    model, tokenizer = build("bert-cls")
    randomise(model, seed=13)
    copy = renamed(model)
    assert copy.config.model_type == "tiny-renamed"
    explorer = Explorer(copy, tokenizer, "the keys to the cabinet")
    assert explorer.error == ""
    explorer.wait()
    assert {"lrp", "chefer2021"} <= set(explorer.methods)
    explorer.compute("lrp", "chefer2021")
    assert {"lrp", "chefer2021"} <= set(explorer.explanation.scores)
    assert {"lrp", "chefer2021"} <= set(explorer.views["flow"].methods)


@pytest.mark.parametrize("family", ["mixtral-lm", "opt-lm"])
def test_chefer2021_is_not_offered_where_the_paper_rules_refuse_the_model(family: str) -> None:
    """Mixtral's router (refused before a pass) and OPT's residual stream (refused by the
    path check after the forward): lrp only, and the Explorer explains without an error."""
    from tiny_models import build

    from attnwidget.errors import ModelNotSupportedError

    model, tokenizer = build(family)
    with pytest.raises(ModelNotSupportedError, match=r"Chefer, Gur & Wolf"):
        explain(model, tokenizer, "the keys to the", methods=["chefer2021"])
    explorer = Explorer(model, tokenizer, "the keys to the")
    assert explorer.error == "" and explorer.explanation is not None
    explorer.wait()
    assert "lrp" in explorer.methods and "chefer2021" not in explorer.methods
    assert "chefer2021" not in [b.description for b in explorer.method_buttons.children]
    assert "Not offered" in explorer.progress and "chefer2021" in explorer.progress
    with pytest.raises(InputError, match=r"'chefer2021' is not offered.*Chefer, Gur & Wolf"):
        explorer.compute("chefer2021")
    explorer.compute("lrp")
    assert "lrp" in explorer.explanation.scores


def test_padded_vocabulary_ids_get_a_readable_target_label() -> None:
    """GPT-NeoX's embedding rows past the tokenizer: an id the model predicts but
    convert_ids_to_tokens has no text for is labelled <id N>, not None."""
    import torch
    from tiny_models import build

    model, tokenizer = build("gpt-neox-lm")
    text = "the keys to the"
    padded = len(tokenizer) + 3  # a row of the padded embedding matrix
    assert tokenizer.convert_ids_to_tokens(padded) is None
    with torch.no_grad():
        logits = model(**tokenizer(text, return_tensors="pt")).logits[0, -1]
        best = int(logits.argmax())
        assert logits[best] > 0
        head = model.get_output_embeddings().weight
        head[padded] = 2 * head[best]  # now the most probable id
    explorer = Explorer(model, tokenizer, text, methods=["rollout"])
    labels = {value: label for label, value in explorer.target_picker.options}
    assert labels[padded].startswith(f"<id {padded}> (p = ")
    assert not any(label.startswith("None") for label in labels.values())


def test_a_text_past_the_views_limits_shows_matrix_views_and_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The limits lowered to a few tokens stand for 512 / 1,024 on a long-context model.
    import importlib

    from attnwidget.views import AttentionMatrixView, HeadView, ModelView

    # (attnwidget.views.head_view is also a function's name: import the modules.)
    head_view = importlib.import_module("attnwidget.views.attention.head_view")
    model_view = importlib.import_module("attnwidget.views.attention.model_view")
    flow_view = importlib.import_module("attnwidget.views.flow.flow_view")
    monkeypatch.setattr(head_view, "HEAD_VIEW_TOKENS", 6)
    monkeypatch.setattr(model_view, "MODEL_VIEW_TOKENS", 6)
    monkeypatch.setattr(flow_view, "MAX_TOKENS", 6)
    model, tokenizer = encoder()
    explorer = Explorer(model, tokenizer, "the keys")
    assert isinstance(explorer.views["flow"], FlowView)
    assert isinstance(explorer.views["head"], HeadView)
    assert not explorer.method_picker.disabled

    explorer.text_box.value = "the keys to the old cabinet near the doors"
    long = explorer.explanation
    assert long is not None and len(long.tokens) > 6 and explorer.error == ""
    for name in ("flow", "head", "model"):
        view = explorer.views[name]
        assert isinstance(view, AttentionMatrixView), name
        assert view.tokens == long.tokens
    assert explorer.views["saliency"].tokens == long.tokens
    assert explorer.method_picker.disabled  # a matrix view has no path methods
    assert list(explorer.tabs.children)[: len(explorer.views)] == list(explorer.views.values())
    # A click in the saliency view is not forwarded to a view without paths.
    explorer.views["saliency"].selected_token = 2

    explorer.text_box.value = "the keys"
    assert isinstance(explorer.views["flow"], FlowView)
    assert isinstance(explorer.views["head"], HeadView)
    assert isinstance(explorer.views["model"], ModelView)
    assert not explorer.method_picker.disabled
    assert explorer.method_picker.value == explorer.views["flow"].selected_method
