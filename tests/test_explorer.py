"""Explorer (Python side): re-explaining on text and target changes, errors kept in the widget."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from attnwidget import demo
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
    assert list(explorer.tabs.children) == list(explorer.views.values())
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
    assert list(explorer.method_picker.options) == list(flow.methods)
    explorer.method_picker.value = "flow"
    assert flow.method == "flow"
    flow.method = "raw"
    assert explorer.method_picker.value == "raw"
    # The flow method survives a text change.
    explorer.text = "the key to the cabinets"
    assert flow.method == "raw"

    # A token chosen in the saliency view shows where it goes in the flow view.
    explorer.views["saliency"].selected_token = 2
    assert (flow.selected_layer, flow.selected_token) == (0, 2)
    flow.select(0, 3)
    assert explorer.views["saliency"].selected_token == 3


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
    from attnwidget import demo

    model, tokenizer = demo.load("sva-encoder")
    explorer = Explorer(model, tokenizer, "the keys to the cabinet")
    assert {"lrp", "chefer2021"} <= set(explorer.explanation.scores)
    assert {"lrp", "chefer2021"} <= set(explorer.views["flow"].methods)
