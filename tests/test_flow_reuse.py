"""Attention flow (Abnar & Zuidema, 2020): the paths that certify values without a full
solve (cuts reused across sinks, the rounding proof, its small max flow), checked
against a networkx Edmonds–Karp oracle written here, and the proof against false claims."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.flow import edmonds_karp

from attnwidget.methods.flow import _direct as _flow_direct
from attnwidget.methods.flow import _proof as _flow_proof
from attnwidget.methods.flow import _reuse as _flow_reuse
from attnwidget.methods.flow import _side as _flow_side
from attnwidget.methods.flow import flow as flow_module
from attnwidget.methods.flow._layers import Layered
from attnwidget.methods.flow._proof import Net, prove
from attnwidget.methods.flow.flow import attention_flow_result
from attnwidget.methods.graph import add_residual, fuse_heads


def blocks_apart(layers: int, n: int, seed: int, size: int = 4) -> np.ndarray:
    """Attention within segments of ``size`` tokens; between them logits 8 lower."""
    rng = np.random.default_rng(seed)
    segment = np.arange(n) // size
    apart = segment[:, None] != segment[None, :]
    logits = rng.normal(size=(layers, 2, n, n)) * 2.0 - 8.0 * apart
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def oracle(attentions: np.ndarray, row: int) -> np.ndarray:
    """Raw max flows from top-layer ``row`` to every token by networkx Edmonds–Karp."""
    adjusted = add_residual(fuse_heads(attentions))
    layers, n = adjusted.shape[0], adjusted.shape[-1]
    graph = nx.DiGraph()
    for layer in range(1, layers + 1):
        for i in range(n):
            for j in range(n):
                graph.add_edge(
                    (layer, i), (layer - 1, j), capacity=float(adjusted[layer - 1, i, j])
                )
    return np.array(
        [
            nx.maximum_flow_value(graph, (layers, row), (0, j), flow_func=edmonds_karp)
            for j in range(n)
        ]
    )


def problem(attentions: np.ndarray, row: int = 0):
    """The pruned problems of one source row: (Layered graph, source caps, sink caps (n, n))."""
    adjusted = add_residual(fuse_heads(attentions))
    top = adjusted.shape[0]
    inner = [adjusted[layer - 1] for layer in range(top - 1, 1, -1)]
    return Layered(inner, adjusted.shape[-1]), adjusted[top - 1][row], adjusted[0].T


def test_reused_cuts_match_networkx(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cuts shared by neighbouring sinks certify their values without a solve, exactly."""
    monkeypatch.setattr(flow_module, "PUSH", False)  # the scipy-based solvers
    monkeypatch.setattr(flow_module, "SUBGRAPH_FROM_N", 0)
    monkeypatch.setattr(flow_module, "DIRECT_FROM", 3)
    monkeypatch.setattr(_flow_direct, "REUSE_FROM_N", 0)
    monkeypatch.setattr(_flow_proof, "SIDE_FLOW_FROM_N", 0)
    reused = []
    original = _flow_reuse.Reuse.try_cut

    def counting(self, *args):
        got = original(self, *args)
        reused.append(got is not None)
        return got

    monkeypatch.setattr(_flow_reuse.Reuse, "try_cut", counting)
    for seed in (0, 1):
        attentions = blocks_apart(7, 16, seed)
        result = attention_flow_result(attentions, rows=[0], normalize=False)
        assert result.max_error <= 1e-10
        np.testing.assert_allclose(result.raw_values[0], oracle(attentions, 0), atol=1e-10, rtol=0)
    assert sum(reused) >= 2  # the path was taken, not just tried


def test_proof_never_certifies_a_wrong_value() -> None:
    """Stale cuts and random cuts, with a flow made feasible for another sink: the
    proof may fail, but when it succeeds the cut's price is the true maximum."""
    attentions = blocks_apart(6, 12, 3, size=3)
    graph, source, sinks = problem(attentions)
    expected = oracle(attentions, 0)
    rng = np.random.default_rng(0)
    certified = rejected = 0
    for j in range(0, 12, 2):
        solved = graph.solve(source, sinks[j])
        assert solved.ok and abs(solved.value - expected[j]) <= 1e-10
        for other in (j + 1, (j + 5) % 12):
            moved = _flow_reuse._moved(solved.net, solved.side, sinks[other])
            sides = [solved.side] + [rng.random(solved.side.shape) < 0.5 for _ in range(4)]
            for side in sides:
                if moved is None:
                    continue
                ok, price, _ = prove(moved, side)
                if ok:
                    certified += 1
                    assert abs(price - expected[other]) <= 1e-10
                else:
                    rejected += 1
    assert certified and rejected


def test_side_flow_sends_a_feasible_flow() -> None:
    """The proof's last resort: what it reports as sent is a flow inside the region,
    also where it has to cancel flow on saturated edges (no spare forward)."""
    attentions = blocks_apart(5, 8, 2, size=2)
    graph, source, sinks = problem(attentions)
    solved = graph.solve(source, sinks[5])
    net = solved.net  # a maximum flow: many edges saturated
    assert ((net.caps - net.flow < 1e-9) & (net.flow > 0)).any()
    region = np.ones((net.flow.shape[0] + 1, 8), dtype=bool)
    region[1, 0] = False
    need = np.zeros(region.shape)
    need[0, 5] = 0.4 * net.fa[5]  # e.g. sink 5's edge now carries less: bring it back
    need[2, 3] = 1e-3
    moved_a = np.array(net.a)
    moved_a[5] = net.fa[5] - need[0, 5]  # that edge's capacity is lower now
    caps = net.caps.copy()
    caps[0] = np.where(net.flow[0] > 0, net.flow[0], caps[0])  # saturated: no spare at all
    start = Net(moved_a, np.minimum(net.fa, moved_a), caps, net.flow, net.z, net.fz)
    sent = _flow_side.side_flow(start, region, need, share=1.0)
    assert sent is not None
    moved, left = sent
    assert (moved.flow >= 0).all() and (moved.flow <= caps + 1e-15).all()
    assert (moved.fa <= moved_a + 1e-15).all()
    changed = np.abs(moved.flow - net.flow) > 0
    assert not changed[0][:, 0].any() and not changed[1][0].any()  # outside the region
    inflow = np.concatenate(([moved.fa], moved.flow.sum(axis=1)))
    outflow = np.concatenate((moved.flow.sum(axis=2), [moved.fz]))
    before = np.concatenate(([start.fa], net.flow.sum(axis=1))) - np.concatenate(
        (net.flow.sum(axis=2), [net.fz])
    )
    np.testing.assert_allclose(inflow - outflow - before, need - left, atol=1e-12)
    assert (left >= 0).all() and (left <= need + 1e-15).all()
    assert left[0, 5] <= 1e-6 * need[0, 5]  # the cancelling one was sent (to round-off)
