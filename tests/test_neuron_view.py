"""NeuronView's Python side: traits as float32 bytes + shape, one layer at a time,
range checks, the selection, and refused page changes (no browser)."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets
from tiny_models import build

from attnwidget.errors import InputError
from attnwidget.views import NeuronView

TEXT = "the cat sat on the mat"


def floats(data: bytes, shape: list[int]) -> np.ndarray:
    return np.frombuffer(data, "<f4").reshape(shape)


@pytest.fixture(scope="module")
def llama():
    return build("llama-lm")


def test_traits_hold_one_layer_as_float32_bytes(llama) -> None:
    model, tokenizer = llama
    view = NeuronView(model, tokenizer, TEXT, layer=-1, head=-1, selected_token=-1)
    c = view.captured
    n = len(view.tokens)
    assert (view.layer, view.head, view.selected_token) == (1, 3, n - 1)
    assert view.shape == [4, n, 8] and view.rotary and view.causal and view.num_kv_heads == 2
    assert view.data_layer == 1
    np.testing.assert_array_equal(floats(view.q, view.shape), c.q[1])
    np.testing.assert_array_equal(floats(view.k_rotated, view.shape), c.k_rotated[1])
    np.testing.assert_array_equal(floats(view.weights, [4, n, n]), c.weights(1))
    view.layer = 0  # Python replaces the arrays with layer 0's
    assert view.data_layer == 0
    np.testing.assert_array_equal(floats(view.q_rotated, view.shape), c.q_rotated[0])
    np.testing.assert_array_equal(floats(view.scores, [4, n, n]), c.scores(0))


def test_selection_is_what_the_page_draws(llama) -> None:
    model, tokenizer = llama
    view = NeuronView(model, tokenizer, TEXT, layer=1, head=2, selected_token=3)
    sel = view.selection
    c = view.captured
    np.testing.assert_allclose(sel["products"].sum(-1) * c.scale[1], sel["scores"], rtol=1e-5)
    assert sel["mask"].tolist() == [j <= 3 for j in range(len(view.tokens))]
    assert sel["weights"][~sel["mask"]].tolist() == [0.0] * int((~sel["mask"]).sum())
    assert abs(float(sel["weights"].sum()) - 1) < 1e-6
    assert not np.allclose(sel["q"], sel["q_rotated"])


def test_no_rotation_sends_no_rotated_arrays() -> None:
    model, tokenizer = build("bert-cls")
    view = NeuronView(model, tokenizer, TEXT)
    assert not view.rotary and not view.causal
    assert view.q_rotated == b"" and view.k_rotated == b""
    assert view.selection["mask"].all()


def test_bad_layer_head_token_and_keywords_are_refused(llama) -> None:
    model, tokenizer = llama
    for kwargs, word in (({"layer": 2}, "layer=2"), ({"head": -5}, "head=-5")):
        with pytest.raises(InputError, match=word):
            NeuronView(model, tokenizer, TEXT, **kwargs)
    with pytest.raises(InputError, match="selected_token=99 is out of range"):
        NeuronView(model, tokenizer, TEXT, selected_token=99)
    with pytest.raises(InputError, match="must be an int"):
        NeuronView(model, tokenizer, TEXT, head=1.5)
    with pytest.raises(TypeError, match="did you mean 'selected_token'"):
        NeuronView(model, tokenizer, TEXT, selected_tokn=1)
    view = NeuronView(model, tokenizer, TEXT)
    with pytest.raises(traitlets.TraitError, match="head=4 is out of range"):
        view.head = 4
    view.set_state({"layer": 7})  # from the page: refused, nothing changes
    assert view.layer == 0 and view.data_layer == 0


def test_tokens_are_shown_as_in_every_view_and_keep_their_raw_form() -> None:
    """NeuronView shows WordPiece pieces without ``##`` (as explain() does) and
    sends the tokenizer's strings as raw_tokens (the page's tooltips)."""
    import attnwidget

    model, tokenizer = build("bert-cls")
    text = "the cabinets are playing"
    view = NeuronView(model, tokenizer, text)
    exp = attnwidget.explain(model, tokenizer, text, methods=["raw"])
    assert view.tokens == list(exp.tokens)
    assert view.raw_tokens == list(exp.raw_tokens or [])
    assert "##in" in view.raw_tokens and not any(t.startswith("##") for t in view.tokens)
    assert view.selection["text"] == view.tokens[view.selected_token]
