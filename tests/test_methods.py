"""Method definitions checked on hand-computable cases and independent code."""

from __future__ import annotations

import numpy as np
import pytest

import attnwidget
from attnwidget.errors import (
    AttentionRowSumWarning,
    AttentionShapeError,
    InputError,
    NonFiniteError,
    UnknownMethodError,
)


def random_attention(rng: np.random.Generator, layers: int, heads: int, n: int) -> np.ndarray:
    logits = rng.normal(size=(layers, heads, n, n)) * 2
    weights = np.exp(logits)
    return weights / weights.sum(-1, keepdims=True)


# ---- raw -------------------------------------------------------------------


def test_raw_fuses_heads_by_mean_max_min() -> None:
    a = random_attention(np.random.default_rng(0), 2, 3, 4)
    assert np.allclose(attnwidget.raw_attention(a), a.mean(1))
    assert np.allclose(attnwidget.raw_attention(a, head_fusion="max", layer=-1), a[1].max(0))
    assert np.allclose(attnwidget.raw_attention(a, head_fusion="min", layer=0), a[0].min(0))
    assert np.allclose(attnwidget.raw_attention(a, head=2), a[:, 2])


def test_raw_accepts_the_hf_tuple_layout() -> None:
    import torch

    a = random_attention(np.random.default_rng(1), 3, 2, 5)
    hf = tuple(torch.tensor(layer[None]) for layer in a)  # (1, H, n, n) per layer
    assert np.allclose(attnwidget.raw_attention(hf), attnwidget.raw_attention(a))


# ---- rollout ---------------------------------------------------------------


def test_rollout_two_layer_example_by_hand() -> None:
    # One head, two tokens. W1 = [[1, 0], [0.5, 0.5]], W2 = [[0, 1], [1, 0]].
    w1 = np.array([[1.0, 0.0], [0.5, 0.5]])
    w2 = np.array([[0.0, 1.0], [1.0, 0.0]])
    a1 = 0.5 * w1 + 0.5 * np.eye(2)  # [[1, 0], [0.25, 0.75]]
    a2 = 0.5 * w2 + 0.5 * np.eye(2)  # [[0.5, 0.5], [0.5, 0.5]]
    expected_layer2 = np.array([[0.625, 0.375], [0.625, 0.375]])  # a2 @ a1 by hand
    assert np.allclose(a2 @ a1, expected_layer2)
    out = attnwidget.rollout(np.stack([w1, w2])[:, None])
    assert np.allclose(out[0], a1)
    assert np.allclose(out[1], expected_layer2)


def test_rollout_multiplies_later_layers_on_the_left() -> None:
    a = random_attention(np.random.default_rng(2), 3, 2, 4)
    fused = a.mean(1)
    hat = 0.5 * fused + 0.5 * np.eye(4)
    expected = hat[2] @ hat[1] @ hat[0]
    assert np.allclose(attnwidget.rollout(a)[-1], expected)
    assert not np.allclose(expected, hat[0] @ hat[1] @ hat[2])  # order matters here


def test_rollout_rows_sum_to_one_and_identity_gives_identity() -> None:
    a = random_attention(np.random.default_rng(3), 4, 3, 6)
    assert np.allclose(attnwidget.rollout(a).sum(-1), 1.0)
    eye = np.broadcast_to(np.eye(5), (3, 2, 5, 5))
    assert np.allclose(attnwidget.rollout(eye), np.eye(5))


def test_rollout_without_residual_is_the_plain_product() -> None:
    a = random_attention(np.random.default_rng(4), 2, 1, 3)
    assert np.allclose(attnwidget.rollout(a, residual=False)[-1], a[1, 0] @ a[0, 0])


def test_rollout_discard_ratio_keeps_the_cls_column() -> None:
    a = random_attention(np.random.default_rng(5), 1, 1, 4)
    out = attnwidget.rollout(a, discard_ratio=0.5, residual=False)[0]
    fused = a[0, 0]
    candidates = fused[:, 1:].ravel()
    threshold = np.sort(candidates)[len(candidates) // 2 - 1]
    kept = fused.copy()
    kept[:, 1:][kept[:, 1:] <= threshold] = 0.0
    assert np.allclose(out, kept / kept.sum(-1, keepdims=True))
    assert (out[:, 0] > 0).all()


def test_rollout_warns_on_unnormalised_rows_and_renormalises() -> None:
    a = random_attention(np.random.default_rng(6), 2, 1, 3) * 2.0
    with pytest.warns(AttentionRowSumWarning, match="re-normalises"):
        out = attnwidget.rollout(a)
    assert np.allclose(out.sum(-1), 1.0)


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (np.zeros((2, 3, 3)), None),  # (H, n, n) is one layer: accepted
        (np.zeros((2, 3, 4, 5)), AttentionShapeError),
        (np.zeros((0, 2, 3, 3)), AttentionShapeError),
        (np.full((1, 1, 2, 2), np.nan), NonFiniteError),
        ((), AttentionShapeError),
    ],
)
def test_attention_validation(bad: object, error: type[Exception] | None) -> None:
    if error is None:
        with pytest.warns(AttentionRowSumWarning):
            attnwidget.rollout(bad)  # zeros do not sum to 1: warn, still defined
        return
    with pytest.raises(error):
        attnwidget.rollout(bad)


# ---- gradient-weighted attention -------------------------------------------


def test_grad_attention_by_hand() -> None:
    # One layer, two heads, two tokens.
    attn = np.array([[[[0.5, 0.5], [0.2, 0.8]], [[1.0, 0.0], [0.3, 0.7]]]])
    grad = np.array([[[[1.0, -1.0], [2.0, 0.0]], [[-1.0, 3.0], [1.0, 1.0]]]])
    # (grad*attn)^+ per head: h0 [[.5,0],[.4,0]], h1 [[0,0],[.3,.7]]; mean [[.25,0],[.35,.35]]
    expected = np.eye(2) + np.array([[0.25, 0.0], [0.35, 0.35]])
    assert np.allclose(attnwidget.grad_attention(attn, grad), expected)


def test_grad_attention_matches_a_loop_over_layers() -> None:
    rng = np.random.default_rng(7)
    attn = random_attention(rng, 3, 2, 4)
    grad = rng.normal(size=attn.shape)
    relevance = np.eye(4)
    for layer in range(3):
        bar = np.zeros((4, 4))
        for head in range(2):
            bar += np.maximum(grad[layer, head] * attn[layer, head], 0) / 2
        relevance = relevance + bar @ relevance
    assert np.allclose(attnwidget.grad_attention(attn, grad), relevance)
    with pytest.raises(AttentionShapeError):
        attnwidget.grad_attention(attn, grad[:2])


# ---- gradient baselines ----------------------------------------------------


def test_input_x_gradient_sums_over_the_embedding() -> None:
    e = np.array([[1.0, 2.0], [3.0, -1.0]])
    g = np.array([[0.5, 0.5], [-1.0, 2.0]])
    assert np.allclose(attnwidget.input_x_gradient(e, g), [1.5, -5.0])
    with pytest.raises(InputError):
        attnwidget.input_x_gradient(e, g[:1])


def test_integrated_gradients_is_exact_for_a_quadratic() -> None:
    # f(x) = Σ x²: IG_j = Σ_d x_{j,d}² exactly (the integrand is linear in α).
    x = np.array([[1.0, -2.0], [0.5, 3.0]])

    def value_and_grad(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (points**2).sum(axis=(1, 2)), 2 * points

    scores, info = attnwidget.integrated_gradients(value_and_grad, x, steps=4, batch_size=2)
    assert np.allclose(scores, (x**2).sum(-1))
    assert abs(info["completeness_gap"]) < 1e-12
    assert info["target_delta"] == pytest.approx((x**2).sum())


def test_integrated_gradients_reports_a_gap_for_a_curved_path() -> None:
    # f(x) = Σ x³ has a quadratic integrand: one trapezoid step over-estimates.
    x = np.array([[1.0, 2.0]])

    def value_and_grad(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (points**3).sum(axis=(1, 2)), 3 * points**2

    coarse = attnwidget.integrated_gradients(value_and_grad, x, steps=1)[1]
    fine = attnwidget.integrated_gradients(value_and_grad, x, steps=64)[1]
    # trapezoid error for ∫3α²dα·x³ with one step: (3/2 − 1)·Σx³ = 4.5
    assert coarse["completeness_gap"] == pytest.approx(4.5)
    assert abs(fine["completeness_gap"]) < 1e-2
    with pytest.raises(InputError):
        attnwidget.integrated_gradients(value_and_grad, x, steps=0)


def test_blank_out_scores_the_probability_drop() -> None:
    weights = {5: 0.4, 6: 0.1, 7: 0.0}

    def probability(ids: np.ndarray) -> np.ndarray:
        return np.array([sum(weights.get(int(t), 0.0) for t in row) for row in ids])

    ids = np.array([5, 6, 7])
    scores = attnwidget.blank_out(probability, ids, blank_id=0, batch_size=2)
    assert np.allclose(scores, [0.4, 0.1, 0.0])
    kept = attnwidget.blank_out(probability, ids, blank_id=0, positions=[False, True, True])
    assert np.allclose(kept, [0.0, 0.1, 0.0])


# ---- registry ---------------------------------------------------------------


def test_unknown_method_lists_the_known_ones() -> None:
    with pytest.raises(UnknownMethodError, match=r"known methods: .*rollout"):
        attnwidget.get_method("rolout")


def test_from_attentions_scores_the_query_row() -> None:
    a = random_attention(np.random.default_rng(8), 2, 2, 3)
    exp = attnwidget.Explanation.from_attentions(a, ["a", "b", "c"], query_index=1)
    assert np.allclose(exp.scores["raw"], a[-1].mean(0)[1], atol=1e-6)
    assert np.allclose(exp.scores["rollout"], attnwidget.rollout(a)[-1][1], atol=1e-6)
    with pytest.raises(AttentionShapeError, match="2 tokens"):
        attnwidget.Explanation.from_attentions(a, ["a", "b"])
    with pytest.raises(attnwidget.ModelNotSupportedError, match="explain"):
        attnwidget.Explanation.from_attentions(a, ["a", "b", "c"], methods=["grad_attention"])


def test_register_checks_the_declared_options() -> None:
    from attnwidget.methods.options import Option

    def score(context):  # never registered: register() refuses first
        return context.attentions[-1, 0, 0]

    twice = (Option("k", int, 1, "a"), Option("k", int, 2, "b"))
    with pytest.raises(ValueError, match="declares an option twice"):
        attnwidget.register(
            "test_twice", needs={"attentions"}, summary="", reference="", options=twice
        )(score)
    bad_default = (Option("mode", str, "up", "direction", choices=("left", "right")),)
    with pytest.raises(InputError, match=r"'up' is not allowed; choose one of 'left', 'right'"):
        attnwidget.register(
            "test_bad_default", needs={"attentions"}, summary="", reference="", options=bad_default
        )(score)
    assert "test_twice" not in attnwidget.available_methods()
    assert "test_bad_default" not in attnwidget.available_methods()


def test_a_hand_built_context_gets_checked_complete_options() -> None:
    from attnwidget.methods import ScoreContext

    a = random_attention(np.random.default_rng(9), 2, 2, 4)
    context = ScoreContext(attentions=a, query_index=1, options={"rollout": {"residual": False}})
    assert context.options_for("rollout") == {
        "layer": -1,
        "head_fusion": "mean",
        "residual": False,
        "discard_ratio": 0.0,
        "keep_columns": (0,),
    }
    # the method reads them: no residual, rows re-normalised, layers multiplied by hand
    fused = a.mean(axis=1)
    expected = (fused[1] / fused[1].sum(-1, keepdims=True)) @ (
        fused[0] / fused[0].sum(-1, keepdims=True)
    )
    scores, _ = attnwidget.methods.compute_scores(["rollout"], context)
    assert np.allclose(scores["rollout"], expected[1], atol=1e-6)
