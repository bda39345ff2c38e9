"""Attention flow (Abnar & Zuidema, 2020) on hard graphs: attention built so that many
values sit below their trivial bound, checked against the networkx Edmonds–Karp
reference of ``flow_oracle``; and the one scipy edge-flow extractor shared with FlowView."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from flow_oracle import (
    adjusted_attention,
    blocks,
    bottleneck,
    near_identity,
    reference_bounds,
    reference_flows,
)
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from attnwidget.methods.flow.edges import arc_positions, max_flow_edges
from attnwidget.methods.flow.flow import attention_flow_result


def check(attentions: np.ndarray, rows: list[int]) -> float:
    """Compare with the oracle; returns the share of values below the bound."""
    adjusted = adjusted_attention(attentions)
    expected, bound = reference_flows(adjusted, rows), reference_bounds(adjusted, rows)
    result = attention_flow_result(attentions, rows=rows, normalize=False)
    assert result.max_error <= 1e-9
    # Edmonds–Karp in floats is itself exact to round-off here.
    np.testing.assert_allclose(result.raw_values, expected, atol=result.max_error + 1e-12, rtol=0)
    np.testing.assert_array_equal(result.at_bound, expected >= bound - 1e-9)
    return float((expected < bound - 1e-9).mean())


CASES = [
    pytest.param(bottleneck, 7, 12, id="bottleneck"),
    pytest.param(near_identity, 7, 10, id="near-identity"),
    pytest.param(blocks, 8, 12, id="blocks"),
]


@pytest.mark.parametrize(("make", "layers", "n"), CASES)
def test_hard_attention_matches_networkx(make, layers: int, n: int) -> None:
    rows = [0, n // 3, n - 1]
    below = sum(check(make(layers, n, seed), rows) for seed in (0, 1)) / 2
    assert below >= 0.3  # these inputs must be hard: many values below the bound


# ---------------------------------------------------------------- edge flows


def test_max_flow_edges_is_a_feasible_maximum_flow() -> None:
    attentions = bottleneck(5, 9, 0)
    maps = adjusted_attention(attentions)
    stack = [maps[layer] for layer in range(4, -1, -1)]  # top first
    expected = reference_flows(maps, [3])
    for sink in range(9):
        value, flows = max_flow_edges(stack, 3, sink)
        assert abs(value - expected[0, sink]) <= len(stack) * 81 * 2.0**-30
        for cap, flow in zip(stack, flows, strict=True):
            assert (flow >= 0).all() and (flow <= cap + 1e-15).all()
        assert flows[0][[i for i in range(9) if i != 3]].sum() == 0  # only the source's row
        assert flows[-1][:, [j for j in range(9) if j != sink]].sum() == 0
        for upper, lower in itertools.pairwise(flows):  # conservation at every inner node
            np.testing.assert_allclose(upper.sum(axis=0), lower.sum(axis=1), atol=1e-15)
        assert flows[-1].sum() == pytest.approx(value, abs=1e-15)


def test_arc_positions_sorted_and_unsorted() -> None:
    graph = csr_array(
        (np.array([5, 3, 4], dtype=np.int32), np.array([2, 1, 2]), np.array([0, 2, 3, 3])),
        shape=(3, 3),
    )
    result = maximum_flow(graph, 0, 2)
    pos = arc_positions(result.flow, np.array([0, 0, 1]), np.array([1, 2, 2]))
    np.testing.assert_array_equal(result.flow.data[pos], [3, 5, 3])
    unsorted = csr_array((np.array([7, 9]), np.array([2, 1]), np.array([0, 2, 2, 2])), shape=(3, 3))
    pos = arc_positions(unsorted, np.array([0, 0]), np.array([1, 2]))
    np.testing.assert_array_equal(unsorted.data[pos], [9, 7])
