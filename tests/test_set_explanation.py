"""``set_explanation`` on HeadView and ModelView (no browser).

The contract (shared with SaliencyView): the view shows the new explanation,
the pinned token is reset, navigation (matrix, layer, heads, enlarged head,
pair filter) is kept where the new explanation has it, the page is told to
drop the attention it loaded, and a bad explanation raises before anything
changes.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest
from ipywidgets.widgets.widget import _remove_buffers

from attnwidget.errors import AttentionShapeError, NonFiniteError
from attnwidget.results.explanation import Explanation
from attnwidget.views import HeadView, ModelView
from attnwidget.views.attention._shared import WIRE_ATOL, WIRE_RTOL, _put_chunk, decode_float16

TOKENS = ["[CLS]", "the", "cat", "[SEP]", "it", "sat", "[SEP]"]


def attention(layers: int, heads: int, rows: int, cols: int | None = None, seed: int = 0):
    rng = np.random.default_rng(seed)
    weights = rng.random((layers, heads, rows, cols or rows), dtype=np.float32)
    return weights / weights.sum(-1, keepdims=True)


def words(n: int, prefix: str = "w") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def seq2seq() -> Explanation:
    causal = np.tril(attention(2, 4, 4, seed=1))
    return Explanation(
        tokens=["Hello", "world", "</s>"],
        attentions=attention(2, 4, 3),
        decoder_tokens=["<pad>", "Hallo", "Welt", "</s>"],
        decoder_attentions=causal / causal.sum(-1, keepdims=True),
        cross_attentions=attention(2, 4, 4, 3, seed=2),
        kind="encoder-decoder",
    )


def snapshot(view: Any) -> str:
    """Everything the page would get, as comparable text (buffers as hex)."""
    state, paths, buffers = _remove_buffers(view.get_state())
    state.pop("_esm", None)
    blobs = {json.dumps(p): bytes(b).hex() for p, b in zip(paths, buffers, strict=True)}
    return json.dumps([state, blobs], sort_keys=True, default=str)


def page_attention(view: Any, key: str | None = None) -> np.ndarray:
    """The matrix as the page can assemble it: preload + replies to requests of every layer
    (what the kernel would send now); NaN where nothing came."""
    m = view.attention.matrix(key or view.matrix)
    out = np.full(m.shape, np.nan, dtype=np.float32)
    data = view.preload
    for c in view.preload_index:
        if c["matrix"] == m.key:
            _put_chunk(out, c, data[c["offset"] : c["offset"] + c["nbytes"]])
    sent: list[tuple[dict[str, Any], list[Any]]] = []
    view.send = lambda content, buffers=None: sent.append((content, list(buffers or [])))
    for layer in range(m.shape[0]):
        view._on_message(view, {"type": "request", "matrix": m.key, "layer": layer}, [])
    for content, buffers in sent:
        assert content["type"] == "attention", content
        _put_chunk(out, content, bytes(buffers[0]))
    return out


class SentStates:
    """Records the state updates a view sends to the page (one per hold_sync)."""

    def __init__(self, view: Any) -> None:
        self.keys: list[set[str]] = []
        original = view.send_state

        def send_state(key: Any = None) -> None:
            self.keys.append(set([key] if isinstance(key, str) else (key or view.keys)))
            original(key)

        view.send_state = send_state


# -- HeadView ---------------------------------------------------------------------------


def test_head_view_shows_the_new_explanation_and_resets_the_pinned_token() -> None:
    old = Explanation(tokens=TOKENS, attentions=attention(2, 3, 7))
    new = Explanation(tokens=words(5), attentions=attention(2, 3, 5, seed=7))
    view = HeadView(old, layer=1, heads=[0, 2], selected_token=4)
    sent = SentStates(view)
    view.set_explanation(new)
    assert view.explanation is new
    assert view.tokens == words(5)
    assert view.matrices[0]["shape"] == [2, 3, 5, 5]
    assert view.selected_token == -1 and view.selection is None
    assert (view.layer, view.heads) == (1, [0, 2])  # navigation kept: still valid
    np.testing.assert_allclose(page_attention(view), new.attentions, rtol=WIRE_RTOL, atol=WIRE_ATOL)
    # One update for the page, which also says that its loaded attention is stale.
    assert len(sent.keys) == 1
    assert {"tokens", "preload", "preload_index", "selected_token", "_generation"} <= sent.keys[0]
    assert view._generation == 1


def test_head_view_resets_what_the_new_explanation_lacks() -> None:
    old = Explanation(tokens=TOKENS, attentions=attention(4, 6, 7), sentence_b_start=4)
    view = HeadView(old, layer=3, heads=[4, 5], pair_filter="B->A")
    view.set_explanation(Explanation(tokens=words(3), attentions=attention(2, 2, 3)))
    assert (view.layer, view.heads, view.pair_filter) == (0, [0, 1], "all")
    # A sentence pair keeps the pair filter.
    view.pair_filter = "all"
    view.set_explanation(old)
    view.pair_filter = "A->B"
    view.set_explanation(
        Explanation(tokens=words(7), attentions=attention(4, 6, 7), sentence_b_start=2)
    )
    assert view.pair_filter == "A->B" and view.sentence_b_start == 2


def test_head_view_switches_to_an_encoder_decoder_and_back() -> None:
    view = HeadView(Explanation(tokens=TOKENS, attentions=attention(2, 4, 7)), selected_token=2)
    explanation = seq2seq()
    view.set_explanation(explanation)
    assert view.matrix == "encoder" and [m["key"] for m in view.matrices] == [
        "encoder",
        "decoder",
        "cross",
    ]
    assert view.decoder_tokens == explanation.decoder_tokens
    view.matrix = "cross"
    np.testing.assert_allclose(
        page_attention(view), explanation.cross_attentions, rtol=WIRE_RTOL, atol=WIRE_ATOL
    )
    view.set_explanation(Explanation(tokens=TOKENS, attentions=attention(2, 4, 7)))
    assert view.matrix == "self" and view.decoder_tokens == []


def test_large_inputs_serve_the_new_attention_on_request() -> None:
    """Over the preload limit only the shown layer is sent; later requests must get the
    new explanation's weights, never the old ones."""
    n = 200
    old = Explanation(tokens=words(n), attentions=attention(12, 12, n))
    new = Explanation(tokens=words(n, "v"), attentions=attention(12, 12, n, seed=3))
    view = HeadView(old, layer=5)
    view.set_explanation(new)
    assert {c["layer"] for c in view.preload_index} == {5}
    got = page_attention(view)
    np.testing.assert_allclose(got, new.attentions, rtol=WIRE_RTOL, atol=WIRE_ATOL)
    assert not np.allclose(got, old.attentions, atol=1e-3)


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ("not an explanation", TypeError),
        ("nan", NonFiniteError),
        ("shape", AttentionShapeError),
    ],
)
@pytest.mark.parametrize("cls", [HeadView, ModelView])
def test_a_bad_explanation_leaves_the_view_unchanged(cls: type, bad: str, error: type) -> None:
    explanation = Explanation(tokens=TOKENS, attentions=attention(2, 3, 7), sentence_b_start=4)
    view = cls(explanation, layer=1)
    if cls is HeadView:
        view.selected_token = 3
        view.pair_filter = "B->A"
    before = snapshot(view)
    if bad == "not an explanation":
        candidate: Any = explanation.attentions
    else:
        candidate = Explanation(tokens=words(5), attentions=attention(2, 3, 5))
        if bad == "nan":
            candidate.attentions[1, 2, 3, 4] = np.nan
        else:  # broken after construction: the view must check it again
            candidate.attentions = attention(2, 3, 6)
    with pytest.raises(error):
        view.set_explanation(candidate)
    assert snapshot(view) == before
    assert view.explanation is explanation


# -- ModelView --------------------------------------------------------------------------


def test_model_view_keeps_the_enlarged_head_and_redraws_the_thumbnails() -> None:
    old = Explanation(tokens=TOKENS, attentions=attention(2, 3, 7))
    new = Explanation(tokens=words(9), attentions=attention(2, 3, 9, seed=5))
    view = ModelView(old, layer=1, head=2)
    view.set_explanation(new)
    assert view.explanation is new and view.tokens == words(9)
    assert (view.layer, view.head) == (1, 2)
    np.testing.assert_array_equal(view.selected_attention, new.attentions[1, 2])
    (index,) = view.thumb_index
    thumbs = decode_float16(view.thumbs[index["offset"] : index["offset"] + index["nbytes"]],
                            (2, 3, 9, 9))  # fmt: skip
    np.testing.assert_allclose(thumbs, new.attentions, rtol=WIRE_RTOL, atol=WIRE_ATOL)
    assert view._generation == 1
    # A head the new explanation lacks closes the enlarged view.
    view.set_explanation(Explanation(tokens=words(4), attentions=attention(2, 2, 4)))
    assert (view.layer, view.head) == (-1, -1) and view.selected_attention is None


def test_model_view_preloads_the_enlarged_head_of_a_large_new_explanation() -> None:
    n = 200
    view = ModelView(Explanation(tokens=words(n), attentions=attention(12, 12, n)))
    assert not view.preload_index  # closed and large: nothing but thumbnails
    new = Explanation(tokens=words(n, "v"), attentions=attention(12, 12, n, seed=4))
    view.select(3, 7)
    view.set_explanation(new)
    chunks = [(c["layer"], tuple(c["heads"])) for c in view.preload_index]
    assert chunks == [(3, (7, 8))]
    c = view.preload_index[0]
    got = decode_float16(view.preload[c["offset"] : c["offset"] + c["nbytes"]], (1, n, n))
    np.testing.assert_allclose(got[0], new.attentions[3, 7], rtol=WIRE_RTOL, atol=WIRE_ATOL)


def test_model_view_short_inputs_send_the_attention_once() -> None:
    """Up to 48 tokens the thumbnails are exact: no second copy in the state or the page."""
    explanation = Explanation(tokens=TOKENS, attentions=attention(2, 3, 7))
    view = ModelView(explanation, layer=0, head=1)
    assert view.preload == b"" and view.preload_index == []
    state = json.loads(
        view.to_html().split("data-attnwidget-state>", 1)[1].split("</script>", 1)[0]
    )
    assert state["state"]["preload_index"] == []
    sizes = {b["path"][0]: len(base64.b64decode(b["data"])) for b in state["buffers"]}
    assert sizes == {"preload": 0, "thumbs": 2 * 3 * 7 * 7 * 2}
    # Over 48 tokens thumbnails are pooled, and the attention is sent as before.
    pooled = ModelView(Explanation(tokens=words(60), attentions=attention(2, 3, 60)))
    assert len(pooled.preload) == 2 * 3 * 60 * 60 * 2
