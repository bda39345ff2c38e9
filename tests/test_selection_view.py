"""One meaning of a selection in every view (attnwidget/views/core/selection.py).

-1 is "nothing selected" everywhere, and ``head`` is the selected head:
HeadView keeps it in step with the set of heads it shows, NeuronView (which
always shows one head) refuses -1 with a message saying why.
"""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from attnwidget import Explanation, HeadView, ModelView, NeuronView
from attnwidget.demo import load
from attnwidget.views.core.selection import NONE


def _explanation(layers: int = 2, heads: int = 3, n: int = 6) -> Explanation:
    rng = np.random.default_rng(4)
    weights = rng.random((layers, heads, n, n)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    return Explanation.from_attentions(weights, [f"t{i}" for i in range(n)])


def test_head_view_head_is_the_one_head_shown_alone() -> None:
    view = HeadView(_explanation())
    assert view.heads == [0, 1, 2] and view.head == NONE
    view.head = 1
    assert view.heads == [1]
    view.heads = [0, 2]
    assert view.head == NONE
    view.heads = [2]
    assert view.head == 2
    view.head = NONE
    assert view.heads == [0, 1, 2]
    with pytest.raises(traitlets.TraitError, match=r"head=7 is not a head id.*-1 shows every"):
        view.head = 7
    assert HeadView(_explanation(), head=2).heads == [2]
    with pytest.raises(TypeError, match="give heads= or head="):
        HeadView(_explanation(), head=2, heads=[1])


def test_model_view_head_and_layer_start_at_none() -> None:
    view = ModelView(_explanation())
    assert (view.layer, view.head, view.selected_token) == (NONE, NONE, NONE)


def test_neuron_view_refuses_nothing_selected_and_says_why() -> None:
    model, tokenizer = load("sva-encoder")
    view = NeuronView(model, tokenizer, "the keys to the cabinet")
    for name in ("head", "selected_token"):
        with pytest.raises(traitlets.TraitError, match=f"{name}=-1: NeuronView always shows one"):
            setattr(view, name, NONE)
