"""Attention flow (Abnar & Zuidema, 2020): hand-checked cases, properties, and
agreement with the networkx Edmonds–Karp reference of ``flow_oracle``. The
oldest-transformers run (scripts/test.sh) has no numba and runs this file
too: there every value comes from the uncompiled push–relabel kernel."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from flow_oracle import (
    EXPECT_NO_NUMBA,
    adjusted_attention,
    reference_bounds,
    reference_flows,
    require_compiled_solver,
)

from attnwidget.errors import (
    AttentionRowSumWarning,
    AttentionShapeError,
    NonFiniteError,
    TooLargeError,
)
from attnwidget.methods.flow import _flowcert, _push
from attnwidget.methods.flow import flow as flow_module
from attnwidget.methods.flow.flow import FlowResult, attention_flow, attention_flow_result
from attnwidget.methods.registry import ScoreContext, get_method
from attnwidget.methods.rollout import rollout

# ---------------------------------------------------------------- helpers


def stack(*layers: list[list[float]]) -> np.ndarray:
    """(L, 1, n, n) attention from row-stochastic matrices, bottom layer first."""
    return np.array(layers, dtype=np.float64)[:, None]


def random_attention(layers: int, heads: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.random((layers, heads, n, n))
    return a / a.sum(axis=-1, keepdims=True)


def peaked_attention(layers: int, heads: int, n: int, seed: int, *, causal: bool = False):
    """Sharp, structured attention: heads look at self, previous, next or a hub token."""
    rng = np.random.default_rng(seed)
    idx = np.arange(n)
    logits = rng.normal(size=(layers, heads, n, n))
    for layer in range(layers):
        for head in range(heads):
            kind = rng.integers(4)
            if kind == 0:
                logits[layer, head][:, 0] += 3.0
            elif kind == 1:
                logits[layer, head][idx[1:], idx[:-1]] += 3.0
            elif kind == 2:
                logits[layer, head][idx[:-1], idx[1:]] += 3.0
            else:
                logits[layer, head][idx, idx] += 3.0
    logits *= 4.0
    if causal:
        logits = np.where(np.tril(np.ones((n, n), dtype=bool)), logits, -np.inf)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference(attentions: np.ndarray, top: int, *, residual: bool = True):
    """The oracle's raw flows and bounds (n, n) from every node of node layer ``top``."""
    adjusted = adjusted_attention(attentions, residual=residual)[:top]
    rows = range(adjusted.shape[-1])
    return reference_flows(adjusted, rows), reference_bounds(adjusted, rows)


# A single path 0 → 1 → 2 → sink 2 with capacities 0.6, 0.2, 0.5 (layer 3 to 1).
PATH = stack(
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]],  # layer 1: only node 2 feeds token 2
    [[1.0, 0.0, 0.0], [0.0, 0.8, 0.2], [0.0, 0.0, 1.0]],  # layer 2
    [[0.4, 0.6, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],  # layer 3: the source row 0
)

# Two branches (nodes 1 and 2 of layer 3, 0.5 each from the source) each reach
# the pipe node 0 of layer 2 with 0.4; the pipe passes 0.3 on; it alone feeds token 2.
PIPE = stack(
    [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]],  # layer 1
    [[0.3, 0.7, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],  # layer 2: the pipe, 0.3
    [[1.0, 0.0, 0.0], [0.4, 0.6, 0.0], [0.4, 0.0, 0.6]],  # layer 3: branches, 0.4 each
    [[0.0, 0.5, 0.5], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],  # layer 4: the source row 0
)


# ----------------------------------------------------------- hand-checked


def test_single_path_carries_its_smallest_capacity() -> None:
    result = attention_flow_result(PATH, rows=[0], normalize=False, residual=False)
    # Token 2 is reached only along 0 → 1 → 2 → token 2: min(0.6, 0.2, 0.5).
    assert result.raw_values[0, 2] == pytest.approx(0.2, abs=1e-12)
    # Token 0: 0.4 straight down node 0, plus 0.2 through node 2 of layer 1.
    assert result.raw_values[0, 0] == pytest.approx(0.6, abs=1e-12)
    # Token 1: 0.6 into node 1, which passes 0.8 ≥ 0.6 on to node 1 of layer 1.
    assert result.raw_values[0, 1] == pytest.approx(0.6, abs=1e-12)
    # Token 2's sink takes at most 0.5, the source sends 1: the path, not a
    # bound, sets the value.
    assert result.trivial_bound[0, 2] == pytest.approx(0.5)
    assert not result.at_bound[0, 2]


def test_shared_pipe_caps_both_branches() -> None:
    raw = attention_flow(PIPE, rows=0, normalize=False, residual=False)
    # Branches could bring 0.4 + 0.4 = 0.8 to the pipe node, which passes 0.3.
    assert raw[0, 2] == pytest.approx(0.3, abs=1e-12)
    wide = PIPE.copy()
    wide[1, 0, 0] = [0.9, 0.1, 0.0]  # widen the pipe to 0.9: now the branches limit
    raw = attention_flow(wide, rows=0, normalize=False, residual=False)
    assert raw[0, 2] == pytest.approx(0.8, abs=1e-12)


def test_identity_attention_gives_identity() -> None:
    n = 5
    eye = np.broadcast_to(np.eye(n), (4, 2, n, n)).copy()
    np.testing.assert_allclose(attention_flow(eye), np.eye(n), atol=1e-12)


def test_one_layer_is_the_adjusted_attention_row_and_rollout() -> None:
    attentions = random_attention(3, 2, 6, seed=3)
    fused = attentions[0].mean(axis=0)
    adjusted = 0.5 * fused + 0.5 * np.eye(6)
    first = attention_flow(attentions, layer=0, normalize=False)
    np.testing.assert_allclose(first, adjusted, atol=1e-12)
    np.testing.assert_allclose(first, rollout(attentions)[0], atol=1e-12)
    only = attention_flow(attentions[:1], normalize=False)
    np.testing.assert_allclose(only, adjusted, atol=1e-12)


# --------------------------------------------------------------- properties


@pytest.mark.parametrize("seed", [0, 1])
def test_flow_respects_source_and_sink_capacities(seed: int) -> None:
    attentions = peaked_attention(5, 2, 9, seed)
    result = attention_flow_result(attentions, normalize=False)
    adjusted = 0.5 * attentions.mean(axis=1) + 0.5 * np.eye(9)
    out_cap = adjusted[-1].sum(axis=1)  # source (5, i)
    in_cap = adjusted[0].sum(axis=0)  # sink (0, j)
    assert (result.raw_values <= out_cap[:, None] + 1e-12).all()
    assert (result.raw_values <= in_cap[None, :] + 1e-12).all()
    np.testing.assert_allclose(result.trivial_bound, np.minimum(out_cap[:, None], in_cap))
    assert (result.raw_values >= 0).all()


def test_normalised_rows_sum_to_one() -> None:
    attentions = random_attention(4, 3, 7, seed=5)
    values = attention_flow(attentions, rows=[0, 3, 6])
    assert values.shape == (3, 7)
    np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-12)
    raw = attention_flow(attentions, rows=[0, 3, 6], normalize=False)
    np.testing.assert_allclose(values, raw / raw.sum(axis=1, keepdims=True), atol=1e-12)


def test_hf_tuple_and_array_agree() -> None:
    attentions = random_attention(3, 2, 5, seed=8)
    as_tuple = tuple(layer[None] for layer in attentions)  # (1, H, n, n) per layer
    np.testing.assert_allclose(attention_flow(as_tuple), attention_flow(attentions), atol=1e-12)


# ------------------------------------------------- agreement with networkx


def check_against_reference(attentions: np.ndarray, *, residual: bool = True) -> int:
    """Compare every layer's flow with the reference; returns pairs below the bound."""
    below = 0
    for layer in range(attentions.shape[0]):
        expected, bound = reference(attentions, layer + 1, residual=residual)
        result = attention_flow_result(attentions, layer=layer, normalize=False, residual=residual)
        np.testing.assert_allclose(result.raw_values, expected, atol=1e-9, rtol=0)
        np.testing.assert_allclose(result.trivial_bound, bound, atol=1e-12)
        np.testing.assert_array_equal(result.at_bound, expected >= bound - 1e-9)
        assert result.max_error <= 1e-9
        normalized = attention_flow(attentions, layer=layer, residual=residual)
        np.testing.assert_allclose(
            normalized, expected / expected.sum(axis=1, keepdims=True), atol=1e-9, rtol=0
        )
        below += int((expected < bound - 1e-9).sum())
    return below


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_networkx_on_random_attention(seed: int) -> None:
    check_against_reference(random_attention(3, 2, 6, seed))


def test_matches_networkx_on_structured_attention() -> None:
    below = 0
    for seed in (0, 1):
        below += check_against_reference(peaked_attention(4, 2, 6, seed))
        below += check_against_reference(peaked_attention(3, 2, 6, seed), residual=False)
    # The structured cases must exercise flows that paths, not bounds, decide.
    assert below >= 10


def test_matches_networkx_on_causal_attention() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", AttentionRowSumWarning)  # causal rows still sum to 1
        assert check_against_reference(peaked_attention(4, 2, 6, 3, causal=True)) > 0


def test_certificates_and_the_exact_solver_match_networkx() -> None:
    """Deeper graphs, where the Sinkhorn certificates decide some pairs and the
    push–relabel solver the rest; some pairs sit just below their bound, which a
    loose certificate would wrongly claim."""
    cases = [
        (peaked_attention(4, 2, 6, 3), True),
        (peaked_attention(4, 2, 7, 2), False),
        (peaked_attention(6, 2, 8, 4), True),
        (random_attention(6, 2, 8, 9), True),
    ]
    below = certified = 0
    for attentions, residual in cases:
        top = attentions.shape[0]
        expected, bound = reference(attentions, top, residual=residual)
        result = attention_flow_result(attentions, normalize=False, residual=residual)
        np.testing.assert_allclose(result.raw_values, expected, atol=1e-9, rtol=0)
        np.testing.assert_array_equal(result.at_bound, expected >= bound - 1e-9)
        below += int((~result.at_bound).sum())
        adjusted = adjusted_attention(attentions, residual=residual)
        certified += int(_flowcert.certify(adjusted, top, result.rows, bound).sum())
    assert below > 0  # some pairs need the exact solver, not only certificates
    assert certified > 0  # and the certificates decide others


def test_the_solver_in_use() -> None:
    """Where numba is meant to be missing (ATTNWIDGET_EXPECT_NO_NUMBA=1), flow must run
    its kernel uncompiled, the fallback these tests then check; everywhere else the
    compiled kernel (in CI a missing or broken numba fails here)."""
    if EXPECT_NO_NUMBA:
        reason = _push.warm_up()
        assert reason is not None and "numba" in reason
        assert "numba" not in sys.modules  # this environment really has none
        return
    require_compiled_solver()
    assert _push.warm_up() is None


def test_rows_subset_matches_all_rows() -> None:
    attentions = peaked_attention(5, 2, 8, 6)
    full = attention_flow(attentions, normalize=False)
    part = attention_flow(attentions, rows=[7, 2], normalize=False)
    np.testing.assert_allclose(part, full[[7, 2]], atol=1e-12)


# ------------------------------------------------------------- registered


def test_registered_method_scores_the_query_row() -> None:
    attentions = peaked_attention(4, 2, 6, 2)
    spec = get_method("flow")
    context = ScoreContext(attentions=attentions, query_index=3, options={"flow": {"layer": 2}})
    scores, details = spec.score(context)
    result = attention_flow_result(attentions, layer=2, rows=[3])
    np.testing.assert_allclose(scores, result.values[0])
    np.testing.assert_array_equal(details["at_bound"], result.at_bound[0])
    np.testing.assert_allclose(details["trivial_bound"], result.trivial_bound[0])
    assert isinstance(result, FlowResult)


# ------------------------------------------------------------------ errors


def test_shape_mismatch_is_rejected() -> None:
    with pytest.raises(AttentionShapeError):
        attention_flow(np.ones((2, 1, 3, 4)) / 4)
    with pytest.raises(AttentionShapeError):
        attention_flow((np.ones((1, 1, 3, 3)) / 3, np.ones((1, 1, 4, 4)) / 4))


def test_nan_is_rejected() -> None:
    attentions = random_attention(2, 1, 4, seed=0)
    attentions[1, 0, 2, 1] = np.nan
    with pytest.raises(NonFiniteError):
        attention_flow(attentions)


def test_bad_layer_and_rows() -> None:
    attentions = random_attention(3, 1, 4, seed=0)
    with pytest.raises(IndexError, match="layer=3"):
        attention_flow(attentions, layer=3)
    with pytest.raises(IndexError):
        attention_flow(attentions, rows=[4])
    with pytest.raises(TypeError):
        attention_flow(attentions, rows=[0.5])


def test_too_large_raises_with_the_size_before_allocating() -> None:
    # A zero-stride view: 12 × 12 × 8192² "values" that take no memory.
    huge = np.broadcast_to(np.float64(1 / 8192), (12, 12, 8192, 8192))
    with pytest.raises(TooLargeError) as info:
        attention_flow(huge, rows=[0])
    message = str(info.value)
    needed, _ = flow_module.flow_memory(12, 12, 8192)
    assert f"{needed:,} bytes" in message
    assert "rollout" in message and "fewer tokens" in message
    small = random_attention(3, 1, 6, seed=0)
    with pytest.raises(TooLargeError, match="max_bytes=1,000"):
        attention_flow(small, max_bytes=1000)


def test_rows_that_do_not_sum_to_one_warn() -> None:
    attentions = random_attention(2, 1, 4, seed=1) * 0.5
    with pytest.warns(AttentionRowSumWarning):
        attention_flow(attentions)
