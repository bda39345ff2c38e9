"""SaliencyView's widget model: traits, binary buffers, validation (no browser)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import traitlets
from ipywidgets.widgets.widget import _remove_buffers

from attnwidget.errors import UnknownMethodError
from attnwidget.results.explanation import Explanation
from attnwidget.views import BUNDLE, BundleMissingError, SaliencyView
from attnwidget.views.core import base as _base
from attnwidget.views.core.buffers import decode_float32, encode_float32

TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]"]


def attention(n: int, seed: int = 0) -> np.ndarray:
    weights = np.random.default_rng(seed).random((2, 3, n, n)).astype(np.float32)
    return weights / weights.sum(-1, keepdims=True)


@pytest.fixture()
def explanation() -> Explanation:
    return Explanation.from_attentions(attention(len(TOKENS)), TOKENS, methods=["raw", "rollout"])


def test_traits_describe_the_explanation(explanation: Explanation) -> None:
    view = SaliencyView(explanation)
    assert view._view == "saliency"
    assert view.tokens == TOKENS
    assert view.methods == ["raw", "rollout"]
    assert view.shape == [2, len(TOKENS)]
    assert view.signed == [False, False]  # attention-based scores are non-negative
    assert all(view.summaries)  # registered methods carry a summary
    assert view.query_index == 0
    assert view.selected_token == -1
    assert view.selection is None
    assert view.explanation is explanation
    assert isinstance(view.scores, bytes)


def test_scores_round_trip_through_the_buffer(explanation: Explanation) -> None:
    view = SaliencyView(explanation, methods=["rollout", "raw"])
    decoded = np.frombuffer(view.scores, dtype="<f4").reshape(view.shape)
    np.testing.assert_array_equal(decoded[0], explanation.scores["rollout"])
    np.testing.assert_array_equal(decoded[1], explanation.scores["raw"])
    np.testing.assert_array_equal(view.score_matrix(), decoded)


def test_scores_travel_as_a_binary_buffer_not_json(explanation: Explanation) -> None:
    view = SaliencyView(explanation)
    state, paths, buffers = _remove_buffers(view.get_state())
    assert sorted(paths) == [["pair_scores"], ["scores"]]  # no pair: an empty buffer
    sent = {path[0]: bytes(buffer) for path, buffer in zip(paths, buffers, strict=True)}
    assert sent["scores"] == view.scores and sent["pair_scores"] == b""
    assert len(sent["scores"]) == 4 * 2 * len(TOKENS)
    assert "scores" not in state
    json.dumps(state)  # the rest is plain JSON ...
    for value in state.values():  # ... with no lists of floats
        assert not (isinstance(value, list) and any(isinstance(x, float) for x in value))


def test_signed_methods_and_negative_scores_use_diverging_colours() -> None:
    n = len(TOKENS)
    scores = {
        "input_x_gradient": np.full(n, 0.5, np.float32),  # registered as signed
        "custom_positive": np.linspace(0, 1, n, dtype=np.float32),  # not registered
        "custom_negative": np.linspace(-1, 1, n, dtype=np.float32),  # not registered
    }
    view = SaliencyView(Explanation(tokens=TOKENS, attentions=attention(n), scores=scores))
    assert view.signed == [True, False, True]
    assert view.summaries[1] == "" and view.summaries[2] == ""


def test_methods_argument_selects_and_orders_rows(explanation: Explanation) -> None:
    assert SaliencyView(explanation, methods="rollout").methods == ["rollout"]
    assert SaliencyView(explanation, methods=("rollout", "raw")).methods == ["rollout", "raw"]


def test_unknown_method_names_what_exists(explanation: Explanation) -> None:
    with pytest.raises(UnknownMethodError, match=r"'nope'.*it has: 'raw', 'rollout'"):
        SaliencyView(explanation, methods=["raw", "nope"])
    # A registered method that was not computed: say how to compute it.
    with pytest.raises(UnknownMethodError, match=r"compute them with attnwidget\.explain"):
        SaliencyView(explanation, methods=["input_x_gradient"])
    with pytest.raises(KeyError):  # UnknownMethodError is a KeyError too
        SaliencyView(explanation, methods=["nope"])


def test_bad_methods_arguments(explanation: Explanation) -> None:
    with pytest.raises(ValueError, match="more than once"):
        SaliencyView(explanation, methods=["raw", "raw"])
    with pytest.raises(ValueError, match="methods is empty"):
        SaliencyView(explanation, methods=[])
    empty = Explanation(tokens=TOKENS, attentions=attention(len(TOKENS)))
    with pytest.raises(ValueError, match="holds no method scores"):
        SaliencyView(empty)
    with pytest.raises(TypeError, match=r"needs an attnwidget\.Explanation"):
        SaliencyView({"tokens": TOKENS})  # type: ignore[arg-type]


def test_scores_of_the_wrong_length_are_rejected() -> None:
    bad = Explanation(
        tokens=TOKENS, attentions=attention(len(TOKENS)), scores={"raw": np.zeros(3, np.float32)}
    )
    with pytest.raises(ValueError, match=r"shape \(3,\); expected \(5,\)"):
        SaliencyView(bad)


def test_selected_token_is_validated(explanation: Explanation) -> None:
    view = SaliencyView(explanation, selected_token=2)
    assert view.selected_token == 2
    assert view.selection == {
        "index": 2,
        "token": "cat",
        "scores": {m: float(explanation.scores[m][2]) for m in ("raw", "rollout")},
    }
    view.selected_token = len(TOKENS) - 1
    view.selected_token = -1
    for bad in (len(TOKENS), -2, 100):
        with pytest.raises(
            traitlets.TraitError, match=r"out of range: use -1 .* 0\.\.4 \(5 tokens\)"
        ):
            view.selected_token = bad
    assert view.selected_token == -1  # unchanged by the failed sets
    with pytest.raises(traitlets.TraitError):
        view.selected_token = "2"  # type: ignore[assignment]
    with pytest.raises(traitlets.TraitError, match="must be an int"):
        view.selected_token = True
    with pytest.raises(traitlets.TraitError, match="out of range"):
        SaliencyView(explanation, selected_token=9)


def test_selection_from_the_page_updates_python(explanation: Explanation) -> None:
    # What the front end's click sends: an update of selected_token.
    view = SaliencyView(explanation)
    view.set_state({"selected_token": 3})
    assert view.selected_token == 3


def test_a_refused_change_from_the_page_changes_nothing_and_resyncs_the_page(
    explanation: Explanation, caplog: pytest.LogCaptureFixture
) -> None:
    view = SaliencyView(explanation, selected_token=2)
    resent: list[Any] = []
    view.send_state = lambda key=None: resent.append(key)  # type: ignore[method-assign]
    view.set_state({"selected_token": 99})  # no exception escapes into the comm
    assert view.selected_token == 2
    assert resent == [["selected_token"]]  # the page gets Python's value back
    assert "refused" in caplog.text and "out of range" in caplog.text


def test_data_traits_are_read_only(explanation: Explanation) -> None:
    view = SaliencyView(explanation)
    with pytest.raises(traitlets.TraitError, match="read-only"):
        view.tokens = ["x"]


def test_set_explanation_replaces_the_data_and_keeps_a_valid_selection(
    explanation: Explanation,
) -> None:
    view = SaliencyView(explanation, selected_token=4)
    shorter = Explanation.from_attentions(attention(3, seed=1), ["a", "b", "c"], methods=["raw"])
    view.set_explanation(shorter)
    assert view.tokens == ["a", "b", "c"]
    assert view.shape == [1, 3]
    assert view.selected_token == -1  # 4 is out of range for 3 tokens
    view.selected_token = 1
    view.set_explanation(explanation)
    assert view.selected_token == 1


def test_encoder_decoder_query_is_not_marked_on_encoder_tokens() -> None:
    n = len(TOKENS)
    e = Explanation(
        tokens=TOKENS,
        attentions=attention(n),
        scores={"raw": np.ones(n, np.float32)},
        decoder_tokens=["<s>", "x"],
        query_index=1,
        kind="encoder-decoder",
    )
    assert SaliencyView(e).query_index == -1


def test_buffer_helpers_round_trip() -> None:
    array = np.arange(12, dtype=np.float64).reshape(3, 4) / 7
    data, shape = encode_float32(array)
    assert shape == [3, 4] and len(data) == 48
    np.testing.assert_array_equal(decode_float32(data, shape), array.astype(np.float32))
    np.testing.assert_array_equal(decode_float32(memoryview(data), (3, 4)), array.astype("f4"))
    with pytest.raises(ValueError, match="do not fill shape"):
        decode_float32(data, [5, 4])


def test_the_widget_loads_the_bundle_as_its_esm(explanation: Explanation) -> None:
    if not BUNDLE.is_file():
        pytest.skip("front-end bundle not built (npm --prefix js run build)")
    view = SaliencyView(explanation)
    assert view._esm == BUNDLE.read_text(encoding="utf-8")
    assert "as default" in view._esm  # an ES module with a default export


def test_missing_bundle_says_how_to_build_it(
    explanation: Explanation, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setattr(_base, "BUNDLE", tmp_path / "widget.js")
    monkeypatch.delattr(_base._AttnWidget, "_esm", raising=False)
    with pytest.raises(BundleMissingError, match=r"npm --prefix js run build") as info:
        SaliencyView(explanation)
    assert isinstance(info.value, FileNotFoundError)


def test_scale_defaults_to_words_and_is_validated(explanation: Explanation) -> None:
    view = SaliencyView(explanation)
    assert view.scale == "words"
    assert "scale" in view.keys  # synced with the page's picker
    view.set_state({"scale": "all"})  # what the page's picker sends
    assert view.scale == "all"
    for bad in ("word", "ALL", ""):
        with pytest.raises(
            traitlets.TraitError,
            match=r"scale='.*' is not a colour range; use one of 'words', 'all'",
        ):
            view.scale = bad
    assert view.scale == "all"  # unchanged by the failed sets
    with pytest.raises(traitlets.TraitError):
        view.scale = 1  # type: ignore[assignment]
    assert SaliencyView(explanation, scale="all").scale == "all"
    with pytest.raises(traitlets.TraitError, match="'everything' is not a colour range"):
        SaliencyView(explanation, scale="everything")
    assert "scale='words'" in repr(SaliencyView(explanation))


def test_flow_view_scale_is_validated_the_same_way(explanation: Explanation) -> None:
    from attnwidget.views import FlowView

    view = FlowView(explanation)
    assert view.scale == "words" and "scale" in view.keys
    view.scale = "all"
    with pytest.raises(traitlets.TraitError, match=r"FlowView\.scale='some' is not a colour range"):
        view.scale = "some"
    assert view.scale == "all"
    assert FlowView(explanation, scale="all").scale == "all"
