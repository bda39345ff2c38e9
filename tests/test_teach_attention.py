"""attnwidget.teach: score functions, masks and attention steps, checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnwidget.errors import InputError
from attnwidget.teach import (
    MASK_KINDS,
    SCORE_KINDS,
    attention,
    attention_mask,
    attention_scores,
    local_p_alignment,
)

# Two queries and three keys of size d = 2, used by every score test.
Q = np.array([[1.0, 2.0], [0.0, 1.0]])
K = np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])
T, F = True, False


# --- scores -----------------------------------------------------------------


def test_dot() -> None:
    # q0=(1,2): ·(1,0)=1, ·(2,1)=2+2=4, ·(0,3)=6;  q1=(0,1): 0, 1, 3
    np.testing.assert_allclose(attention_scores(Q, K, "dot"), [[1, 4, 6], [0, 1, 3]])


def test_scaled_dot() -> None:
    # the dot scores divided by √d = √2
    expected = np.array([[1, 4, 6], [0, 1, 3]]) / math.sqrt(2)
    np.testing.assert_allclose(attention_scores(Q, K, "scaled_dot"), expected)
    np.testing.assert_allclose(attention_scores(Q, K), expected)  # the default kind


def test_general() -> None:
    W = np.array([[1.0, 0.0], [1.0, 1.0]])
    # W k: (1,0)→(1,1), (2,1)→(2,3), (0,3)→(0,3)
    # q0=(1,2): 1+2=3, 2+6=8, 0+6=6;  q1=(0,1): 1, 3, 3
    np.testing.assert_allclose(attention_scores(Q, K, "general", W=W), [[3, 8, 6], [1, 3, 3]])


@pytest.mark.parametrize("kind", ["additive", "concat"])
def test_additive(kind: str) -> None:
    # W1 = I, W2 = −I: W1 q + W2 k = q − k; v_a = (1, 2)
    # q0−k0=(0,2): 2·tanh2;  q0−k1=(−1,1): −tanh1+2tanh1 = tanh1;  q0−k2=(1,−1): −tanh1
    # q1−k0=(−1,1): tanh1;   q1−k1=(−2,0): −tanh2;              q1−k2=(0,−2): −2·tanh2
    t1, t2 = math.tanh(1), math.tanh(2)
    expected = [[2 * t2, t1, -t1], [t1, -t2, -2 * t2]]
    eye = np.eye(2)
    got = attention_scores(Q, K, kind, W1=eye, W2=-eye, v_a=[1.0, 2.0])
    np.testing.assert_allclose(got, expected)
    # `v`, the deprecated name of v_a in attention_scores (in attention, v = values)
    with pytest.warns(DeprecationWarning, match="use v_a= instead"):
        old = attention_scores(Q, K, kind, W1=eye, W2=-eye, v=[1, 2])
    np.testing.assert_allclose(old, expected)


def test_additive_hidden_size_differs_from_d() -> None:
    # h = 1: W1 = (1, 0), W2 = (0, 1), v_a = (3): score = 3·tanh(q_1 + k_2)
    # q0: tanh(1+0), tanh(1+1), tanh(1+3);  q1: tanh(0), tanh(1), tanh(3)
    got = attention_scores(Q, K, "additive", W1=[[1, 0]], W2=[[0, 1]], v_a=[3])
    expected = 3 * np.tanh([[1, 2, 4], [0, 1, 3]])
    np.testing.assert_allclose(got, expected)


def test_cosine() -> None:
    # |q0|=√5, |k|=1, √5, 3:  q0: 1/√5, 4/5, 6/(3√5)=2/√5;  q1 (|q1|=1): 0, 1/√5, 3/3=1
    r5 = math.sqrt(5)
    expected = np.array([[1 / r5, 4 / 5, 2 / r5], [0, 1 / r5, 1]])
    np.testing.assert_allclose(attention_scores(Q, K, "cosine"), expected)
    np.testing.assert_allclose(attention_scores(Q, K, "cosine", beta=2.0), 2 * expected)


def test_location_uses_only_the_query() -> None:
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # (n, d) = (3, 2)
    # W q0 = (1, 2, 1+2=3);  W q1 = (0, 1, 1)
    expected = [[1, 2, 3], [0, 1, 1]]
    np.testing.assert_allclose(attention_scores(Q, K, "location", W=W), expected)
    # other keys, even of another size, give the same scores: only n = 3 is read
    other = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(attention_scores(Q, other, "location", W=W), expected)


# --- masks ------------------------------------------------------------------


def test_none_and_causal_square() -> None:
    assert attention_mask(3).tolist() == [[T, T, T]] * 3
    assert attention_mask(3, kind="causal").tolist() == [[T, F, F], [T, T, F], [T, T, T]]


def test_causal_with_fewer_queries_takes_the_last_positions() -> None:
    # m=2 queries over n=4 keys: the queries sit at positions 2 and 3
    assert attention_mask(4, 2, "causal").tolist() == [[T, T, T, F], [T, T, T, T]]
    assert attention_mask(4, 1, "causal").tolist() == [[T, T, T, T]]


def test_padding() -> None:
    by_length = attention_mask(4, 3, "padding", lengths=2)
    assert by_length.tolist() == [[T, T, F, F]] * 3
    by_mask = attention_mask(4, 3, "padding", key_mask=np.array([T, T, F, F]))
    assert (by_mask == by_length).all()


def test_local_window_default_positions() -> None:
    # D = 1, m = n = 5: p_i = i, window [i−1, i+1] cut at the ends
    assert attention_mask(5, kind="local", window=1).tolist() == [
        [T, T, F, F, F],
        [T, T, T, F, F],
        [F, T, T, T, F],
        [F, F, T, T, T],
        [F, F, F, T, T],
    ]
    # m = 2 < n = 5: the queries are the last two positions, p = 3, 4
    assert attention_mask(5, 2, "local", window=1).tolist() == [
        [F, F, T, T, T],
        [F, F, F, T, T],
    ]
    # explicit positions, a fractional one: p = 1.5, D = 1 → [0.5, 2.5] → keys 1, 2
    got = attention_mask(5, 2, "local", window=1, positions=[1.5, 0])
    assert got.tolist() == [[F, T, T, F, F], [T, T, F, F, F]]


def test_local_m_is_monotonic_from_zero() -> None:
    # p_t = t whatever n is: t = 0 → [−1, 1], t = 1 → [0, 2]
    assert attention_mask(5, 2, "local-m", window=1).tolist() == [
        [T, T, F, F, F],
        [T, T, T, F, F],
    ]


def test_local_p_positions_and_gaussian() -> None:
    W_p, v_p = np.array([[1.0, -1.0]]), np.array([1.0])
    q = np.array([[1.0, 1.0], [20.0, 0.0]])
    # q0: W_p q0 = 0 → tanh 0 = 0 → sigmoid 0 = ½ → p = (n − 1)·½ = 4·½ = 2
    # q1: W_p q1 = 20 → p = 4·sigmoid(tanh 20) ≈ 4·sigmoid(1) ≈ 2.924
    p1 = 4 / (1 + math.exp(-math.tanh(20)))
    al = local_p_alignment(q, 5, 2, W_p, v_p)
    np.testing.assert_allclose(al.positions, [2.0, p1])
    assert al.sigma == 1.0  # σ = D / 2
    # Gaussian exp(−(s − p)² / (2σ²)) = exp(−(s − 2)²/2) for q0: e^−2, e^−½, 1, e^−½, e^−2
    np.testing.assert_allclose(al.gaussian[0], np.exp([-2, -0.5, 0, -0.5, -2]))
    np.testing.assert_allclose(al.gaussian[1], np.exp(-((np.arange(5) - p1) ** 2) / 2))
    # window [p − 2, p + 2]: q0 sees 0..4; q1 sees [0.92, 4.92] → 1..4
    assert al.mask.tolist() == [[T, T, T, T, T], [F, T, T, T, T]]
    same = attention_mask(5, kind="local-p", window=2, q=q, W_p=W_p, v_p=v_p)
    assert (same == al.mask).all()
    # scale=n is the paper's S literally: p = 5·½ = 2.5 for q0
    assert local_p_alignment(q, 5, 2, W_p, v_p, scale=5).positions[0] == 2.5


# --- attention --------------------------------------------------------------


def _sdpa(q, k, v, mask=None, scale=None, is_causal=False) -> np.ndarray:
    t = [torch.tensor(a, dtype=torch.float64) for a in (q, k, v)]
    m = None if mask is None else torch.tensor(mask)
    out = torch.nn.functional.scaled_dot_product_attention(
        *t, attn_mask=m, scale=scale, is_causal=is_causal
    )
    return out.numpy()


@pytest.fixture
def qkv() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))


def test_attention_matches_torch_causal_and_padding(qkv) -> None:
    q, k, v = qkv
    causal = attention_mask(5, 3, "causal")
    padding = attention_mask(5, 3, "padding", lengths=4)
    for mask in (None, causal, padding, causal & padding):
        got = attention(q, k, v, mask=mask).output
        np.testing.assert_allclose(got, _sdpa(q, k, v, mask), rtol=1e-12, atol=1e-12)
    # m = n: torch's is_causal agrees with our causal mask
    square = attention(k, k, v, mask=attention_mask(5, kind="causal")).output
    np.testing.assert_allclose(square, _sdpa(k, k, v, is_causal=True), rtol=1e-12)
    # temperature T is torch's scale 1 / (√d · T)
    hot = attention(q, k, v, mask=causal, temperature=3.0).output
    np.testing.assert_allclose(hot, _sdpa(q, k, v, causal, scale=1 / (2.0 * 3.0)), rtol=1e-12)


def test_attention_intermediates(qkv) -> None:
    q, k, v = qkv
    mask = attention_mask(5, 3, "causal")
    steps = attention(q, k, v, mask=mask)
    np.testing.assert_allclose(steps.scores, q @ k.T / 2.0)
    assert np.isneginf(steps.masked_scores[~mask]).all()
    assert (steps.masked_scores[mask] == steps.scores[mask]).all()
    assert (steps.weights[~mask] == 0).all()
    np.testing.assert_allclose(steps.weights.sum(axis=1), 1.0)
    np.testing.assert_allclose(steps.output, steps.weights @ v)
    assert steps.gaussian is None and steps.local_weights is None
    assert steps.final_weights is steps.weights
    with pytest.raises(ValueError):
        steps.weights[0, 0] = 1.0  # read-only


def test_temperature_hand_case() -> None:
    # scores (dot) = (0, ln 4): T = 1 → (1, 4)/5;  T = 2 → (0, ln 2) → (1, 2)/3
    q, k, v = [[1.0]], [[0.0], [math.log(4)]], [[0.0], [3.0]]
    np.testing.assert_allclose(attention(q, k, v, "dot").weights, [[0.2, 0.8]])
    steps = attention(q, k, v, "dot", temperature=2.0)
    np.testing.assert_allclose(steps.weights, [[1 / 3, 2 / 3]])
    np.testing.assert_allclose(steps.output, [[2.0]])  # (1·0 + 2·3) / 3


def test_large_temperature_gives_uniform_rows(qkv) -> None:
    q, k, v = qkv
    flat = attention(q, k, v, temperature=1e9).weights
    np.testing.assert_allclose(flat, np.full((3, 5), 0.2), atol=1e-8)
    # uniform over the keys a query may see
    padded = attention(q, k, v, mask=attention_mask(5, 3, "padding", lengths=4), temperature=1e9)
    np.testing.assert_allclose(padded.weights[:, :4], 0.25, atol=1e-8)
    assert (padded.weights[:, 4] == 0).all()


def test_local_p_attention_multiplies_by_the_gaussian_without_renormalising() -> None:
    # all keys zero → every score 0 → softmax uniform over the window
    q = np.array([[1.0, 1.0]])  # p = 2 (see test_local_p_positions_and_gaussian)
    k, v = np.zeros((5, 2)), np.arange(5.0)[:, None]
    al = local_p_alignment(q, 5, 1, [[1.0, -1.0]], [1.0])  # D = 1: keys 1, 2, 3; σ = ½
    steps = attention(q, k, v, "dot", alignment=al)
    np.testing.assert_allclose(steps.weights, [[0, 1 / 3, 1 / 3, 1 / 3, 0]])
    # Gaussian exp(−(s−2)²/(2·¼)) = exp(−2(s−2)²): e^−2, 1, e^−2 on keys 1, 2, 3
    e2 = math.exp(-2)
    np.testing.assert_allclose(steps.local_weights, [[0, e2 / 3, 1 / 3, e2 / 3, 0]])
    assert steps.local_weights.sum() < 1  # not renormalised
    assert steps.final_weights is steps.local_weights
    np.testing.assert_allclose(steps.output, [[(e2 * 1 + 2 + e2 * 3) / 3]])
    np.testing.assert_allclose(steps.positions, [2.0])


def test_attention_other_score_kinds() -> None:
    v = np.eye(3)
    steps = attention(Q, K, v, "additive", W1=np.eye(2), W2=-np.eye(2), v_a=[1, 2])
    t1, t2 = math.tanh(1), math.tanh(2)
    np.testing.assert_allclose(steps.scores, [[2 * t2, t1, -t1], [t1, -t2, -2 * t2]])
    np.testing.assert_allclose(steps.output, steps.weights)  # v = I


# --- bad input --------------------------------------------------------------


def _refused(match: str, func, *args, **kwargs) -> str:
    with pytest.raises(InputError, match=match) as info:
        func(*args, **kwargs)
    return str(info.value)


def test_bad_shapes() -> None:
    v = np.ones((3, 2))
    msg = _refused("q has shape", attention_scores, np.ones(2), K)
    assert "(2,)" in msg and "q[None, :]" in msg
    msg = _refused("k has shape", attention_scores, Q, np.ones((3, 4)))
    assert "(3, 4)" in msg and "(n, d) = (any, 2)" in msg
    msg = _refused("v has shape", attention, Q, K, np.ones((4, 2)))
    assert "(4, 2)" in msg and "(n, d_v) = (3, any)" in msg
    _refused("empty", attention_scores, np.ones((0, 2)), K)
    _refused("W has shape", attention_scores, Q, K, "general", W=np.ones((3, 3)))
    _refused("W2 has shape", attention_scores, Q, K, "additive", W1=[[1, 0]], W2=np.eye(2), v_a=[1])
    _refused(r"W has shape.*\(n, d\) = \(3, 2\)", attention_scores, Q, K, "location", W=np.eye(2))
    _refused("mask has shape", attention, Q, K, v, mask=np.ones((3, 3), dtype=bool))
    _refused("boolean", attention, Q, K, v, mask=np.ones((2, 3)))


def test_non_finite() -> None:
    bad = Q.copy()
    bad[1, 0] = np.nan
    msg = _refused("q contains NaN or infinity", attention_scores, bad, K)
    assert "(1, 0)" in msg
    _refused("v contains NaN", attention, Q, K, [[np.inf, 0], [0, 0], [0, 0]])
    _refused("W contains NaN", attention_scores, Q, K, "general", W=[[np.nan, 0], [0, 0]])
    _refused("beta must be a finite", attention_scores, Q, K, "cosine", beta=np.inf)
    _refused("real numbers", attention_scores, [["a", "b"]], K)


def test_unknown_kinds_list_the_valid_ones() -> None:
    msg = _refused("unknown score kind 'bilinear'", attention_scores, Q, K, "bilinear")
    assert all(kind in msg for kind in SCORE_KINDS)
    msg = _refused("unknown mask kind 'sliding'", attention_mask, 4, kind="sliding")
    assert all(kind in msg for kind in MASK_KINDS)


def test_missing_and_unknown_parameters() -> None:
    msg = _refused("needs the parameter", attention_scores, Q, K, "general")
    assert "W of shape (d, d) = (2, 2)" in msg
    msg = _refused("W2, v_a", attention_scores, Q, K, "additive", W1=np.eye(2))
    assert "(h, 2)" in msg and "(h,)" in msg
    _refused(r"W of shape \(n, d\) = \(3, 2\)", attention_scores, Q, K, "location")
    _refused("does not take the parameter", attention_scores, Q, K, "dot", W=np.eye(2))
    _refused(
        "once", attention_scores, Q, K, "additive", W1=np.eye(2), W2=np.eye(2), v=[1, 1], v_a=[1, 1]
    )
    _refused("lengths", attention_mask, 4, kind="padding")
    _refused("exactly one", attention_mask, 4, kind="padding", lengths=2, key_mask=[T, T, F, F])
    _refused("does not take", attention_mask, 4, kind="causal", window=1)
    _refused("needs window", attention_mask, 4, kind="local")
    _refused("needs q, W_p, v_p", attention_mask, 5, kind="local-p", window=1)


def test_bad_temperature() -> None:
    for t in (0, -1.0):
        _refused("temperature must be > 0", attention, Q, K, np.ones((3, 1)), temperature=t)
    _refused("temperature must be a finite", attention, Q, K, np.ones((3, 1)), temperature=np.nan)
    _refused("temperature must be a real", attention, Q, K, np.ones((3, 1)), temperature="hot")


def test_bad_windows() -> None:
    msg = _refused("window=2 covers", attention_mask, 4, kind="local", window=2)
    assert "5 positions, more than the 4 keys" in msg and "at most 1" in msg
    _refused("window=3 covers", attention_mask, 5, 2, "local-m", window=3)
    _refused("window=3 covers", local_p_alignment, Q, 5, 3, [[1, 0]], [1])
    _refused("whole number", attention_mask, 5, kind="local", window=1.5)
    _refused(r"whole number ≥ 0; got -1", attention_mask, 5, kind="local", window=-1)
    _refused(r"window must be a whole number ≥ 1", local_p_alignment, Q, 5, 0, [[1, 0]], [1])
    _refused("query 0: its window", attention_mask, 5, 1, "local", window=0, positions=[1.5])
    _refused("positions has shape", attention_mask, 5, 2, "local", window=1, positions=[1])


def test_masks_that_leave_nothing_to_attend() -> None:
    _refused("m must be ≤ n", attention_mask, 3, 5, "causal")
    _refused("lengths=5 is more", attention_mask, 4, kind="padding", lengths=5)
    _refused("every key", attention_mask, 4, kind="padding", key_mask=[F, F, F, F])
    mask = np.array([[T, T, F], [F, F, F]])
    msg = _refused("hides every key from query row", attention, Q, K, np.ones((3, 1)), mask=mask)
    assert "row(s) 1" in msg
    _refused("zero vector", attention_scores, [[0.0, 0.0]], K, "cosine")


def test_bad_alignment() -> None:
    al = local_p_alignment(np.ones((1, 2)), 3, 1, [[1, -1]], [1])
    _refused("alignment is for 1 queries", attention, Q, K, np.ones((3, 1)), alignment=al)
    _refused("local_p_alignment", attention, Q, K, np.ones((3, 1)), alignment=(1, 2))


def test_torch_tensors_are_accepted(qkv) -> None:
    q, k, v = qkv
    mask = attention_mask(5, 3, "causal")
    as_torch = [torch.tensor(a) for a in (q, k, v)]
    got = attention(*as_torch, mask=torch.tensor(mask)).output
    np.testing.assert_allclose(got, attention(q, k, v, mask=mask).output)
