"""effective_attention (Brunner et al., 2020) against a slow reference from the paper's
definition, its properties, its capture, and the views that show it."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_models import build
from value_reference import FAMILIES, LONG, explained, reference_values

import attnwidget
from attnwidget import demo
from attnwidget.errors import ModelNotSupportedError
from attnwidget.methods.effective_attention import RANK_EPS, effective_attention


def reference_effective(attentions: np.ndarray, values: np.ndarray) -> np.ndarray:
    """a − its component in null(Tᵀ), row by row; causal rows see keys 0 … i only."""
    num_layers, heads, n, _ = attentions.shape
    causal = not np.triu(attentions, k=1).any()
    out = np.zeros_like(attentions)
    for layer in range(num_layers):
        for head in range(heads):
            for i in range(n):
                keys = i + 1 if causal else n
                t = values[layer, head, :keys]  # (keys, d_v)
                u, s, _ = np.linalg.svd(t, full_matrices=True)
                rank = int((s > max(t.shape) * RANK_EPS * s[0]).sum())
                null = u[:, rank:]  # basis of the left null space of T
                a = attentions[layer, head, i, :keys]
                out[layer, head, i, :keys] = a - null @ (null.T @ a)
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_matches_the_reference_on_every_family(family: str) -> None:
    model, tokenizer = build(family)
    exp = explained(model, tokenizer, LONG, ["raw", "effective_attention"])
    attentions, values, _ = reference_values(model, exp.input_ids)
    assert attentions.shape[-1] > values.shape[-1]  # n > d_v: a nontrivial null space
    expected = reference_effective(attentions, values)
    got = exp.details["effective_attention"]["maps"]
    np.testing.assert_allclose(got, expected, atol=2e-5)
    # The null space is not trivial here, so effective attention is not attention.
    assert np.abs(got - exp.attentions).max() > 1e-2
    # The token scores are the query row of the last layer, heads averaged (as raw).
    np.testing.assert_allclose(
        exp.scores["effective_attention"], expected[-1].mean(0)[exp.query_index], atol=2e-5
    )


def test_matches_the_reference_on_the_demo_model() -> None:
    model, tokenizer = demo.load("sva-encoder")
    text = demo.sentences(1, seed=0)[0].text
    exp = explained(model, tokenizer, text, ["effective_attention"])
    attentions, values, _ = reference_values(model, exp.input_ids)
    np.testing.assert_allclose(
        exp.details["effective_attention"]["maps"],
        reference_effective(attentions, values),
        atol=2e-5,
    )


@pytest.mark.parametrize("family", ["bert-cls", "gpt2-lm"])
def test_equals_attention_when_the_null_space_is_trivial(family: str) -> None:
    # n ≤ d_v = 8 with distinct value rows: rank T = n, nothing to remove.
    model, tokenizer = build(family)
    exp = explained(model, tokenizer, "the cat", ["effective_attention"])
    assert len(exp.tokens) <= 8
    details = exp.details["effective_attention"]
    assert (details["null_dims"] == 0).all()
    np.testing.assert_allclose(details["maps"], exp.attentions, atol=1e-6)


def test_a_repeated_token_lowers_the_rank_even_when_n_is_small() -> None:
    # Llama's first layer reads token embeddings only (rotary positions touch q and k,
    # not v): equal tokens give equal value rows, so rank T < n although n ≤ d_v.
    model, tokenizer = build("llama-lm")
    exp = explained(model, tokenizer, " cat cat", ["effective_attention"])
    ids = list(exp.input_ids)  # <s> Ġc at Ġc at
    assert len(ids) == 5 and ids[1] == ids[3] and ids[2] == ids[4]
    null_dims = exp.details["effective_attention"]["null_dims"][0]
    assert (null_dims[:, :3] == 0).all()
    assert (null_dims[:, 3] == 1).all() and (null_dims[:, 4] == 2).all()
    maps = exp.details["effective_attention"]["maps"][0]
    # Two equal value rows' weights are interchangeable: only their sum is identified,
    # and effective attention splits it evenly.
    np.testing.assert_allclose(maps[:, 3, 1], maps[:, 3, 3], atol=1e-6)
    total = exp.attentions[0, :, 3, 1] + exp.attentions[0, :, 3, 3]
    np.testing.assert_allclose(2 * maps[:, 3, 1], total, atol=1e-6)


def _random_case(rng, n=12, d_v=5, heads=2, layers=2, causal=False):
    logits = rng.normal(size=(layers, heads, n, n))
    if causal:
        logits = np.where(np.tril(np.ones((n, n), bool)), logits, -np.inf)
    a = np.exp(logits - logits.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return a, rng.normal(size=(layers, heads, n, d_v))


@pytest.mark.parametrize("causal", [False, True])
def test_properties_that_hold(causal: bool) -> None:
    rng = np.random.default_rng(0)
    a, t = _random_case(rng, causal=causal)
    eff, null_dims = effective_attention(a, t)
    n = a.shape[-1]
    for i in range(n):
        keys = i + 1 if causal else n
        # The head's output is unchanged: a_eff T = a T (what identifiability means).
        np.testing.assert_allclose(
            eff[:, :, i, :keys, None].transpose(0, 1, 3, 2) @ t[:, :, :keys],
            a[:, :, i, :keys, None].transpose(0, 1, 3, 2) @ t[:, :, :keys],
            atol=1e-10,
        )
        assert (null_dims[:, :, i] == max(0, keys - t.shape[-1])).all()
    # A projection: never longer than the row, applying it twice changes nothing.
    assert (np.linalg.norm(eff, axis=-1) <= np.linalg.norm(a, axis=-1) + 1e-12).all()
    np.testing.assert_allclose(effective_attention(eff, t)[0], eff, atol=1e-10)
    if causal:  # nothing moves onto keys a row cannot see
        assert not np.triu(eff, k=1).any()


def test_rows_sum_to_one_only_when_the_ones_vector_is_in_the_column_space() -> None:
    rng = np.random.default_rng(1)
    a, t = _random_case(rng)
    eff, _ = effective_attention(a, t)
    # n > d_v and a generic T: the all-ones vector is not in col(T), rows do not sum to 1.
    assert np.abs(eff.sum(-1) - 1).max() > 1e-2
    # Negative entries appear: effective attention is no distribution.
    assert eff.min() < 0
    # With a constant column in T (1 ∈ col(T)) the sums are 1 again: 1ᵀ P a = 1ᵀ a.
    t[..., 0] = 3.0
    eff, _ = effective_attention(a, t)
    np.testing.assert_allclose(eff.sum(-1), 1.0, atol=1e-10)


@pytest.mark.parametrize("family", ["bert-cls", "gpt2-lm"])
def test_row_sums_on_real_models(family: str) -> None:
    # T = X W_V + 1 b_Vᵀ does not put the all-ones vector in col(T): rows with more keys
    # than d_v do not sum to 1, those with a trivial null space do.
    model, tokenizer = build(family)
    exp = explained(model, tokenizer, LONG, ["effective_attention"])
    details = exp.details["effective_attention"]
    sums = details["maps"].sum(-1)
    full = details["null_dims"] == 0
    np.testing.assert_allclose(sums[full], 1.0, atol=1e-5)
    assert np.abs(sums[~full] - 1).max() > 1e-3


def test_values_are_captured_only_when_asked_for_and_no_hook_stays() -> None:
    model, tokenizer = build("bert-cls")
    plain = attnwidget.explain(model, tokenizer, LONG, methods=["raw"])
    assert "effective_attention" not in plain.details
    value = model.bert.encoder.layer[0].attention.self.value
    attnwidget.explain(model, tokenizer, LONG, methods=["effective_attention"])
    assert not value._forward_hooks
    from attnwidget.capture import capture_ready
    from attnwidget.capture.run import Item, capture

    ids = tokenizer(LONG)["input_ids"]
    with capture_ready(model):
        (record,) = capture(
            model, tokenizer, [Item(ids, None, None)], kind="encoder", target=None, query_index=None
        )
        (with_values,) = capture(
            model,
            tokenizer,
            [Item(ids, None, None)],
            kind="encoder",
            target=None,
            query_index=None,
            values=True,
        )
    assert record.head_values is None and record.head_output_weights is None
    assert with_values.head_values.shape == (2, 4, len(ids), 8)
    assert with_values.head_output_weights.shape == (2, 4, 8, 32)
    np.testing.assert_array_equal(with_values.attentions, record.attentions)


def test_an_unread_layout_is_refused_naming_the_module() -> None:
    model, tokenizer = build("albert-cls")
    with pytest.raises(ModelNotSupportedError, match=r"albert\.encoder.*Attention"):
        attnwidget.explain(model, tokenizer, LONG, methods=["effective_attention"])


def test_plain_arrays_are_refused_with_the_way_to_get_values() -> None:
    a, _ = _random_case(np.random.default_rng(2))
    tokens = [str(i) for i in range(a.shape[-1])]
    with pytest.raises(ModelNotSupportedError, match=r"value vectors.*attnwidget\.explain"):
        attnwidget.Explanation.from_attentions(a, tokens, methods=["effective_attention"])


def test_it_reads_the_query_row_like_raw() -> None:
    info = attnwidget.method_info("effective_attention")
    assert "attention" in info.explains and info.signed
    assert "Brunner" in info.reference
    # Like raw, any row may be read on a classifier.
    model, tokenizer = build("bert-cls")
    exp = attnwidget.explain(model, tokenizer, LONG, methods=["effective_attention"], query_index=2)
    maps = exp.details["effective_attention"]["maps"]
    np.testing.assert_allclose(exp.scores["effective_attention"], maps[-1].mean(0)[2], atol=1e-6)


def test_the_views_show_it() -> None:
    model, tokenizer = build("gpt2-lm")
    exp = explained(model, tokenizer, LONG, ["raw", "effective_attention"])
    maps = exp.details["effective_attention"]["maps"]
    head = attnwidget.HeadView(exp, matrix="effective_attention", layer=1, selected_token=5)
    keys = [m["key"] for m in head.matrices]
    assert keys == ["self", "effective_attention"]
    assert head.matrices[1]["label"] == "Effective attention" and head.matrices[1]["causal"]
    np.testing.assert_allclose(head.selection["weights"], maps[1, :, 5], atol=1e-7)
    head.matrix = "self"
    np.testing.assert_allclose(head.selection["weights"], exp.attentions[1, :, 5], atol=1e-7)
    model_view = attnwidget.ModelView(exp, matrix="effective_attention")
    assert model_view.matrix == "effective_attention"
    flow = attnwidget.FlowView(exp, selected_method="effective_attention")
    assert "effective_attention" in flow.methods
    assert flow.signed[flow.methods.index("effective_attention")]
    top = flow.shape[0]
    np.testing.assert_allclose(
        flow.paths().scores_down, maps[-1].mean(0)[flow.selected_token], atol=1e-6
    )
    assert flow.selected_layer == top
    saliency = attnwidget.SaliencyView(exp)
    assert list(saliency.methods) == ["raw", "effective_attention"]
    np.testing.assert_allclose(saliency.score_matrix()[1], exp.scores["effective_attention"])
    # Without it, nothing changes.
    plain = explained(model, tokenizer, LONG, ["raw"])
    assert [m["key"] for m in attnwidget.HeadView(plain).matrices] == ["self"]
    assert "effective_attention" not in attnwidget.FlowView(plain).methods


def test_causal_rows_match_the_reference_past_full_rank() -> None:
    # Rows after T_{≤i} reaches rank d_v take the linear-solve path; a rank-deficient
    # head (two equal value rows, and a zero one) keeps taking the eigendecomposition.
    rng = np.random.default_rng(3)
    a, t = _random_case(rng, n=30, d_v=4, causal=True)
    t[1, 1, 7] = t[1, 1, 2]
    t[0, 0, :3] = 0.0
    eff, null_dims = effective_attention(a, t)
    np.testing.assert_allclose(eff, reference_effective(a, t), atol=1e-10)
    assert null_dims[0, 0, 2] == 3 and null_dims[0, 0, 29] == 26


def test_images_are_refused_with_the_reason() -> None:
    from tiny_vision import build_vision

    model, processor = build_vision("vit")
    image = (np.random.default_rng(0).random((32, 32, 3)) * 255).astype(np.uint8)
    with pytest.raises(ModelNotSupportedError, match=r"value vectors.*image explanations"):
        attnwidget.explain(model, processor, image, methods=["attention_norm"])
