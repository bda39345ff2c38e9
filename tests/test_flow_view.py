"""FlowView (Python side): traits, validation, wire buffers, the compute handler.

The handler's numbers are checked against the library's own methods computed
independently here (rollout, attention_flow, raw_attention, grad_attention);
the decoder stack's (T5, BART) against raw, rollout and flow written out in
the test from ``explanation.decoder_attentions``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
import traitlets
from tiny_models import build

from attnwidget import demo, explain
from attnwidget.errors import ModelNotSupportedError, TooLargeError
from attnwidget.methods import attention_flow, grad_attention, raw_attention
from attnwidget.methods.graph import add_residual, fuse_heads
from attnwidget.methods.rollout import rollout
from attnwidget.results.explanation import Explanation
from attnwidget.views import FlowView
from attnwidget.views.flow import flow_view as flow_module
from attnwidget.views.flow._paths import _max_flow_edges, compute_paths, path_methods
from attnwidget.views.flow.flow_view import decode_paths, encode_paths


def peaked(layers: int, heads: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = rng.random((layers, heads, n, n)) ** 4
    return (weights / weights.sum(-1, keepdims=True)).astype(np.float32)


@functools.cache
def encoder_explanation() -> Explanation:
    model, tokenizer = demo.load("sva-encoder")
    text = demo.sentences(1, seed=0)[0].text
    return explain(model, tokenizer, text, methods=["raw", "rollout", "grad_attention", "lrp"])


def ask(view: FlowView, method: str, layer: int, token: int) -> dict[str, Any]:
    """Call the compute handler directly; decode its reply."""
    content = {
        "type": "compute",
        "id": 7,
        "version": view.version,
        "method": method,
        "layer": layer,
        "token": token,
    }
    meta, buffers = view._compute_reply(content)
    assert meta["type"] == "paths" and meta["id"] == 7 and meta["version"] == view.version
    assert all(isinstance(b, bytes) for b in buffers)  # binary buffers, not JSON floats
    return {**meta, **decode_paths(meta, buffers)}


def test_traits_and_defaults() -> None:
    exp = encoder_explanation()
    view = FlowView(exp)
    layers, n = exp.num_layers, len(exp.tokens)
    assert view.shape == [layers, n] and view.tokens == exp.tokens
    assert view.methods == ["raw", "rollout", "flow", "grad_attention", "lrp"]
    assert view.signed == [False, False, False, False, True]
    assert view.local_methods == ["raw", "rollout"]
    assert (view.selected_layer, view.selected_token) == (layers, exp.query_index)
    assert view.selected_method == "rollout" and view.threshold == 0.02
    assert "singular" in view.caption or "plural" in view.caption
    # Attention-only explanations have no gradient or LRP paths.
    plain = Explanation.from_attentions(peaked(2, 2, 5), ["a", "b", "c", "d", "e"])
    assert FlowView(plain).methods == ["raw", "rollout", "flow"]
    assert path_methods(plain) == ["raw", "rollout", "flow"]


def test_validation_names_the_range_and_the_methods() -> None:
    view = FlowView(Explanation.from_attentions(peaked(3, 2, 6), list("abcdef")))
    with pytest.raises(traitlets.TraitError, match=r"0 \(input tokens\) \.\. 3"):
        view.selected_layer = 4
    with pytest.raises(traitlets.TraitError, match=r"-1 for no selection or a token index 0\.\.5"):
        view.selected_token = 6
    with pytest.raises(traitlets.TraitError, match="'raw', 'rollout', 'flow'"):
        view.selected_method = "nonsense"
    with pytest.raises(traitlets.TraitError, match="not a path method"):
        view.selected_method = "input_x_gradient"
    with pytest.raises(traitlets.TraitError, match="needs data this explanation lacks"):
        view.selected_method = "grad_attention"
    with pytest.raises(traitlets.TraitError, match="between 0 and 1"):
        view.threshold = 1.5
    with pytest.raises(traitlets.TraitError):
        view.select(1, 99)  # the pair is checked before anything changes
    assert (view.selected_layer, view.selected_token) == (3, 0)
    view.select(1, 2)
    assert (view.selected_layer, view.selected_token) == (1, 2)
    with pytest.raises(TypeError, match="Explanation"):
        FlowView(np.zeros((2, 2, 3, 3)))  # type: ignore[arg-type]


def test_fused_buffer_decodes_to_the_fused_attention(monkeypatch: pytest.MonkeyPatch) -> None:
    attentions = peaked(3, 4, 9)
    view = FlowView(Explanation.from_attentions(attentions, [f"t{i}" for i in range(9)]))
    assert isinstance(view.fused, bytes) and view.fused_layers == 3
    expected = fuse_heads(attentions.astype(np.float64)).astype(np.float32)
    assert np.array_equal(view.wire_attention(), expected)
    assert np.array_equal(np.frombuffer(view.fused, dtype="<f4").reshape(3, 9, 9), expected)
    # A state budget of one layer: the rest is sent on request, one layer a message.
    monkeypatch.setattr(flow_module, "PRELOAD_BYTES", 9 * 9 * 4)
    small = FlowView(Explanation.from_attentions(attentions, [f"t{i}" for i in range(9)]))
    assert small.fused_layers == 1 and len(small.fused) == 9 * 9 * 4
    reply, buffers = small._layer_reply({"type": "request", "layer": 2})
    assert reply == {"type": "layer", "version": small.version, "layer": 2}
    assert np.array_equal(np.frombuffer(buffers[0], dtype="<f4").reshape(9, 9), expected[2])
    with pytest.raises(ValueError, match="out of range"):
        small._layer_reply({"type": "request", "layer": 3})


def test_compute_rollout_and_raw_match_the_methods() -> None:
    attentions = peaked(4, 3, 8, seed=1)
    view = FlowView(Explanation.from_attentions(attentions, [f"t{i}" for i in range(8)]))
    maps = rollout(attentions)  # computed independently of the view
    adjusted = add_residual(fuse_heads(attentions.astype(np.float64)))

    down = ask(view, "rollout", 4, 5)
    assert np.allclose(down["nodes"][0], maps[-1][5], atol=1e-6)
    assert np.allclose(down["edges"].sum(axis=(1, 2)), 1.0, atol=1e-5)
    # Contribution of edge (4, 5) → (3, j) = mass(4, 5)=1 × Â_4[5, j].
    assert np.allclose(down["edges"][3, 5], adjusted[3, 5], atol=1e-6)
    # Edge (3, i) → (2, j): mass(3, i) = Â_4[5, i] times Â_3[i, j].
    expected = adjusted[3, 5][:, None] * adjusted[2]
    assert np.allclose(down["edges"][2], expected, atol=1e-6)

    up = ask(view, "rollout", 0, 2)
    assert np.allclose(up["nodes"][4], maps[-1][:, 2], atol=1e-6)
    assert np.allclose(up["edges"][3].sum(axis=1), maps[-1][:, 2], atol=1e-6)

    middle = ask(view, "rollout", 2, 1)
    assert np.allclose(middle["nodes"][0], maps[1][1], atol=1e-6)
    assert np.allclose(middle["nodes"][4], (adjusted[3] @ adjusted[2])[:, 1], atol=1e-6)

    raw = ask(view, "raw", 4, 0)
    assert np.allclose(raw["nodes"][0], raw_attention(attentions, layer=-1)[0], atol=1e-6)
    raw_up = ask(view, "raw", 0, 3)
    assert np.allclose(raw_up["nodes"][4], raw_attention(attentions, layer=-1)[:, 3], atol=1e-6)


def test_compute_flow_matches_attention_flow_and_is_a_flow() -> None:
    attentions = peaked(4, 2, 7, seed=2)
    view = FlowView(Explanation.from_attentions(attentions, [f"t{i}" for i in range(7)]))
    adjusted = add_residual(fuse_heads(attentions.astype(np.float64)))
    full = attention_flow(attentions, rows=None)  # (n, n), row-normalised

    down = ask(view, "flow", 4, 3)
    assert np.allclose(down["nodes"][0], full[3], atol=1e-6)
    edges = down["edges"].astype(np.float64)
    assert np.allclose(edges.sum(axis=(1, 2)), 1.0, atol=1e-5)
    # Conservation: what enters each middle node leaves it.
    for layer in range(1, 4):
        assert np.allclose(edges[layer].sum(axis=0), edges[layer - 1].sum(axis=1), atol=1e-5)
    # What reaches each input token is its flow value (up to the 2**-30 rounding).
    assert np.allclose(edges[0].sum(axis=0), full[3], atol=1e-4)

    up = ask(view, "flow", 0, 4)
    assert np.allclose(up["nodes"][4], full[:, 4], atol=1e-6)
    assert np.allclose(up["edges"][3].astype(np.float64).sum(axis=1), full[:, 4], atol=1e-4)
    # Each superposed max flow is feasible: within the capacities Â, conserved,
    # and its value is the exact max flow (up to the 2**-30 rounding).
    stack = [adjusted[layer] for layer in (3, 2, 1, 0)]
    raw = attention_flow(attentions, rows=[3], normalize=False)[0]
    for sink in range(7):
        value, flows = _max_flow_edges(stack, 3, sink)
        assert all(np.all(f <= c + 1e-12) for f, c in zip(flows, stack, strict=True))
        for d in range(3):
            assert np.allclose(flows[d].sum(axis=0), flows[d + 1].sum(axis=1), atol=1e-9)
        assert abs(value - raw[sink]) < 1e-5


def test_compute_grad_attention_and_lrp_match_the_explanation() -> None:
    exp = encoder_explanation()
    view = FlowView(exp)
    layers, q = exp.num_layers, exp.query_index
    grad = ask(view, "grad_attention", layers, q)
    relevance = grad_attention(exp.attentions, exp.attention_grads)
    assert np.allclose(grad["nodes"][0], relevance[q], rtol=1e-5, atol=1e-6)
    assert np.allclose(grad["nodes"][0], exp.scores["grad_attention"], rtol=1e-5, atol=1e-6)
    lrp = ask(view, "lrp", layers, q)
    assert lrp["signed"] is True
    assert np.allclose(lrp["nodes"][0], exp.scores["lrp"], rtol=1e-5, atol=1e-6)
    heads_summed = exp.details["lrp"]["attention_relevance"].sum(axis=1)
    # Edges under 1e-6 of their layer's total are not sent.
    floor = 1e-6 * np.abs(heads_summed).sum(axis=(1, 2)).max()
    assert np.allclose(lrp["edges"], heads_summed, rtol=1e-4, atol=floor * 1.01)
    # Rollout at the query equals the explanation's own rollout score.
    roll = ask(view, "rollout", layers, q)
    assert np.allclose(roll["nodes"][0], exp.scores["rollout"], atol=1e-6)


def test_per_selection_says_which_methods_ignore_the_selection() -> None:
    """The reply's per_selection is false exactly for the methods whose paths are
    the same at every node (the page's status line then says so, as their note does)."""
    exp = encoder_explanation()
    view = FlowView(exp)
    layers, n = exp.num_layers, len(exp.tokens)
    nodes = [(layers, exp.query_index), (2, 1), (0, n - 1)]
    for method in view.methods:
        replies = [ask(view, method, layer, token) for layer, token in nodes]
        same = all(
            np.array_equal(r["nodes"], replies[0]["nodes"])
            and np.array_equal(r["edges"], replies[0]["edges"])
            for r in replies[1:]
        )
        assert {r["per_selection"] for r in replies} == {not same}, method
        view.selected_method = method
        assert view.selection is not None and view.selection["per_selection"] is (not same)
        if not same:
            continue
        # The note under the diagram says the same thing as the status line will.
        assert "does not depend on the selection" in replies[0]["note"]
    assert [m for m in view.methods if not ask(view, m, *nodes[1])["per_selection"]] == ["lrp"]


def test_message_handler_progress_stale_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    view = FlowView(Explanation.from_attentions(peaked(4, 2, 6), list("abcdef")))
    sent: list[tuple[dict[str, Any], list[Any]]] = []
    monkeypatch.setattr(view, "send", lambda content, buffers=None: sent.append((content, buffers)))
    request = {"type": "compute", "id": 3, "version": view.version, "method": "flow"}
    view._on_message(view, {**request, "layer": 4, "token": 1}, [])
    kinds = [content["type"] for content, _ in sent]
    assert kinds[0] == "progress" and kinds[-1] == "paths"
    assert sent[-1][0]["id"] == 3 and len(sent[-1][1]) == 4
    assert all(isinstance(b, memoryview) for b in sent[-1][1])

    sent.clear()
    # A request for an older version (the data changed meanwhile) is not an
    # error: the page is told it is stale and asks again.
    view._on_message(view, {**request, "version": view.version - 1, "layer": 4, "token": 1}, [])
    assert sent == [({"type": "stale", "id": 3, "version": view.version}, None)]
    sent.clear()
    view._on_message(view, {"type": "request", "version": view.version - 1, "layer": 0}, [])
    assert sent == []  # a stale layer request: the page asks for the new layers itself
    with pytest.raises(ValueError, match="version"):
        view._compute_reply({**request, "version": view.version + 5, "layer": 4, "token": 1})
    sent.clear()
    view._on_message(view, {**request, "layer": 9, "token": 1}, [])
    assert sent[0][0]["type"] == "error" and "0 (input tokens) .. 4" in sent[0][0]["message"]
    sent.clear()
    view._on_message(view, {**request, "method": "bogus", "layer": 4, "token": 1}, [])
    assert (
        sent[0][0]
        == {
            "type": "error",
            "id": 3,
            "message": sent[0][0]["message"],
        }
        and "'rollout'" in sent[0][0]["message"]
    )


def test_replies_stay_under_the_message_limit() -> None:
    view = FlowView(Explanation.from_attentions(peaked(3, 2, 10), [f"t{i}" for i in range(10)]))
    result = view.paths("rollout", 3, 0)
    meta, buffers = encode_paths(result, max_edges=25)
    assert sum(meta["counts"]) == 25 and meta["dropped"] > 0 and meta["floor"] > 1e-6
    decoded = decode_paths(meta, buffers)
    kept = np.abs(decoded["edges"]) > 0
    # The edges kept are the strongest shares.
    share = np.abs(result.edges) / np.abs(result.edges).sum(axis=(1, 2), keepdims=True)
    assert share[kept].min() >= share[~kept].max() - 1e-12
    assert np.allclose(decoded["totals"], np.abs(result.edges).sum(axis=(1, 2)), rtol=1e-6)


def test_set_explanation_keeps_what_still_applies() -> None:
    view = FlowView(Explanation.from_attentions(peaked(3, 2, 8), [f"t{i}" for i in range(8)]))
    view.selected_method = "flow"
    view.select(2, 7)
    version = view.version
    view.set_explanation(Explanation.from_attentions(peaked(3, 2, 5), list("abcde")))
    assert view.version == version + 1 and view.selected_method == "flow"
    assert (view.selected_layer, view.selected_token) == (3, 0)  # 7 is gone: the query
    view.select(1, 2)
    view.set_explanation(Explanation.from_attentions(peaked(3, 2, 6), list("abcdef")))
    assert (view.selected_layer, view.selected_token) == (1, 2)
    selection = view.selection
    assert selection is not None and selection["text"] == "c"
    assert selection["down"].shape == (6,) and selection["up"].shape == (6,)
    html = view.to_html()
    assert 'data-attnwidget-view="flow"' in html


def test_export_embeds_every_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flow_module, "PRELOAD_BYTES", 6 * 6 * 4)
    view = FlowView(Explanation.from_attentions(peaked(3, 2, 6), list("abcdef")))
    assert view.fused_layers == 1
    view._exporting = True
    try:
        state = view.get_state()
    finally:
        view._exporting = False
    assert state["fused_layers"] == 3 and len(state["fused"]) == 3 * 6 * 6 * 4
    assert view.get_state()["fused_layers"] == 1


# -- the decoder stack of encoder–decoder models ----------------------------------

SOURCE = "the keys to the cabinet are on the table"


@functools.cache
def seq2seq_explanation(family: str, decoder_text: str = "the keys to the") -> Explanation:
    model, tokenizer = build(family)
    methods = ["raw", "rollout", "grad_attention"]
    return explain(model, tokenizer, SOURCE, decoder_text=decoder_text, methods=methods)


@functools.cache
def causal_explanation() -> Explanation:
    model, tokenizer = demo.load("sva-causal")
    return explain(model, tokenizer, demo.sentences(1, seed=0, model="sva-causal")[0].text)


def decoder_maps(exp: Explanation) -> tuple[np.ndarray, np.ndarray]:
    """Head-mean decoder attention W and Â = 0.5·W + 0.5·I (rows re-normalised), by hand."""
    w = exp.decoder_attentions.astype(np.float64).mean(axis=1)
    adjusted = 0.5 * w + 0.5 * np.eye(w.shape[-1])[None]
    return w, adjusted / adjusted.sum(axis=-1, keepdims=True)


def state_of(view: FlowView) -> tuple[Any, ...]:
    return (
        view.stack,
        view.version,
        view.tokens,
        view.shape,
        view.fused,
        view.selected_method,
        view.methods,
        view.query_index,
        view.selected_layer,
        view.selected_token,
    )


def test_stack_traits_and_defaults() -> None:
    exp = seq2seq_explanation("t5")
    m, q = len(exp.decoder_tokens), exp.query_index
    assert q == m - 1 > 2  # the last decoder position: a few tokens to look at
    view = FlowView(exp)
    assert view.stacks == ["encoder", "decoder"] and view.stack == "encoder"
    assert view.tokens == exp.tokens and view.query_index == -1  # the query is a decoder position
    assert "grad_attention" in view.methods and "cross-attention" in view.caption

    dec = FlowView(exp, stack="decoder")
    layers = exp.decoder_attentions.shape[0]
    assert dec.tokens == exp.decoder_tokens and dec.shape == [layers, m]
    assert dec.query_index == q and (dec.selected_layer, dec.selected_token) == (layers, q)
    # Gradients are captured for the encoder's attention only: no gradient paths here.
    assert dec.methods == ["raw", "rollout", "flow"] == path_methods(exp, "decoder")
    assert f"query #{q} {exp.decoder_tokens[q]!r}" in dec.caption
    assert "decoder's self-attention" in dec.caption and "matrix='cross'" in dec.caption
    expected = fuse_heads(exp.decoder_attentions.astype(np.float64)).astype(np.float32)
    assert np.array_equal(dec.wire_attention(), expected[: dec.fused_layers])

    # Models with one stack: only "encoder" (their only self-attention).
    assert FlowView(causal_explanation()).stacks == ["encoder"]
    assert FlowView(encoder_explanation()).stacks == ["encoder"]


def test_stack_errors_name_the_fix_and_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    causal = FlowView(causal_explanation())
    before = state_of(causal)
    with pytest.raises(traitlets.TraitError, match="needs an encoder–decoder explanation") as info:
        causal.stack = "decoder"
    assert "kind 'causal-lm'" in str(info.value) and "Use stack='encoder'" in str(info.value)
    assert state_of(causal) == before
    with pytest.raises(traitlets.TraitError, match="needs an encoder–decoder"):
        FlowView(causal_explanation(), stack="decoder")
    with pytest.raises(traitlets.TraitError, match="needs an encoder–decoder"):
        causal.set_explanation(causal_explanation(), stack="decoder")
    assert state_of(causal) == before

    view = FlowView(seq2seq_explanation("t5"), selected_method="grad_attention")
    before = state_of(view)
    with pytest.raises(traitlets.TraitError, match="'decodr' is not a stack; use 'encoder' or"):
        view.stack = "decodr"
    with pytest.raises(traitlets.TraitError):
        view.stack = 1  # type: ignore[assignment]
    assert state_of(view) == before
    # A method the decoder stack cannot draw: refused with the reason and the fix.
    with pytest.raises(traitlets.TraitError, match="encoder only; use stack='encoder'"):
        FlowView(seq2seq_explanation("t5"), stack="decoder", selected_method="grad_attention")
    with pytest.raises(ModelNotSupportedError, match="encoder only"):
        compute_paths(seq2seq_explanation("t5"), "grad_attention", 1, 0, stack="decoder")
    with pytest.raises(ModelNotSupportedError, match="needs an encoder–decoder"):
        compute_paths(causal_explanation(), "rollout", 1, 0, stack="decoder")

    # A decoder too long to draw: the switch is refused before anything changes.
    short = seq2seq_explanation("t5", decoder_text=SOURCE + " " + SOURCE)
    assert len(short.decoder_tokens) > len(short.tokens)
    monkeypatch.setattr(flow_module, "MAX_TOKENS", len(short.tokens))
    view = FlowView(short)
    before = state_of(view)
    with pytest.raises(TooLargeError, match=r"\(decoder stack\)"):
        view.stack = "decoder"
    assert state_of(view) == before


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_decoder_raw_rollout_and_flow_match_a_computation_by_hand(family: str) -> None:
    exp = seq2seq_explanation(family)
    w, adjusted = decoder_maps(exp)
    layers, m = w.shape[0], w.shape[-1]
    q = exp.query_index
    view = FlowView(exp, stack="decoder")
    rolled = np.eye(m)
    for layer in range(layers):
        rolled = adjusted[layer] @ rolled

    for t in (q, 2):  # the query, and a middle position: causal, so nothing after it
        roll = ask(view, "rollout", layers, t)
        assert np.allclose(roll["nodes"][0], rolled[t], atol=1e-6)
        assert np.all(roll["nodes"][0][t + 1 :] == 0)
        assert np.allclose(roll["edges"][-1][t], adjusted[-1][t], atol=1e-6)
        raw = ask(view, "raw", layers, t)
        assert np.allclose(raw["nodes"][0], w[-1][t], atol=1e-6)
    up = ask(view, "rollout", 0, 1)
    assert np.allclose(up["nodes"][layers], rolled[:, 1], atol=1e-6)

    # Attention flow in a two-layer graph: the paths q → k → j are disjoint,
    # so the max flow to j is Σ_k min(Â_2[q, k], Â_1[k, j]); normalised over j.
    assert layers == 2
    flows = np.minimum(adjusted[1][q][:, None], adjusted[0]).sum(axis=0)
    flow = ask(view, "flow", layers, q)
    assert np.allclose(flow["nodes"][0], flows / flows.sum(), atol=1e-6)
    assert np.allclose(flow["edges"].astype(np.float64).sum(axis=(1, 2)), 1.0, atol=1e-5)
    assert np.allclose(view.paths("flow", layers, q).scores_down, flows / flows.sum(), atol=1e-9)


def test_switching_stacks_from_python() -> None:
    exp = seq2seq_explanation("t5")
    layers_dec, m = exp.decoder_attentions.shape[0], len(exp.decoder_tokens)
    view = FlowView(exp, selected_method="grad_attention")
    view.select(1, 3)
    version = view.version
    encoder_rollout = view.paths("rollout", exp.num_layers, 0)

    view.stack = "decoder"
    # New data and version; the decoder's query at its top; grad_attention is
    # not offered there, so rollout is drawn.
    assert view.version == version + 1 and view.tokens == exp.decoder_tokens
    assert view.shape == [layers_dec, m] and view.query_index == exp.query_index
    assert (view.selected_layer, view.selected_token) == (layers_dec, exp.query_index)
    assert view.selected_method == "rollout" and view.methods == ["raw", "rollout", "flow"]
    assert view.selection is not None and view.selection["text"] == exp.decoder_tokens[-1]
    view.selected_method = "flow"

    view.stack = "encoder"
    assert view.tokens == exp.tokens and view.version == version + 2
    assert view.selected_method == "flow" and "grad_attention" in view.methods
    assert (view.selected_layer, view.selected_token) == (exp.num_layers, -1)
    again = view.paths("rollout", exp.num_layers, 0)
    assert np.array_equal(again.nodes, encoder_rollout.nodes)

    # A new explanation keeps the stack where it has one, else "encoder".
    view.stack = "decoder"
    bart = seq2seq_explanation("bart")
    view.set_explanation(bart)
    assert view.stack == "decoder" and view.tokens == bart.decoder_tokens
    view.set_explanation(causal_explanation())
    assert view.stack == "encoder" and view.stacks == ["encoder"]
    assert view.tokens == causal_explanation().tokens


def test_selected_method_is_the_name_and_method_still_works_with_a_warning() -> None:
    """The drawn method is ``selected_method`` (beside ``methods``); ``method=``,
    ``view.method`` and ``set_explanation(method=)`` warn, at the caller, and do the same."""
    exp = encoder_explanation()
    new = FlowView(exp, selected_method="flow")
    with pytest.warns(DeprecationWarning, match="method= is deprecated.*use selected_method=") as w:
        old = FlowView(exp, method="flow")
    assert [r.filename for r in w if r.category is DeprecationWarning] == [__file__]
    assert old.selected_method == new.selected_method == "flow"
    np.testing.assert_array_equal(old.paths().nodes, new.paths().nodes)
    assert old.get_state(["selected_method"]) == {"selected_method": "flow"}
    with pytest.warns(DeprecationWarning, match=r"\.method is deprecated.*use \.selected_method"):
        assert old.method == "flow"
    with pytest.warns(DeprecationWarning, match=r"\.method is deprecated"):
        old.method = "raw"
    assert old.selected_method == "raw"
    with pytest.warns(DeprecationWarning, match="set_explanation: the keyword method="):
        old.set_explanation(exp, method="grad_attention")
    assert old.selected_method == "grad_attention"
    with pytest.raises(TypeError, match=r"give selected_method= only"):
        FlowView(exp, selected_method="raw", method="raw")
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['methods'\]"):
        old.set_explanation(exp, methods=["raw"])
    assert "method" not in FlowView.class_trait_names(sync=True)
