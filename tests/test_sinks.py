"""``ignore_keys``: attention sinks left out of every row, rows renormalised.

The numbers are checked against the renormalisation written out here in
loops (not the package's function) and each method written out on top of it,
on real tiny Hugging Face models: a BERT-style encoder ("special": [CLS] and
[SEP]), GPT-2 ("first", a list) and a Llama-style LM ("special": <s>). With
no key left out every number is the default run's, bit for bit. The record
(``ignored_keys``) survives pickling, copies and the views' saved pages.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import warnings
from typing import Any

import numpy as np
import pytest
from flow_oracle import reference_flows
from test_export import state_payloads
from tiny_models import build

import attnwidget
from attnwidget.errors import InputError
from attnwidget.methods.sinks import renormalise_keys
from attnwidget.results.explanation import Explanation

TEXT = "the cat sat on the mat"
METHODS = ["raw", "rollout", "flow", "grad_attention"]

# -- the maths written out ------------------------------------------------------


def renormalised_by_hand(attentions: np.ndarray, keys: list[int]) -> np.ndarray:
    """Every row without ``keys``, divided by what is left; a row with nothing left stays."""
    att = np.asarray(attentions, dtype=np.float64)
    out = att.copy()
    layers, heads, rows, n = att.shape
    for layer in range(layers):
        for head in range(heads):
            for i in range(rows):
                rest = sum(att[layer, head, i, j] for j in range(n) if j not in keys)
                if rest > 0:
                    for j in range(n):
                        out[layer, head, i, j] = 0.0 if j in keys else att[layer, head, i, j] / rest
    return out


def raw_by_hand(att: np.ndarray, query: int) -> np.ndarray:
    return att[-1, :, query, :].mean(axis=0)


def residual_maps(att: np.ndarray) -> np.ndarray:
    """Â_l = 0.5·W_l + 0.5·I, rows normalised: the residual term is the paper's, unchanged."""
    n = att.shape[-1]
    maps = 0.5 * att.mean(axis=1) + 0.5 * np.eye(n)
    return maps / maps.sum(axis=-1, keepdims=True)


def rollout_by_hand(att: np.ndarray, query: int) -> np.ndarray:
    maps = residual_maps(att)
    product = maps[0]
    for layer in range(1, len(maps)):
        product = maps[layer] @ product  # later layer on the left
    return product[query]


def flow_by_hand(att: np.ndarray, query: int) -> np.ndarray:
    raw = reference_flows(residual_maps(att), [query])[0]  # networkx, Edmonds–Karp
    return raw / raw.sum()


def grad_attention_by_hand(att: np.ndarray, grads: np.ndarray, query: int) -> np.ndarray:
    """Chefer et al. (2021): R = I, R ← R + E_h[(∇A ⊙ A)^+]·R from the first layer up,
    with A the renormalised attention and ∇A the gradient of the model's own attention."""
    n = att.shape[-1]
    relevance = np.eye(n)
    for layer in range(att.shape[0]):
        weighted = np.clip(grads[layer] * att[layer], 0.0, None).mean(axis=0)
        relevance = relevance + weighted @ relevance
    return relevance[query]


# -- the numbers on real models -------------------------------------------------


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    return {family: build(family) for family in ("bert-cls", "gpt2-lm", "llama-lm")}


CASES = [
    # family, ignore_keys, the tokens left out
    ("bert-cls", "special", ["[CLS]", "[SEP]"]),
    ("bert-cls", [0, -1], ["[CLS]", "[SEP]"]),
    ("bert-cls", [3], ["a"]),
    ("gpt2-lm", "first", ["the"]),
    ("gpt2-lm", [0, 2, -2], ["the", "at", "m"]),
    ("llama-lm", "special", ["<s>"]),
    ("llama-lm", "first", ["<s>"]),
]


@pytest.mark.parametrize(("family", "ignore", "left_out"), CASES)
def test_methods_read_the_renormalised_rows(models, family, ignore, left_out) -> None:
    model, tokenizer = models[family]
    plain = attnwidget.explain(model, tokenizer, TEXT, methods=METHODS)
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=METHODS, ignore_keys=ignore)
    keys = exp.ignored_keys
    assert [exp.tokens[k] for k in keys] == left_out
    assert keys == sorted(keys) and all(0 <= k < len(exp.tokens) for k in keys)
    # The record keeps the model's own attention and gradient (the identity is recoverable).
    assert np.array_equal(exp.attentions, plain.attentions)
    assert np.array_equal(exp.attention_grads, plain.attention_grads)

    att = renormalised_by_hand(exp.attentions, keys)
    np.testing.assert_allclose(exp.renormalised_attentions, att, rtol=1e-6, atol=1e-7)
    q = exp.query_index
    grads = np.asarray(exp.attention_grads, dtype=np.float64)
    expected = {
        "raw": raw_by_hand(att, q),
        "rollout": rollout_by_hand(att, q),
        "flow": flow_by_hand(att, q),
        "grad_attention": grad_attention_by_hand(att, grads, q),
    }
    for name, values in expected.items():
        np.testing.assert_allclose(exp.scores[name], values, rtol=1e-5, atol=1e-7, err_msg=name)
    # Left-out keys get no raw attention; rollout and grad_attention reach one only
    # through its own residual (the query itself).
    others = [k for k in keys if k != q]
    assert not exp.scores["raw"][keys].any()
    assert not exp.scores["rollout"][others].any()
    assert not exp.scores["grad_attention"][others].any()
    # ... and it matters: the left-out keys held weight in the default run.
    assert plain.scores["raw"][keys].sum() > 0.01
    assert not np.allclose(plain.scores["rollout"], exp.scores["rollout"])


def test_grad_attention_multiplies_the_models_gradient_by_the_renormalised_rows(models) -> None:
    # Not the gradient of the renormalised rows: dy/dA of the model's own A, times Ã.
    model, tokenizer = models["bert-cls"]
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["grad_attention"], ignore_keys=[0])
    att, grads = renormalised_by_hand(exp.attentions, [0]), exp.attention_grads
    assert np.abs(grads).max() > 0
    mine = attnwidget.grad_attention(att, grads)[exp.query_index]
    np.testing.assert_allclose(exp.scores["grad_attention"], mine, rtol=1e-6, atol=1e-9)
    with_own = attnwidget.grad_attention(exp.attentions, grads)[exp.query_index]
    assert not np.allclose(mine, with_own, rtol=1e-6, atol=1e-9)


def test_a_row_with_every_visible_key_left_out_stays_as_it_was(models) -> None:
    # Row 0 of a causal LM sees only key 0: with "first" nothing is left to renormalise over.
    model, tokenizer = models["gpt2-lm"]
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["raw"], ignore_keys="first")
    maps = exp.renormalised_attentions
    assert maps is not None and np.isfinite(maps).all()
    assert np.array_equal(maps[:, :, 0], exp.attentions[:, :, 0])
    assert np.allclose(maps[:, :, 1:, 0], 0.0)
    np.testing.assert_allclose(maps[:, :, 1:].sum(axis=-1), 1.0, rtol=1e-5)
    assert exp.scores["raw"][0] == 0.0  # the last row's key 0 is gone


def test_renormalise_keys_on_its_own() -> None:
    att = np.array([[[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]]], dtype=np.float32)
    out = renormalise_keys(att, [0])
    assert out.dtype == np.float32 and out.shape == att.shape and np.isfinite(out).all()
    assert np.array_equal(out[0, 0, 0], att[0, 0, 0])  # nothing left: unchanged, not NaN
    np.testing.assert_allclose(out[0, 0, 1], [0.0, 1.0, 0.0])
    np.testing.assert_allclose(out[0, 0, 2], [0.0, 0.375, 0.625])
    np.testing.assert_allclose(out, renormalised_by_hand(att, [0]), rtol=1e-6)
    assert renormalise_keys(att, []) is att  # the identity: the very array
    assert renormalise_keys(att, [0, 1, 2]) is not att
    np.testing.assert_array_equal(renormalise_keys(att, [0, 1, 2]), att)  # all left out


# -- nothing left out: every number unchanged -----------------------------------


def numbers(exp: Explanation) -> dict[str, Any]:
    """Every number an explanation holds, by name."""
    found: dict[str, Any] = {}
    for field in dataclasses.fields(exp):
        value = getattr(exp, field.name)
        if isinstance(value, np.ndarray):
            found[field.name] = value
        elif isinstance(value, dict):
            for name, inner in value.items():
                extras = inner.items() if isinstance(inner, dict) else [("", inner)]
                for key, item in extras:
                    if isinstance(item, (np.ndarray, float, int)):
                        found[f"{field.name}.{name}.{key}"] = item
    return found


@pytest.mark.parametrize("family", ["bert-cls", "gpt2-lm"])
@pytest.mark.parametrize("off", [None, []])
def test_off_changes_no_number(models, family, off) -> None:
    model, tokenizer = models[family]
    names = [*METHODS, "input_x_gradient", "attention_norm"]
    default = attnwidget.explain(model, tokenizer, TEXT, methods=names)
    given = attnwidget.explain(model, tokenizer, TEXT, methods=names, ignore_keys=off)
    assert given.ignored_keys == [] == default.ignored_keys
    assert given.renormalised_attentions is given.attentions
    mine, theirs = numbers(given), numbers(default)
    assert mine.keys() == theirs.keys() and "scores.flow." in mine
    for name, value in theirs.items():
        assert np.array_equal(mine[name], value), name  # bit for bit
    assert repr(given) == repr(default)
    # The identity, written out: no key left out leaves every row as it is (softmax rows
    # sum to 1 up to rounding; the package does not divide at all).
    by_hand = renormalised_by_hand(default.attentions, [])
    np.testing.assert_allclose(by_hand, default.attentions, rtol=1e-6)


def test_off_changes_nothing_drawn(models) -> None:
    model, tokenizer = models["bert-cls"]
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["raw"])
    view = attnwidget.HeadView(exp)
    assert np.array_equal(view.attention.matrix("self").weights, exp.attentions)
    assert "note" not in view.matrices[0]
    assert "left out" not in attnwidget.FlowView(exp).caption
    assert "left out" not in attnwidget.AttentionMatrixView(exp).caption


# -- bad input ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("last", "'first'"),
        ("FIRST", "not a choice"),
        ([0, 99], "out of range for 14 tokens"),
        ([-15], "out of range"),
        ([0.5], "must be an int"),
        (["0"], "must be an int"),
        ([True], "must be an int"),
        (0, "pass a list of key positions"),
        (np.zeros((2, 2), dtype=int), "flat list"),
        ({0: 1}, "is a dict"),
    ],
)
def test_bad_ignore_keys_are_refused_before_the_model_runs(models, value, words) -> None:
    model, tokenizer = models["bert-cls"]
    calls = []
    hook = model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        with pytest.raises(InputError, match=words) as error:
            attnwidget.explain(model, tokenizer, TEXT, ignore_keys=value)
    finally:
        hook.remove()
    assert "ignore_keys" in str(error.value)
    assert not calls  # refused before any forward pass


def test_out_of_range_names_the_valid_positions(models) -> None:
    model, tokenizer = models["gpt2-lm"]
    with pytest.raises(InputError) as error:
        attnwidget.explain(model, tokenizer, TEXT, ignore_keys=[13])
    message = str(error.value)
    assert "0 … 12" in message and "-13 … -1" in message and "exp.tokens" in message


def test_where_ignore_keys_does_not_apply(models) -> None:
    model, tokenizer = models["bert-cls"]
    with pytest.raises(InputError, match="keep='rows' keeps only reductions"):
        attnwidget.explain(model, tokenizer, TEXT, ignore_keys="special", keep="rows")
    with pytest.raises(InputError, match="ignore_keys is an argument of explain"):
        attnwidget.explain(
            model, tokenizer, TEXT, methods=["raw"], method_options={"raw": {"ignore_keys": [0]}}
        )
    t5, t5_tokenizer = build("t5")
    with pytest.raises(InputError, match="not supported for encoder–decoder models"):
        attnwidget.explain(t5, t5_tokenizer, TEXT, ignore_keys="first")
    attnwidget.explain(t5, t5_tokenizer, TEXT, methods=["raw"], ignore_keys=[])  # nothing: fine
    with pytest.raises(InputError, match="'special' needs the tokenizer's special tokens"):
        Explanation.from_attentions(
            np.full((1, 1, 3, 3), 1 / 3), ["a", "b", "c"], ignore_keys="special"
        )
    with pytest.raises(InputError, match="list of key positions"):
        Explanation(tokens=["a", "b"], attentions=np.full((1, 1, 2, 2), 0.5), ignored_keys="first")


def test_special_without_special_tokens_warns(models) -> None:
    model, tokenizer = models["gpt2-lm"]  # GPT-2's tokenizer adds no special token
    with pytest.warns(UserWarning, match="left no key out") as caught:
        exp = attnwidget.explain(model, tokenizer, TEXT, methods=["raw"], ignore_keys="special")
    (mine,) = [w for w in caught if "left no key out" in str(w.message)]  # once per call
    assert mine.filename == __file__  # points at the caller's line
    assert exp.ignored_keys == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        attnwidget.explain(model, tokenizer, TEXT, methods=["raw"], ignore_keys="first")


# -- the record and where it goes ------------------------------------------------


def test_the_record_survives_copies_and_pickling(models) -> None:
    model, tokenizer = models["bert-cls"]
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=METHODS, ignore_keys="special")
    assert exp.ignored_keys == [0, len(exp.tokens) - 1]
    assert "ignored_keys=[0, 13]" in repr(exp)
    expected = exp.renormalised_attentions
    assert exp.renormalised_attentions is expected  # made once
    for other in (
        pickle.loads(pickle.dumps(exp)),
        copy.deepcopy(exp),
        copy.copy(exp),
        dataclasses.replace(exp),
    ):
        assert other.ignored_keys == exp.ignored_keys
        assert np.array_equal(other.attentions, exp.attentions)
        assert np.array_equal(other.renormalised_attentions, expected)
        assert all(np.array_equal(other.scores[m], exp.scores[m]) for m in METHODS)
    # The constructor checks what it is given: negative positions from the end, sorted, once.
    again = Explanation(tokens=exp.tokens, attentions=exp.attentions, ignored_keys=[-1, 0, 0])
    assert again.ignored_keys == [0, 13]
    with pytest.raises(InputError, match="out of range"):
        Explanation(tokens=exp.tokens, attentions=exp.attentions, ignored_keys=[14])


def test_from_attentions_takes_the_option() -> None:
    rng = np.random.default_rng(0)
    weights = rng.random((2, 3, 5, 5)) ** 3
    att = weights / weights.sum(-1, keepdims=True)
    tokens = ["[CLS]", "a", "b", "c", "[SEP]"]
    exp = Explanation.from_attentions(att, tokens, methods=["raw", "rollout"], ignore_keys=[0, -1])
    assert exp.ignored_keys == [0, 4]
    by_hand = renormalised_by_hand(att.astype(np.float32), [0, 4])
    np.testing.assert_allclose(exp.scores["raw"], raw_by_hand(by_hand, 0), rtol=1e-6)
    np.testing.assert_allclose(exp.scores["rollout"], rollout_by_hand(by_hand, 0), rtol=1e-6)
    first = Explanation.from_attentions(att, tokens, methods=["raw"], ignore_keys="first")
    assert first.ignored_keys == [0]


def test_the_views_draw_the_renormalised_rows_and_say_so(models) -> None:
    model, tokenizer = models["bert-cls"]
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=METHODS, ignore_keys="special")
    maps = renormalised_by_hand(exp.attentions, exp.ignored_keys).astype(np.float32)
    note = "keys #0 '[CLS]', #13 '[SEP]' left out, rows renormalised"

    head = attnwidget.HeadView(exp)
    np.testing.assert_allclose(head.attention.matrix("self").weights, maps, rtol=1e-6, atol=1e-7)
    assert head.matrices[0]["note"] == note
    np.testing.assert_allclose(head.wire_attention(), maps, rtol=2.0**-10, atol=2.0**-24)
    model_view = attnwidget.ModelView(exp)
    assert model_view.matrices[0]["note"] == note

    flow = attnwidget.FlowView(exp)
    assert flow.caption.endswith(f"Attention with {note}.")
    np.testing.assert_allclose(flow._fused, maps.mean(axis=1), rtol=1e-6, atol=1e-7)
    paths = flow.paths("rollout", layer=2, token=exp.query_index)
    assert paths.method == "rollout"

    matrix = attnwidget.AttentionMatrixView(exp)
    assert matrix.caption.endswith(f"; {note}")
    np.testing.assert_allclose(matrix.current_matrix(), maps[-1].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(exp.fused_attention(1), maps[1].mean(axis=0), rtol=1e-6)

    # The saved pages carry the note (the record of which keys were left out).
    for view in (head, model_view):
        (payload,) = state_payloads(view.to_html())
        assert payload["state"]["matrices"][0]["note"] == note
    (payload,) = state_payloads(flow.to_html())
    assert note in payload["state"]["caption"]
    (payload,) = state_payloads(matrix.to_html())
    assert note in payload["state"]["caption"]


def test_the_methods_maps_of_attention_norm_come_from_the_renormalised_rows(models) -> None:
    # ‖α_ij f(x_j)‖ = α_ij ‖f(x_j)‖: the same norms, the renormalised weights.
    model, tokenizer = models["bert-cls"]
    names = ["attention_norm", "chefer2021", "input_x_gradient"]
    plain = attnwidget.explain(model, tokenizer, TEXT, methods=names)
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=names, ignore_keys="special")
    keys = exp.ignored_keys
    att, own = renormalised_by_hand(exp.attentions, keys), plain.attentions.astype(np.float64)
    mine, theirs = exp.details["attention_norm"]["maps"], plain.details["attention_norm"]["maps"]
    assert not mine[..., keys].any()
    kept = [j for j in range(len(exp.tokens)) if j not in keys]
    ratio = theirs[..., kept] / own[..., kept]  # each key's ‖f(x_j)‖, in every row
    np.testing.assert_allclose(mine[..., kept], att[..., kept] * ratio, rtol=2e-5, atol=1e-6)
    # Methods that do not read the attention weights are not changed by the option.
    for name in ("chefer2021", "input_x_gradient"):
        assert np.array_equal(exp.scores[name], plain.scores[name]), name


def test_explain_generation_and_images_take_the_option(models) -> None:
    model, tokenizer = models["gpt2-lm"]
    gexp = attnwidget.explain_generation(
        model, tokenizer, TEXT, generated=[5, 6], methods=["raw", "rollout"], ignore_keys="first"
    )
    for step in gexp.steps:
        assert step.ignored_keys == [0]
        att = renormalised_by_hand(step.attentions, [0])
        np.testing.assert_allclose(
            step.scores["rollout"], rollout_by_hand(att, step.query_index), rtol=1e-5, atol=1e-8
        )
    with pytest.raises(InputError, match="out of range"):
        attnwidget.explain_generation(model, tokenizer, TEXT, generated=[5], ignore_keys=[40])

    from image_fixtures import picture
    from tiny_vision import build_vision

    vit, processor = build_vision("deit")  # [CLS] and the distillation token come first
    exp = attnwidget.explain(vit, processor, picture(), methods=["raw"], ignore_keys="special")
    assert exp.ignored_keys == exp.special_tokens == [0, 1]
    att = renormalised_by_hand(exp.attentions, [0, 1])
    expected = raw_by_hand(att, exp.query_index)
    expected[[0, 1]] = 0.0  # special tokens are not explained (their scores are 0)
    np.testing.assert_allclose(exp.scores["raw"], expected, rtol=1e-5, atol=1e-8)
    # ImageView's attention maps are the renormalised rows too (query row, then patches).
    maps = attnwidget.ImageView(exp)._maps
    drawn = maps.layer("attention", 1)[:, 0]  # (heads, patches): the query's row
    np.testing.assert_allclose(drawn, att[1][:, exp.query_index][:, maps.columns], rtol=1e-5)


def test_the_explorer_passes_the_option_to_every_explanation(models) -> None:
    model, tokenizer = models["bert-cls"]
    explorer = attnwidget.Explorer(model, tokenizer, TEXT, ignore_keys="special")
    exp = explorer.explanation
    assert exp is not None and exp.ignored_keys == [0, 13]
    assert explorer.views["head"].matrices[0]["note"].startswith("keys #0 '[CLS]'")
    assert "left out" in explorer.views["flow"].caption
    explorer.compute("flow")
    assert explorer.explanation is not None and explorer.explanation.ignored_keys == [0, 13]
    by_hand = flow_by_hand(renormalised_by_hand(exp.attentions, [0, 13]), exp.query_index)
    np.testing.assert_allclose(explorer.explanation.scores["flow"], by_hand, atol=1e-8)
    with pytest.raises(InputError, match="not a choice"):
        attnwidget.Explorer(model, tokenizer, TEXT, ignore_keys="sinks")
