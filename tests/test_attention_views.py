"""HeadView and ModelView widget models: traits, validation, float16 buffers,
lazy loading through custom messages, and the 10 MB message bound (no browser)."""

from __future__ import annotations

import base64
import html
import json
import re
from typing import Any

import numpy as np
import pytest
import traitlets
from ipywidgets.widgets.widget import _remove_buffers

from attnwidget.errors import AttentionShapeError
from attnwidget.results.explanation import Explanation
from attnwidget.views import HeadView, ModelView
from attnwidget.views.attention._shared import (
    MAX_MESSAGE_BYTES,
    PRELOAD_BYTES,
    WIRE_ATOL,
    WIRE_RTOL,
    bin_edges,
    decode_float16,
    make_matrix,
    pool,
)

TOKENS = ["[CLS]", "the", "cat", "[SEP]", "it", "sat", "[SEP]"]
#: The Jupyter server's default websocket message limit (tornado's max_message_size).
JUPYTER_MESSAGE_LIMIT = 10 * 1024 * 1024


def attention(layers: int, heads: int, rows: int, cols: int | None = None, seed: int = 0):
    rng = np.random.default_rng(seed)
    weights = rng.random((layers, heads, rows, cols or rows), dtype=np.float32)
    return weights / weights.sum(-1, keepdims=True)


def pair_explanation() -> Explanation:
    return Explanation(tokens=TOKENS, attentions=attention(2, 3, 7), sentence_b_start=4)


def seq2seq_explanation() -> Explanation:
    enc = ["▁Hello", "▁world", "</s>"]
    dec = ["<pad>", "▁Hallo", "▁Welt", "</s>"]
    causal = np.tril(attention(2, 4, 4, seed=1))
    causal /= causal.sum(-1, keepdims=True)
    return Explanation(
        tokens=enc,
        attentions=attention(2, 4, 3),
        decoder_tokens=dec,
        decoder_attentions=causal,
        cross_attentions=attention(2, 4, 4, 3, seed=2),
        kind="encoder-decoder",
    )


class Outbox:
    """Stands in for the comm: records what a view sends to the page."""

    def __init__(self, view: Any) -> None:
        self.messages: list[tuple[dict[str, Any], list[memoryview]]] = []
        view.send = self.send

    def send(self, content: dict[str, Any], buffers: Any = None) -> None:
        self.messages.append((content, list(buffers or [])))


def request(view: Any, **content: Any) -> Outbox:
    outbox = Outbox(view)
    view._on_message(view, {"type": "request", **content}, [])
    return outbox


def assemble(view: Any, key: str, messages: list[tuple[dict[str, Any], list[memoryview]]]):
    """Rebuild a matrix from chunks (preload + replies) as the page does; NaN = missing."""
    m = view.attention.matrix(key)
    out = np.full(m.shape, np.nan, dtype=np.float32)
    for content, buffers in messages:
        if content["matrix"] != key:
            continue
        (h0, h1), (r0, r1) = content["heads"], content["rows"]
        out[content["layer"], h0:h1, r0:r1] = decode_float16(
            bytes(buffers[0]), (h1 - h0, r1 - r0, m.shape[3])
        )
    return out


def preloaded(view: Any) -> list[tuple[dict[str, Any], list[bytes]]]:
    data = view.preload
    return [(c, [data[c["offset"] : c["offset"] + c["nbytes"]]]) for c in view.preload_index]


def state_bytes(view: Any) -> int:
    """Bytes of the widget's state message: its JSON plus its binary buffers."""
    state, _, buffers = _remove_buffers(view.get_state())
    return len(json.dumps(state)) + sum(len(b) for b in buffers)


# -- HeadView ----------------------------------------------------------------------


def test_head_view_traits_describe_the_explanation() -> None:
    explanation = pair_explanation()
    view = HeadView(explanation)
    assert view._view == "head"
    assert view.tokens == TOKENS
    assert view.decoder_tokens == []
    assert view.sentence_b_start == 4
    assert view.matrix == "self" and view.pair_filter == "all" and view.theme == "auto"
    assert view.layer == 0 and view.heads == [0, 1, 2] and view.selected_token == -1
    (info,) = view.matrices
    assert info == {
        "key": "self",
        "label": "Self-attention",
        "rows": "tokens",
        "cols": "tokens",
        "shape": [2, 3, 7, 7],
        "layer_ids": [0, 1],
        "head_ids": [0, 1, 2],
        "causal": False,
    }
    assert view.selection is None
    view.selected_token = 2
    selection = view.selection
    assert selection["token"] == "cat" and selection["layer"] == 0
    np.testing.assert_array_equal(selection["weights"], explanation.attentions[0, :, 2])
    assert "HeadView(" in repr(view)


def test_head_view_constructor_options() -> None:
    view = HeadView(pair_explanation(), layer=1, heads=[2, 0], pair_filter="B->A", theme="dark")
    assert (view.layer, view.heads, view.pair_filter, view.theme) == (1, [0, 2], "B->A", "dark")
    with pytest.raises(ValueError, match="layer=5 is not one of those shown"):
        HeadView(pair_explanation(), layer=5)
    with pytest.raises(ValueError, match="matrix='cross' is not available"):
        HeadView(pair_explanation(), matrix="cross")
    with pytest.raises(TypeError, match=r"expected an attnwidget\.Explanation"):
        HeadView(np.zeros((1, 1, 2, 2)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("trait", "value", "message"),
    [
        ("layer", 2, r"layer=2 is out of range: use one of the layers shown \(0..1\)"),
        ("layer", -1, "layer=-1 is out of range"),
        ("layer", True, "layer must be an int"),
        ("heads", [0, 3], r"head\(s\) \[3\] out of range"),
        ("heads", [1, 1], "more than once"),
        ("selected_token", 7, r"selected_token=7 is out of range.*0..6 \(7 tokens\)"),
        ("selected_token", -2, "selected_token=-2 is out of range"),
        ("pair_filter", "A->C", "pair_filter='A->C' is not one of"),
        ("matrix", "cross", "matrix='cross' is not available"),
        ("theme", "blue", "theme='blue' is not one of"),
    ],
)
def test_head_view_rejects_out_of_range_values(trait: str, value: Any, message: str) -> None:
    view = HeadView(pair_explanation(), layer=1, heads=[0, 2])
    view.selected_token = 3
    before = {name: getattr(view, name) for name in ("layer", "heads", "selected_token", "matrix")}
    with pytest.raises(traitlets.TraitError, match=message):
        setattr(view, trait, value)
    # The failed assignment changed nothing: the page keeps a valid state.
    assert {name: getattr(view, name) for name in before} == before
    view.heads = []  # no head shown is allowed (an empty drawing)
    assert view.heads == []


def test_pair_filter_needs_a_sentence_pair() -> None:
    view = HeadView(Explanation(tokens=TOKENS, attentions=attention(1, 2, 7)))
    with pytest.raises(traitlets.TraitError, match="needs a sentence pair"):
        view.pair_filter = "A->B"


def test_mismatched_empty_or_broken_attention_is_a_clear_error() -> None:
    with pytest.raises(AttentionShapeError, match="holds no values"):
        HeadView(Explanation(tokens=TOKENS, attentions=np.zeros((0, 2, 7, 7), np.float32)))
    with pytest.raises(AttentionShapeError, match="expected 4 dimensions"):
        make_matrix("self", np.zeros((2, 7, 7)), TOKENS, TOKENS)
    bad = seq2seq_explanation()
    bad.cross_attentions = attention(2, 4, 4, 5)  # 5 keys, 3 encoder tokens
    with pytest.raises(AttentionShapeError, match=r"Cross attention has shape .* 4 query and 3"):
        ModelView(bad)
    with pytest.raises(ValueError, match="sentence_b_start=7 is out of range"):
        HeadView(Explanation(tokens=TOKENS, attentions=attention(1, 1, 7), sentence_b_start=7))


def test_sentence_pair_blocks_slice_the_attention() -> None:
    explanation = pair_explanation()
    view = HeadView(explanation)
    a, b = list(range(4)), list(range(4, 7))
    blocks = {"all": (TOKENS, TOKENS), "A->A": (a, a), "B->B": (b, b), "A->B": (a, b)}
    blocks["B->A"] = (b, a)
    for name, (rows, cols) in blocks.items():
        view.pair_filter = name
        rows = list(range(7)) if rows is TOKENS else rows
        cols = list(range(7)) if cols is TOKENS else cols
        expected = explanation.attentions[:, :, rows][:, :, :, cols]
        np.testing.assert_array_equal(view.shown_attention(), expected)


def test_attention_round_trips_through_float16_buffers() -> None:
    explanation = pair_explanation()
    view = HeadView(explanation)
    state, paths, _ = _remove_buffers(view.get_state())
    assert ["preload"] in paths
    json.dumps(state)  # the rest is JSON, with no lists of floats anywhere
    assert "preload" not in state
    for value in state.values():
        assert not (isinstance(value, list) and any(isinstance(x, float) for x in value))
    # Small input: everything is preloaded, every layer, as float16.
    assert len(view.preload) == explanation.attentions.size * 2
    decoded = assemble(view, "self", preloaded(view))
    np.testing.assert_allclose(decoded, explanation.attentions, rtol=WIRE_RTOL, atol=WIRE_ATOL)
    assert not np.array_equal(decoded, explanation.attentions)  # really rounded to half
    np.testing.assert_array_equal(view.wire_attention(), decoded)


def test_encoder_decoder_matrices_and_switching() -> None:
    explanation = seq2seq_explanation()
    view = HeadView(explanation)
    assert [m["key"] for m in view.matrices] == ["encoder", "decoder", "cross"]
    assert [m["causal"] for m in view.matrices] == [False, True, False]
    assert view.matrices[2]["rows"] == "decoder_tokens" and view.matrices[2]["cols"] == "tokens"
    assert view.matrix == "encoder"
    view.matrix = "cross"
    view.selected_token = 3  # a decoder position: 4 decoder tokens
    assert view.selection["token"] == "</s>"
    np.testing.assert_array_equal(view.shown_attention(), explanation.cross_attentions)
    view.matrix = "encoder"  # 3 encoder tokens: the pinned row 3 no longer exists
    assert view.selected_token == -1
    view.selected_token = 1  # an encoder token ...
    view.matrix = "decoder"  # ... is not decoder token 1, though row 1 exists: unpinned
    assert view.selected_token == -1
    view.selected_token = 2
    view.matrix = "cross"  # the same queries (decoder tokens): kept
    assert view.selected_token == 2
    for key, expected in (
        ("encoder", explanation.attentions),
        ("decoder", explanation.decoder_attentions),
        ("cross", explanation.cross_attentions),
    ):
        got = assemble(view, key, preloaded(view))
        np.testing.assert_allclose(got, expected, rtol=WIRE_RTOL, atol=WIRE_ATOL)


def test_causal_attention_is_detected() -> None:
    causal = np.tril(attention(1, 2, 5))
    causal /= causal.sum(-1, keepdims=True)
    explanation = Explanation(tokens=list("abcde"), attentions=causal)
    assert HeadView(explanation).matrices[0]["causal"] is True
    assert HeadView(pair_explanation()).matrices[0]["causal"] is False


# -- lazy loading -------------------------------------------------------------------


def big_explanation(n: int = 200, layers: int = 12, heads: int = 12) -> Explanation:
    return Explanation(tokens=[f"t{i}" for i in range(n)], attentions=attention(layers, heads, n))


def test_large_inputs_preload_only_the_first_layer_and_serve_the_rest() -> None:
    explanation = big_explanation()  # 11 MB of float16: more than PRELOAD_BYTES
    view = HeadView(explanation, layer=4)
    assert {c["layer"] for c in view.preload_index} == {4}
    assert len(view.preload) == 12 * 200 * 200 * 2 < PRELOAD_BYTES

    outbox = request(view, matrix="self", layer=7)
    assert outbox.messages, "no reply"
    for content, buffers in outbox.messages:
        assert content["type"] == "attention" and content["dtype"] == "float16"
        assert content["layer"] == 7 and len(buffers) == 1
    got = assemble(view, "self", outbox.messages)[7]
    np.testing.assert_allclose(got, explanation.attentions[7], rtol=WIRE_RTOL, atol=WIRE_ATOL)

    one = request(view, matrix="self", layer=2, head=5)  # ModelView asks for one head
    ((content, _),) = one.messages
    assert content["heads"] == [5, 6] and content["rows"] == [0, 200]


@pytest.mark.parametrize(
    "content",
    [
        {"type": "request", "matrix": "cross", "layer": 0},
        {"type": "request", "matrix": "self", "layer": 12},
        {"type": "request", "matrix": "self", "layer": "1"},
        {"type": "request", "matrix": "self", "layer": 0, "head": -1},
    ],
)
def test_bad_requests_get_an_error_reply_not_an_exception(content: dict[str, Any]) -> None:
    view = HeadView(big_explanation(n=8, layers=12))
    outbox = Outbox(view)
    view._on_message(view, content, [])
    ((reply, buffers),) = outbox.messages
    assert reply["type"] == "error" and reply["message"] and not buffers
    view._on_message(view, {"type": "something-else"}, [])  # ignored
    assert len(outbox.messages) == 1


def test_chunks_split_by_heads_then_rows_and_reassemble() -> None:
    explanation = big_explanation(n=10, layers=1, heads=4)
    m = HeadView(explanation).attention.matrix("self")
    head_bytes = 10 * 10 * 2
    by_heads = list(m.chunks(0, limit=2 * head_bytes))
    assert [c["heads"] for c, _ in by_heads] == [[0, 2], [2, 4]]
    by_rows = list(m.chunks(0, limit=head_bytes // 3))  # one head is over the limit
    assert all(len(data) <= head_bytes // 3 for _, data in by_rows)
    assert {tuple(c["heads"]) for c, _ in by_rows} == {(h, h + 1) for h in range(4)}
    rebuilt = np.zeros((4, 10, 10), np.float32)
    for c, data in by_rows:
        (h0, h1), (r0, r1) = c["heads"], c["rows"]
        rebuilt[h0:h1, r0:r1] = decode_float16(data, (h1 - h0, r1 - r0, 10))
    np.testing.assert_allclose(rebuilt, explanation.attentions[0], rtol=WIRE_RTOL, atol=WIRE_ATOL)


def test_no_message_exceeds_the_jupyter_limit_at_512_tokens() -> None:
    explanation = big_explanation(n=512, layers=12, heads=12)
    head = HeadView(explanation)
    model = ModelView(explanation)
    # The initial state is one message each.
    assert state_bytes(head) <= JUPYTER_MESSAGE_LIMIT
    assert state_bytes(model) <= JUPYTER_MESSAGE_LIMIT
    assert head.preload_index, "the first layer should come with the state"
    # Every reply, for every layer, is one message under the limit.
    outbox = Outbox(head)
    for layer in range(12):
        head._on_message(head, {"type": "request", "matrix": "self", "layer": layer}, [])
    for content, buffers in outbox.messages:
        size = len(json.dumps(content)) + sum(len(b) for b in buffers)
        assert size <= MAX_MESSAGE_BYTES < JUPYTER_MESSAGE_LIMIT
    assert sum(len(b[0]) for _, b in outbox.messages) == explanation.attentions.size * 2
    one = request(model, matrix="self", layer=11, head=11)
    assert sum(len(b) for _, buffers in one.messages for b in buffers) == 512 * 512 * 2


def state_payloads(page: str) -> list[dict[str, Any]]:
    """The widget states an exported page embeds (its JSON state blocks)."""
    blocks = re.findall(r"<script [^>]*data-attnwidget-state[^>]*>(.*?)</script>", page, re.S)
    return [json.loads(block) for block in blocks]


def reply_blocks(page: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The recorded replies of an exported page: (model id, match, {content, buffers})."""
    pattern = (
        r'<script type="application/json" data-attnwidget-reply="([^"]*)" '
        r'data-match="([^"]*)">(.*?)</script>'
    )
    return [
        (owner, json.loads(html.unescape(match)), json.loads(body))
        for owner, match, body in re.findall(pattern, page, re.S)
    ]


def kernel_replies(view: HeadView | ModelView, request: dict[str, Any]) -> list[Any]:
    """What the live view sends the page for ``request``: [(content, [bytes])]."""
    sent: list[Any] = []
    view.send = lambda content, buffers=None: sent.append(  # type: ignore[method-assign]
        (content, [bytes(b) for b in buffers or []])
    )
    try:
        view._on_message(view, request, [])
    finally:
        del view.send
    return sent


def test_exported_pages_record_the_kernel_replies() -> None:
    """A saved page cannot ask the kernel: to_html records its replies, shown layer first."""
    explanation = big_explanation(n=200, layers=12, heads=12)  # 11.5 MB of float16
    view = HeadView(explanation, layer=5)
    live = (view.preload, list(view.preload_index))
    page = view.to_html()
    (payload,) = state_payloads(page)
    # The page's state is the live one (layer 5 preloaded); the others are replies.
    assert [c["layer"] for c in payload["state"]["preload_index"]] == [5]
    assert payload["unanswered"]["type"] == "error"
    blocks = reply_blocks(page)
    assert {owner for owner, _, _ in blocks} == {view.model_id}
    layers = [match["layer"] for _, match, _ in blocks]
    assert layers == sorted(set(range(12)) - {5})  # every other layer, in order
    for _, match, body in blocks:
        assert match == {"type": "request", "matrix": "self", "layer": match["layer"]}
        # Byte for byte what the kernel sends for that request.
        ((content, buffers),) = kernel_replies(view, match)
        assert body["content"] == content
        assert [base64.b64decode(b) for b in body["buffers"]] == buffers
    assert (view.preload, list(view.preload_index)) == live  # the live state is untouched

    small = view.to_html(embed_bytes=2 * 12 * 200 * 200 * 2)  # room for two layers
    assert [match["layer"] for _, match, _ in reply_blocks(small)] == [0]
    (payload,) = state_payloads(small)
    assert "embed_bytes" in payload["unanswered"]["message"]  # says what was left out


def test_exported_model_view_records_one_reply_per_head() -> None:
    explanation = big_explanation(n=600, layers=3, heads=4)  # 8.6 MB: over PRELOAD_BYTES
    view = ModelView(explanation, layer=1, head=2)
    page = view.to_html()
    (payload,) = state_payloads(page)
    index = payload["state"]["preload_index"]
    preloaded = {(c["layer"], h) for c in index for h in range(*c["heads"])}
    assert preloaded == {(1, 2)}  # the enlarged head, as live
    matches = [match for _, match, _ in reply_blocks(page)]
    assert {(m["layer"], m["head"]) for m in matches} == {
        (layer, head) for layer in range(3) for head in range(4)
    } - preloaded
    for _, match, body in reply_blocks(page)[:3]:
        ((content, buffers),) = kernel_replies(view, match)
        assert body["content"] == content and content["heads"] == [match["head"], match["head"] + 1]
        assert [base64.b64decode(b) for b in body["buffers"]] == buffers


# -- ModelView ----------------------------------------------------------------------


def test_model_view_selection_and_validation() -> None:
    explanation = pair_explanation()
    view = ModelView(explanation)
    assert view._view == "model" and (view.layer, view.head) == (-1, -1)
    assert view.selected_attention is None
    view.select(1, 2)
    assert (view.layer, view.head) == (1, 2)
    np.testing.assert_array_equal(view.selected_attention, explanation.attentions[1, 2])
    view.layer = -1  # closing from Python closes both
    assert (view.layer, view.head) == (-1, -1)
    view.head = 1  # opening with one opens the pair
    assert (view.layer, view.head) == (0, 1)
    with pytest.raises(traitlets.TraitError, match=r"layer=2 is out of range: use -1 for none"):
        view.layer = 2
    with pytest.raises(traitlets.TraitError, match=r"head=3 is out of range: use -1 for none"):
        view.head = 3
    with pytest.raises(traitlets.TraitError, match="give both"):
        view.select(1, -1)
    assert (view.layer, view.head) == (0, 1)
    opened = ModelView(explanation, layer=1, head=0, theme="light")
    assert (opened.layer, opened.head, opened.theme) == (1, 0, "light")
    assert "ModelView(" in repr(opened)


def test_thumbnails_are_exact_for_short_inputs() -> None:
    explanation = pair_explanation()
    view = ModelView(explanation)
    (index,) = view.thumb_index
    assert index["row_edges"] == list(range(8)) and index["col_edges"] == list(range(8))
    data = view.thumbs[index["offset"] : index["offset"] + index["nbytes"]]
    thumbs = decode_float16(data, (2, 3, 7, 7))
    np.testing.assert_allclose(thumbs, explanation.attentions, rtol=WIRE_RTOL, atol=WIRE_ATOL)


def test_thumbnails_pool_long_inputs_keeping_rows_and_the_pair_split() -> None:
    n = 300
    explanation = Explanation(
        tokens=[f"t{i}" for i in range(n)], attentions=attention(2, 2, n), sentence_b_start=101
    )
    view = ModelView(explanation)
    (index,) = view.thumb_index
    edges = index["row_edges"]
    assert 101 in edges and edges[0] == 0 and edges[-1] == n and len(edges) - 1 <= 48
    bins = len(edges) - 1
    thumbs = decode_float16(
        view.thumbs[index["offset"] : index["offset"] + index["nbytes"]], (2, 2, bins, bins)
    )
    np.testing.assert_allclose(thumbs.sum(-1), 1.0, atol=2e-3)  # pooled rows still sum to 1
    # Block pooling: the mean over a bin's rows of the sum over its columns.
    e = np.asarray(edges)
    expected = np.array(
        [[explanation.attentions[0, 0, e[i] : e[i + 1], e[j] : e[j + 1]].sum(-1).mean()
          for j in range(bins)] for i in range(bins)]
    )  # fmt: skip
    np.testing.assert_allclose(thumbs[0, 0], expected, rtol=2e-3, atol=1e-6)


def test_bin_edges_and_pool_helpers() -> None:
    assert list(bin_edges(5, 48)) == [0, 1, 2, 3, 4, 5]
    edges = bin_edges(100, 10, split=33)
    assert 33 in edges and len(edges) == 11
    weights = attention(1, 1, 6)[0, 0]
    np.testing.assert_allclose(pool(weights, np.arange(7), np.arange(7)), weights)


def test_model_view_matrix_switch_keeps_a_valid_selection() -> None:
    explanation = seq2seq_explanation()
    view = ModelView(explanation, matrix="cross", layer=1, head=3)
    assert view.matrix == "cross" and (view.layer, view.head) == (1, 3)
    np.testing.assert_array_equal(view.selected_attention, explanation.cross_attentions[1, 3])
    assert len(view.thumb_index) == 3
    view.matrix = "decoder"
    assert (view.layer, view.head) == (1, 3)  # same layers and heads: kept


def test_model_view_pins_a_query_token_of_the_enlarged_head() -> None:
    explanation = pair_explanation()
    view = ModelView(explanation)
    assert view.selected_token == -1
    # No enlarged head: nothing to pin in, a clear error and nothing changes.
    with pytest.raises(traitlets.TraitError, match=r"=2 needs an enlarged head.*select\("):
        view.selected_token = 2
    assert (view.layer, view.head, view.selected_token) == (-1, -1, -1)
    view.selected_token = -1  # unpinning is always fine

    view.select(1, 2)
    view.selected_token = 3
    assert view.get_state()["selected_token"] == 3  # synced to the page
    for bad, message in (
        (7, r"selected_token=7 is out of range: use -1 for none.*0..6 \(7 tokens\)"),
        (-2, "selected_token=-2 is out of range"),
        (True, "selected_token must be an int"),
    ):
        with pytest.raises(traitlets.TraitError, match=message):
            view.selected_token = bad
        assert (view.layer, view.head, view.selected_token) == (1, 2, 3)
    view.select(0, 1)  # another head of the same matrix: the same query tokens, kept
    assert view.selected_token == 3
    assert "selected_token=3" in repr(view)
    view.select(-1, -1)  # closing unpins
    assert view.selected_token == -1
    view.select(1, 0)
    view.selected_token = 4
    view.head = -1  # closing through one trait of the pair unpins too
    assert (view.layer, view.head, view.selected_token) == (-1, -1, -1)

    # The page closes and unpins in one message (also what an exported page does).
    view.select(1, 0)
    view.set_state({"selected_token": 5})
    assert view.selected_token == 5
    view.set_state({"layer": -1, "head": -1, "selected_token": -1})
    assert (view.layer, view.head, view.selected_token) == (-1, -1, -1)

    # A page message Python refuses in part changes none of it, and the page
    # is sent Python's values back.
    view.select(1, 0)
    resent: list[Any] = []
    view.send_state = lambda key=None: resent.append(key)  # type: ignore[method-assign]
    view.set_state({"head": 1, "selected_token": 999})
    assert (view.layer, view.head, view.selected_token) == (1, 0, -1)
    assert resent == [["head", "selected_token"]]
    del view.send_state

    opened = ModelView(explanation, layer=1, head=0, selected_token=6)
    assert (opened.layer, opened.head, opened.selected_token) == (1, 0, 6)
    with pytest.raises(traitlets.TraitError, match="pass layer= and head="):
        ModelView(explanation, selected_token=1)
    opened.set_explanation(explanation)  # another input: its token 6 is another token
    assert (opened.layer, opened.head, opened.selected_token) == (1, 0, -1)


def test_model_view_pins_decoder_tokens_in_cross_attention() -> None:
    explanation = seq2seq_explanation()  # 3 encoder tokens, 4 decoder tokens
    view = ModelView(explanation, matrix="cross", layer=1, head=3, selected_token=3)
    assert view.selected_token == 3  # cross attention's queries are decoder tokens
    with pytest.raises(traitlets.TraitError, match=r"0..3 \(4 decoder tokens\)"):
        view.selected_token = 4
    view.matrix = "decoder"  # the same queries: kept
    assert (view.layer, view.head, view.selected_token) == (1, 3, 3)
    view.matrix = "encoder"  # other queries (input tokens): the head stays, the pin goes
    assert (view.layer, view.head, view.selected_token) == (1, 3, -1)
    view.selected_token = 2
    with pytest.raises(traitlets.TraitError, match=r"0..2 \(3 tokens\)"):
        view.selected_token = 3
    assert view.selected_token == 2
