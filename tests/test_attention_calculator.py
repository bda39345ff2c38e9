"""AttentionCalculator's widget model (no browser): traits, the steps computed by
attnwidget.teach, arrays as float64 buffers, refused inputs keeping the last good
steps, the page's edits, and one head of the demo encoder against a hand
computation with the model's own weights."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch
from ipywidgets.widgets.widget import _remove_buffers

import attnwidget
from attnwidget import teach
from attnwidget.errors import InputError, ModelNotSupportedError
from attnwidget.views import AttentionCalculator
from attnwidget.views.core.standalone import widget_payload
from attnwidget.views.teach._traits import from_wire, to_wire
from attnwidget.views.teach.calculator import INPUTS, STEPS


def steps_of(calc: AttentionCalculator) -> dict[str, Any]:
    return {name: getattr(calc, name) for name in STEPS}


def same_steps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(
        (a[n] is None and b[n] is None) or np.array_equal(a[n], b[n], equal_nan=True) for n in STEPS
    )


class RecordingComm:
    """A comm with a kernel (so ipywidgets sends updates) that records them."""

    kernel = object()
    comm_id = "calculator-test"

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def on_msg(self, _callback: Any) -> None:
        pass

    def send(self, data: Any = None, buffers: Any = None, **_: Any) -> None:
        self.sent.append(data)

    def close(self, *_: Any, **__: Any) -> None:
        pass


def page_edit(calc: AttentionCalculator, **changes: Any) -> None:
    """What the page sends: arrays as {dtype, shape, data} with memoryview bytes."""
    state = {
        name: (to_wire(np.asarray(value, np.float64)) if name in ("q", "k", "v", "W") else value)
        for name, value in changes.items()
    }
    for value in state.values():
        if isinstance(value, dict):
            value["data"] = memoryview(bytes(value["data"]))
    calc.set_state(state)


# ---- defaults, traits and the wire ------------------------------------------------


def test_default_example_is_scaled_dot_self_attention() -> None:
    calc = AttentionCalculator()
    assert calc.query_tokens == calc.key_tokens == ["the", "cat", "sat", "down"]
    assert calc.q.shape == calc.k.shape == (4, 3) and calc.v.shape == (4, 2)
    want = teach.attention(calc.q, calc.k, calc.v, "scaled_dot")
    np.testing.assert_array_equal(calc.weights, want.weights)
    np.testing.assert_array_equal(calc.output, want.output)
    np.testing.assert_allclose(calc.weights.sum(axis=1), 1.0)
    assert calc.gaussian is None and calc.local_weights is None and calc.positions is None
    assert calc.error == "" and calc.revision == 1 and calc.steps_info["version"] == 1
    assert calc.steps_info["score_kind"] == "scaled_dot" and calc.steps_info["d"] == 3
    assert "AttentionCalculator(q 4×3" in repr(calc)


def test_public_name_and_unknown_keywords() -> None:
    assert attnwidget.AttentionCalculator is AttentionCalculator
    assert "AttentionCalculator" in attnwidget.__all__
    with pytest.raises(TypeError, match="mask_knd"):
        AttentionCalculator(mask_knd="causal")


def test_arrays_travel_as_float64_buffers_never_json_floats() -> None:
    calc = AttentionCalculator(mask_kind="causal")
    state, paths, buffers = _remove_buffers(calc.get_state())
    assert ["q", "data"] in paths and ["masked_scores", "data"] in paths
    assert state["q"] == {"dtype": "float64", "shape": [4, 3]}

    def floats(value: Any) -> list[Any]:
        if isinstance(value, dict):
            return [f for v in value.values() for f in floats(v)]
        if isinstance(value, list):
            return [value] if any(isinstance(x, float) for x in value) else []
        return []

    assert floats(state) == []  # no list of floats anywhere in the JSON part
    json.dumps(state, allow_nan=False)  # −∞ of the masked scores is in the bytes only
    masked = from_wire(
        {**state["masked_scores"], "data": buffers[paths.index(["masked_scores", "data"])]}
    )
    np.testing.assert_array_equal(masked, calc.masked_scores)
    assert np.isneginf(masked[0, 1])


def test_from_wire_refuses_malformed_arrays() -> None:
    import traitlets

    good = to_wire(np.ones((2, 2)))
    for bad in (
        {**good, "dtype": "float32"},
        {**good, "shape": [3, 2]},
        {**good, "shape": [-1]},
        {**good, "data": "abc"},
        [1.0, 2.0],
    ):
        with pytest.raises(traitlets.TraitError):
            from_wire(bad)


# ---- every input recomputes, as attnwidget.teach computes ---------------------------


@pytest.mark.parametrize("kind", teach.SCORE_KINDS)
def test_every_score_kind_matches_teach(kind: str) -> None:
    calc = AttentionCalculator(score_kind=kind, beta=2.0)
    params = {name: getattr(calc, name) for name in teach.scores.SCORE_PARAMS[kind]}
    if kind == "cosine":
        params["beta"] = 2.0
    want = teach.attention(calc.q, calc.k, calc.v, kind, **params)
    np.testing.assert_array_equal(calc.scores, want.scores)
    np.testing.assert_array_equal(calc.output, want.output)
    assert calc.steps_info["score_kind"] == kind


def test_mask_kinds_window_lengths_and_temperature() -> None:
    calc = AttentionCalculator()
    q, k, v = calc.q, calc.k, calc.v
    calc.mask_kind = "causal"
    np.testing.assert_array_equal(calc.steps.mask, teach.attention_mask(4, 4, "causal"))
    calc.set_inputs(mask_kind="padding", lengths=2)
    assert (
        np.isneginf(calc.masked_scores[:, 2:]).all()
        and np.isfinite(calc.masked_scores[:, :2]).all()
    )
    calc.set_inputs(mask_kind="local", window=1)
    np.testing.assert_array_equal(calc.steps.mask, teach.attention_mask(4, 4, "local", window=1))
    calc.mask_kind = "local-m"
    np.testing.assert_array_equal(calc.steps.mask, teach.attention_mask(4, 4, "local-m", window=1))
    calc.mask_kind = "local-p"
    alignment = teach.local_p_alignment(q, 4, 1, calc.W_p, calc.v_p)
    want = teach.attention(q, k, v, "scaled_dot", alignment=alignment)
    np.testing.assert_array_equal(calc.gaussian, want.gaussian)
    np.testing.assert_array_equal(calc.local_weights, want.local_weights)
    np.testing.assert_array_equal(calc.positions, want.positions)
    np.testing.assert_array_equal(calc.output, want.output)
    assert calc.steps_info["sigma"] == 0.5
    calc.set_inputs(mask_kind="none", temperature=0.25)
    want = teach.attention(q, k, v, "scaled_dot", temperature=0.25)
    np.testing.assert_array_equal(calc.weights, want.weights)


def test_a_kind_whose_W_does_not_fit_gets_its_default() -> None:
    calc = AttentionCalculator(q=np.ones((2, 3)), k=np.eye(5, 3), v=np.ones((5, 1)))
    calc.score_kind = "location"  # W (d, d) = (3, 3) cannot be (n, d) = (5, 3)
    assert calc.W.shape == (5, 3) and calc.error == ""
    calc.score_kind = "general"
    assert calc.W.shape == (3, 3) and calc.error == ""
    custom = np.arange(9.0).reshape(3, 3)
    calc.W = custom
    calc.score_kind = "dot"
    calc.score_kind = "general"  # a W that fits is kept
    np.testing.assert_array_equal(calc.W, custom)


def test_set_inputs_computes_once_and_reset_params_fits_new_shapes() -> None:
    calc = AttentionCalculator(score_kind="additive")
    before = calc.revision
    calc.set_inputs(q=np.ones((2, 5)), k=np.ones((3, 5)), v=np.ones((3, 2)))
    assert calc.revision == before + 1
    assert "W1" in calc.error  # (h, 3) no longer fits d = 5
    calc.reset_params()
    assert calc.error == "" and calc.weights.shape == (2, 3)
    with pytest.raises(TypeError, match="nope"):
        calc.set_inputs(nope=1)


# ---- refused inputs: the error is shown and the last good steps stay -----------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"q": np.ones((4, 2))}, "d must match"),
        ({"k": [[1.0, 0.0, float("nan")]] * 4}, "NaN"),
        ({"mask_kind": "local", "window": 2}, "wider than the sequence"),
        ({"temperature": 0.0}, "temperature must be > 0"),
        ({"v": np.ones((3, 2))}, "one value row per key"),
        ({"mask_kind": "padding", "lengths": 9}, "more than the n=4 keys"),
    ],
)
def test_refused_input_sets_error_and_keeps_last_steps(
    change: dict[str, Any], message: str
) -> None:
    calc = AttentionCalculator()
    good = steps_of(calc)
    info, revision = dict(calc.steps_info), calc.revision
    calc.set_inputs(**change)
    assert message in calc.error
    assert calc.revision == revision + 1
    assert same_steps(steps_of(calc), good) and calc.steps_info == info
    fresh = AttentionCalculator()
    calc.set_inputs(q=fresh.q, k=fresh.k, v=fresh.v)
    calc.set_inputs(mask_kind="none", temperature=1.0, window=1, lengths=None)
    assert calc.error == "" and calc.steps_info["version"] == info["version"] + 1


def test_refused_input_at_construction_raises() -> None:
    with pytest.raises(InputError, match="d must match"):
        AttentionCalculator(q=np.ones((2, 3)), k=np.ones((2, 4)))
    with pytest.raises(InputError, match="NaN"):
        AttentionCalculator(q=[[1.0, float("nan")]])


def test_arrays_of_the_wrong_rank_get_an_error_naming_the_shape() -> None:
    with pytest.raises(InputError, match="q must be a 2-D array"):
        AttentionCalculator(q=[1.0, 0.0, 1.0])
    with pytest.raises(InputError, match="location scores need the keys k as a 2-D array"):
        AttentionCalculator(q=np.ones((2, 3)), k=np.float64(1.0), score_kind="location")


def test_page_edits_compute_once_and_nan_from_the_page_is_explained() -> None:
    calc = AttentionCalculator()
    calc.comm = RecordingComm()
    sent = calc.comm.sent
    q = calc.q.copy()
    q[1, 2] = 0.5
    revision = calc.revision
    page_edit(calc, q=q, score_kind="dot")
    assert calc.revision == revision + 1  # two traits, one computation
    np.testing.assert_array_equal(calc.q, q)
    np.testing.assert_array_equal(calc.scores, q @ calc.k.T)
    updates = [m for m in sent if m.get("method") == "update"]
    assert len(updates) == 1 and {"scores", "weights", "revision"} <= set(updates[0]["state"])
    good = steps_of(calc)
    q[0, 0] = float("nan")
    page_edit(calc, q=q)
    assert "q contains NaN" in calc.error and np.isnan(calc.q[0, 0])
    assert same_steps(steps_of(calc), good)
    revision = calc.revision
    page_edit(calc, score_kind="no such kind")  # refused by the trait: logged, state resent
    assert calc.score_kind == "dot"
    assert calc.revision == revision + 1  # the page still hears an answer


# ---- one head of a real model ------------------------------------------------------


def test_from_model_matches_a_hand_computation_with_the_models_weights() -> None:
    model, tokenizer = attnwidget.demo.load("sva-encoder", attn_implementation="eager")
    text = "the keys to the cabinet are here"
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    layer, head = 1, 1
    calc = AttentionCalculator.from_model(model, tokenizer, text, layer=layer, head=head)
    # The model is left as it was: no hook, same mode, same weights.
    assert all(not m._forward_hooks for m in model.modules())
    assert not model.training
    assert all(torch.equal(p, params[n]) for n, p in model.named_parameters())

    encoded = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**encoded, output_hidden_states=True, output_attentions=True)
    hidden = out.hidden_states[layer][0].double()  # what layer `layer` reads
    attn = model.base_model.encoder.layer[layer].attention.self
    heads = model.config.num_attention_heads
    size = model.config.hidden_size // heads
    cols = slice(head * size, (head + 1) * size)

    def project(linear: torch.nn.Linear) -> np.ndarray:
        w, b = linear.weight.double(), linear.bias.double()
        return (hidden @ w.T + b)[:, cols].detach().numpy()

    q, k, v = project(attn.query), project(attn.key), project(attn.value)
    np.testing.assert_allclose(calc.q, q, atol=1e-5)
    np.testing.assert_allclose(calc.k, k, atol=1e-5)
    np.testing.assert_allclose(calc.v, v, atol=1e-5)
    scores = q @ k.T / np.sqrt(size)
    weights = np.exp(scores - scores.max(1, keepdims=True))
    weights /= weights.sum(1, keepdims=True)
    np.testing.assert_allclose(calc.weights, weights, atol=1e-6)
    np.testing.assert_allclose(calc.weights, out.attentions[layer][0, head].double(), atol=1e-5)
    np.testing.assert_allclose(calc.output, weights @ v, atol=1e-5)
    assert calc.query_tokens == tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    assert calc.mask_kind == "none" and calc.score_kind == "scaled_dot"
    assert f"layer {layer}, head {head}" in calc.caption
    with pytest.raises(InputError, match="out of range"):
        AttentionCalculator.from_model(model, tokenizer, text, layer=99)


def test_from_model_refuses_a_model_without_qkv_projections() -> None:
    class Bare(torch.nn.Module):
        config = type("C", (), {"num_attention_heads": 1})()

    with pytest.raises(ModelNotSupportedError, match="query, key and value"):
        AttentionCalculator.from_model(Bare(), None, "x")


# ---- saved pages -------------------------------------------------------------------


def test_to_html_holds_the_state_as_buffers() -> None:
    calc = AttentionCalculator(mask_kind="causal", query_tokens=["<b>x</b>", "b", "c", "d"])
    page = calc.to_html(title="calc")
    assert "data-attnwidget-state" in page and "<b>x</b>" not in page
    payload = widget_payload(calc)
    assert ["weights", "data"] in [b["path"] for b in payload["buffers"]]
    assert payload["state"]["_view"] == "calculator"
    assert set(INPUTS) <= set(payload["state"])
