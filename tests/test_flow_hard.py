"""Attention flow (Abnar & Zuidema, 2020) on hard graphs: attention built so that many
values sit below their trivial bound, checked against a networkx Edmonds–Karp oracle
written here; and the one scipy edge-flow extractor shared with FlowView."""

from __future__ import annotations

import functools
import itertools

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.flow import edmonds_karp
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from attnwidget.methods.flow import _direct as _flow_direct
from attnwidget.methods.flow import _flowcert
from attnwidget.methods.flow import _layers as _flow_layers
from attnwidget.methods.flow import _proof as _flow_proof
from attnwidget.methods.flow import flow as flow_module
from attnwidget.methods.flow.edges import arc_positions, max_flow_edges
from attnwidget.methods.flow.flow import attention_flow_result


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def bottleneck(layers: int, n: int, seed: int) -> np.ndarray:
    """Banded local heads; every third layer two hub tokens take nearly all attention."""
    rng = np.random.default_rng(seed)
    far = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) > 1
    logits = rng.normal(size=(layers, 2, n, n)) * 3.0 - 9.0 * far
    for layer in range(1, layers, 3):
        logits[layer][:, :, rng.choice(n, 2, replace=False)] += 15.0
    return softmax(logits)


def near_identity(layers: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    spread = rng.random((layers, 2, n, n))
    spread /= spread.sum(axis=-1, keepdims=True)
    return 0.95 * np.eye(n) + 0.05 * spread


def blocks(layers: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    segment = np.arange(n) // 4
    apart = segment[:, None] != segment[None, :]
    return softmax(rng.normal(size=(layers, 2, n, n)) * 2.0 - 6.0 * apart)


def oracle(attentions: np.ndarray, rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Raw max flows from top-layer ``rows`` by networkx Edmonds–Karp, and trivial bounds."""
    fused = attentions.mean(axis=1)
    layers, n = fused.shape[0], fused.shape[-1]
    adjusted = 0.5 * fused + 0.5 * np.eye(n)
    adjusted = adjusted / adjusted.sum(axis=-1, keepdims=True)
    graph = nx.DiGraph()
    for layer in range(1, layers + 1):
        for i in range(n):
            for j in range(n):
                graph.add_edge(
                    (layer, i), (layer - 1, j), capacity=float(adjusted[layer - 1, i, j])
                )
    values = np.array(
        [
            [
                nx.maximum_flow_value(graph, (layers, i), (0, j), flow_func=edmonds_karp)
                for j in range(n)
            ]
            for i in rows
        ]
    )
    bound = np.minimum(adjusted[-1][rows].sum(axis=1)[:, None], adjusted[0].sum(axis=0)[None, :])
    return values, bound


@functools.cache
def cached_oracle(make, layers: int, n: int, seed: int, rows: tuple[int, ...]):
    """The oracle for ``make(layers, n, seed)``, computed once for both solvers' tests."""
    return oracle(make(layers, n, seed), list(rows))


def check(
    attentions: np.ndarray, rows: list[int], known: tuple[np.ndarray, np.ndarray] | None = None
) -> float:
    """Compare with the oracle (or its ``known`` values); returns the share below the bound."""
    expected, bound = oracle(attentions, rows) if known is None else known
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


@pytest.mark.parametrize("push", [True, False], ids=["push-relabel", "scipy"])
@pytest.mark.parametrize(("make", "layers", "n"), CASES)
def test_hard_attention_matches_networkx(
    make, layers: int, n: int, push: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default solvers: the compiled push–relabel one, and the scipy-based ones
    that flow uses without numba."""
    monkeypatch.setattr(flow_module, "PUSH", push)
    rows = (0, n // 3, n - 1)
    below = 0.0
    for seed in (0, 1):
        known = cached_oracle(make, layers, n, seed, rows)
        below += check(make(layers, n, seed), list(rows), known) / 2
    assert below >= 0.3  # these inputs must be hard: many values below the bound


@pytest.mark.parametrize(("make", "layers", "n"), CASES)
def test_subgraphs_second_solves_and_fallbacks_match_networkx(
    make, layers: int, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every branch of the direct solver on small inputs: per-problem subgraphs
    (which the defaults keep for n ≥ 56) at every level and in both node orders,
    the transport trial cut short, the last resort of the proof (one small max
    flow), a proof that never succeeds (so the second, finer solve decides),
    and the batch solver for what the direct one leaves."""
    monkeypatch.setattr(flow_module, "PUSH", False)  # the scipy-based solvers
    monkeypatch.setattr(flow_module, "SUBGRAPH_FROM_N", 0)
    monkeypatch.setattr(flow_module, "DIRECT_FROM", 3)
    monkeypatch.setattr(_flowcert, "TRANSPORT_FROM", 4)
    monkeypatch.setattr(_flowcert, "TRANSPORT_TRIAL", 2)
    monkeypatch.setattr(_flow_direct, "LEVELS", ((1, False), (2, True)))
    monkeypatch.setattr(_flow_direct, "TRIAL", 3)
    monkeypatch.setattr(_flow_direct, "ORDER_PROBE", 1)
    monkeypatch.setattr(_flow_proof, "SIDE_FLOW_FROM_N", 0)
    check(make(layers, n, 2), [0, n // 2])
    monkeypatch.setattr(_flow_layers, "prove", lambda net, side: (False, np.inf, 0))  # refine
    check(make(layers, n, 3), [0])
    monkeypatch.setattr(flow_module, "DIRECT", False)  # the batch solver alone
    check(make(layers, n, 4), [1])


def test_level_left_after_failures_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A subgraph level is left once FAILS_IN_ROW tries in a row fail, long before
    TRIAL tries; the values are still networkx's (near-identity attention: the
    1-edge subgraphs fail for every sink but the source's own token)."""
    monkeypatch.setattr(flow_module, "PUSH", False)  # the scipy-based solvers
    monkeypatch.setattr(flow_module, "SUBGRAPH_FROM_N", 0)
    monkeypatch.setattr(flow_module, "DIRECT_FROM", 3)
    monkeypatch.setattr(_flow_direct, "LEVELS", ((1, False), (3, False)))
    monkeypatch.setattr(_flow_direct, "TRIAL", 1000)  # only the run of failures can switch
    levels: list[tuple[int, bool]] = []
    record = _flow_direct._Tries.record

    def spy(self, ordered: bool, seconds: float, ok: bool) -> None:
        levels.append((self.level, ok))
        record(self, ordered, seconds, ok)

    monkeypatch.setattr(_flow_direct._Tries, "record", spy)
    attentions = near_identity(7, 10, 5)
    check(attentions, [0])
    first = [ok for level, ok in levels if level == 0]
    assert len(first) < len(levels)  # the second level was reached
    assert first[-_flow_direct.FAILS_IN_ROW :] == [False] * _flow_direct.FAILS_IN_ROW
    assert len(first) < 10 - 1  # before every sink had tried the first level


def test_refine_is_needed_on_large_near_identity_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values still certified on near-identity attention at n = 48, whose cuts are large
    (there the first proof often fails and the second solve decides), and equal to the
    compiled push–relabel solver's."""
    monkeypatch.setattr(flow_module, "PUSH", False)
    attentions = near_identity(12, 48, 0)
    result = attention_flow_result(attentions, rows=[0], normalize=False)
    assert result.max_error <= 1e-10
    assert (~result.at_bound).mean() > 0.9
    monkeypatch.setattr(flow_module, "DIRECT", False)
    other = attention_flow_result(attentions, rows=[0], normalize=False)
    np.testing.assert_allclose(result.raw_values, other.raw_values, atol=2e-10, rtol=0)
    if flow_module._flow_push.available():
        monkeypatch.setattr(flow_module, "PUSH", True)
        pushed = attention_flow_result(attentions, rows=[0], normalize=False)
        assert pushed.max_error <= 1e-10
        np.testing.assert_allclose(result.raw_values, pushed.raw_values, atol=2e-10, rtol=0)


# ---------------------------------------------------------------- edge flows


def test_max_flow_edges_is_a_feasible_maximum_flow() -> None:
    attentions = bottleneck(5, 9, 0)
    fused = attentions.mean(axis=1)
    maps = 0.5 * fused + 0.5 * np.eye(9)
    stack = [maps[layer] for layer in range(4, -1, -1)]  # top first
    expected, _ = oracle(attentions, [3])
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
