"""Exact max flows of the problems the certificates leave, one by one, cheapest way first.

The scipy-based path: :mod:`attnwidget.methods.flow.flow` uses it when numba is
missing (or ``flow.PUSH`` is False); otherwise the compiled push–relabel
solver of :mod:`._flow_push` takes these problems (4–20× faster on the hard
inputs of ``bench/flow.py --hard`` at n = 128).

Part of exact attention flow (Abnar & Zuidema, ACL 2020,
:mod:`attnwidget.methods.flow.flow`). A pruned problem is source → node layers
T−1 … 1 → sink (``inner[t]`` between node layers T−1−t and T−2−t, top
first); problems differ only in the n source and the n sink capacities.

Why this path exists: on attention whose flows sit *below* their trivial
bound (narrow bottleneck layers, block structure, near-identity layers), the
cheap certificates of :mod:`._flowcert` do not apply, so every problem needs
an exact max flow. For each problem, in turn:

1. **A cut of an earlier sink** (:mod:`._flow_reuse`, n ≥ :data:`REUSE_FROM_N`):
   its price with this sink's capacities, proven by moving that sink's flow
   over; no solve. (Block attention: neighbouring sinks share their cut.)
2. **A subgraph** (:data:`LEVELS`): each node's strongest edges, the source's
   and the sink's token chains, at higher levels the edges of the nodes near
   the source and the sink; solved by :class:`._flow_layers.Layered`, its cut
   priced and its losses routed with *all* edges, so a subgraph that misses
   part of the minimum cut fails the proof instead of giving a wrong value.
3. **The whole graph** (:class:`._flow_layers.Layered`, nodes ordered).

Every value is proven by a cut (:mod:`._flow_proof`: the integer flow's
rounding to 2**-30 is closed by routing its losses along residual trees);
where no proof goes through, a second solve on the residual graph at a finer
scale (:func:`_refine`) decides, and what even that leaves is handed to
:func:`._maxflow.solve` (``ok`` is False).

Tried and not kept: warm-starting a sink from the previous sink's flow (its
sink edges cut to the new capacities, the excess cancelled back towards the
source, scipy's Dinic on the residual graph with arcs both ways). Little of
the flow survives the switch (near-identity, n = 128: 0.02 of 0.27; blocks:
0.17–0.32 of 0.85–1), and the residual solve took 12–100 ms against 15–25 ms
for a fresh ordered solve of the whole graph.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

from attnwidget.methods.flow._layers import Layered
from attnwidget.methods.flow._reuse import Reuse
from attnwidget.methods.flow.edges import SCALE, arc_positions

#: Subgraphs of a problem, tried in turn while they pay off: (KEEP, regions),
#: each node's KEEP strongest in- and out-edges plus its tokens' chains, with
#: regions also the edges of the nodes near the sink or the source
#: (:func:`_subgraph`; the default levels do without: a third level (48,
#: regions) and regions at 8 cost more in failed tries than they saved). At
#: L = 12, n = 128: bottleneck layers are solved on 8; block and near-identity
#: attention need 24 (near-identity mixes between all tokens near its cut),
#: strongly separated blocks fail both and go to the whole graph. At each level
#: the first problems alternate the node order (:mod:`._flow_layers`' or the
#: tokens') and the rest take the one that ran faster: ordered was 1.4×
#: faster on near-identity attention, 1.25× slower on blocks.
LEVELS = ((8, False), (24, False))
#: Subgraph tries before judging whether they pay off, and the failure share
#: above which the remaining problems go to the next level (after the last,
#: to the whole graph); tries per node order before the faster is kept.
TRIAL = 8
FAIL_SHARE = 0.5
ORDER_PROBE = 2
#: A level is also left once this many tries in a row failed (near-identity
#: and block attention: the 8-edge subgraphs of the source's first neighbours
#: pass, those of the rest fail; this saves 3–4 failed tries per row).
FAILS_IN_ROW = 3
#: Fewest tokens for which solved cuts are reused (:mod:`._flow_reuse`): on
#: shorter inputs a solve costs about as much as a try.
REUSE_FROM_N = 96
#: Subgraphs keep every edge of nodes carrying at least this share of their
#: layer's largest sink demand or source supply (see :func:`_subgraph`).
REGION = 0.1


@dataclass(frozen=True)
class Direct:
    """Results of :func:`solve_direct`, each (K,): where ``ok``, ``value`` is the
    exact max flow up to ``error`` (float64 round-off of the certifying cut's
    price, plus, after a subgraph solve, the capacity of the edges left out
    that cross that cut); elsewhere nothing is claimed."""

    value: np.ndarray
    error: np.ndarray
    ok: np.ndarray


def solve_direct(
    inner: Sequence[np.ndarray],
    source_caps: np.ndarray,
    sink_caps: np.ndarray,
    *,
    chains: tuple[np.ndarray, np.ndarray] | None = None,
    tol: float = 1e-10,
) -> Direct:
    """Exact max flows of K problems (``source_caps``, ``sink_caps`` (K, n)), one by one.

    Each problem tries, in turn, the cuts of recent problems with the same
    source (:mod:`._flow_reuse`), then, with ``chains`` (the source's and the
    sink's token per problem), its own subgraph (:data:`LEVELS`: every node's
    KEEP strongest in- and out-edges plus every edge into or out of the two
    tokens' nodes; on hard inputs the minimum cut hugs the sink token's
    chain, so its crossing edges are all there), then the whole graph. A
    subgraph's cut is priced, and its losses routed, with *all* edges. Once
    most tries of one level fail, the rest try the next, and after the last
    one go straight to the whole graph.
    """
    source_caps = np.atleast_2d(np.asarray(source_caps, dtype=np.float64))
    sink_caps = np.atleast_2d(np.asarray(sink_caps, dtype=np.float64))
    count, n = source_caps.shape
    inner = [np.asarray(m, dtype=np.float64) for m in inner]
    graph = Layered(inner, n, tol)
    positive = graph.caps > 0
    value, error = np.zeros(count), np.zeros(count)
    ok = np.zeros(count, dtype=bool)
    tries = _Tries(inner, active=chains is not None)
    reuse = Reuse()
    for k in range(count):
        src, snk = source_caps[k], sink_caps[k]
        reused = None
        if n >= REUSE_FROM_N:
            reused = reuse.try_cut(src, snk, min(float(src.sum()), float(snk.sum())) + tol)
        if reused is not None:
            value[k], error[k], side, net = reused
            ok[k] = error[k] <= tol
            if ok[k]:
                reuse.add(src, side, net)
                continue
        rollouts = None
        level = tries.next()
        if chains is not None and level is not None:
            with_regions, ordered = level
            tokens = [int(chains[0][k]), int(chains[1][k])]
            if with_regions or ordered:
                rollouts = graph.rollouts(src, snk)
            start = time.process_time()
            mask = _subgraph(tries.base, tokens, rollouts if with_regions else None) & positive
            got = graph.solve(src, snk, mask=mask, rollouts=rollouts, ordered=ordered)
            tries.record(ordered, time.process_time() - start, got.ok)
            if got.ok:
                value[k], error[k], ok[k] = got.value, got.error, True
                reuse.add(src, got.side, got.net)
                continue
        got = graph.solve(src, snk, rollouts=rollouts, refine=_refine)
        value[k], error[k], ok[k] = got.value, got.error, got.ok
        if got.net is not None:
            reuse.add(src, got.side, got.net)
    return Direct(value, error, ok)


class _Tries:
    """Which subgraph (a :data:`LEVELS` entry) and node order the next problem tries."""

    def __init__(self, inner: list[np.ndarray], *, active: bool) -> None:
        self.inner = inner
        self.level = 0 if active and LEVELS else len(LEVELS)
        self.base = _base(inner, LEVELS[0][0]) if self.level < len(LEVELS) else None
        self._reset()

    def _reset(self) -> None:
        self.tried = self.failed = self.failed_in_row = 0
        self.spent, self.runs = [0.0, 0.0], [0, 0]

    def next(self) -> tuple[bool, bool] | None:
        """(regions, ordered) for the next try, or None: go to the whole graph."""
        if self.level < len(LEVELS) and (
            (self.tried >= TRIAL and self.failed > FAIL_SHARE * self.tried)
            or self.failed_in_row >= FAILS_IN_ROW
        ):
            self.level += 1  # these subgraphs do not pay: larger ones
            if self.level < len(LEVELS) and LEVELS[self.level][0] != LEVELS[self.level - 1][0]:
                self.base = _base(self.inner, LEVELS[self.level][0])
            self._reset()
        if self.level >= len(LEVELS):
            return None
        if min(self.runs) < ORDER_PROBE:
            ordered = self.runs[1] < self.runs[0]
        else:
            ordered = self.spent[1] / self.runs[1] < self.spent[0] / self.runs[0]
        return LEVELS[self.level][1], ordered

    def record(self, ordered: bool, seconds: float, ok: bool) -> None:
        self.tried += 1
        self.failed += not ok
        self.failed_in_row = 0 if ok else self.failed_in_row + 1
        self.spent[ordered] += seconds
        self.runs[ordered] += 1


def _base(inner: list[np.ndarray], keep: int) -> np.ndarray:
    """:func:`_strongest` of every edge layer, as :class:`._flow_layers.Layered` holds
    them (reversed edges, next to the sink first): (D−1, n, n) bool."""
    return np.stack([_strongest(matrix, keep).T for matrix in inner[::-1]])


def _subgraph(
    base: np.ndarray, tokens: list[int], rollouts: tuple[np.ndarray, np.ndarray] | None
) -> np.ndarray:
    """One problem's subgraph (in :class:`._flow_layers.Layered`'s layout): ``base``
    plus every edge into or out of the tokens' nodes, into a node that carries
    at least :data:`REGION` of its layer's largest sink demand, or out of one
    with as much of the source's supply (block attention: the blocks of the
    source and of the sink)."""
    mask = base.copy()
    mask[:, tokens, :] = True
    mask[:, :, tokens] = True
    if rollouts is None:
        return mask
    demand, supply = rollouts
    near_sink = demand[:-1] >= REGION * demand[:-1].max(axis=1, keepdims=True)
    near_source = supply[1:] >= REGION * supply[1:].max(axis=1, keepdims=True)
    mask |= near_sink[:, :, None]
    mask |= near_source[:, None, :]
    return mask


def _strongest(matrix: np.ndarray, keep: int) -> np.ndarray:
    """Mask of each row's and each column's ``keep`` largest entries, plus the diagonal."""
    n = matrix.shape[0]
    mask = np.zeros(matrix.shape, dtype=bool)
    if keep >= n:
        mask[:] = True
    else:
        top_cols = np.argpartition(-matrix, keep - 1, axis=1)[:, :keep]
        mask[np.arange(n)[:, None], top_cols] = True
        top_rows = np.argpartition(-matrix, keep - 1, axis=0)[:keep, :]
        mask[top_rows, np.arange(n)[None, :]] = True
    mask[np.arange(n), np.arange(n)] = True
    return mask


def _refine(
    flow: csr_array,
    arcs: tuple[np.ndarray, np.ndarray],
    spare: np.ndarray,
    caps: np.ndarray,
    pos: np.ndarray,
    lower: float,
    upper: float,
) -> tuple[float, float, np.ndarray]:
    """Second solve on the residual graph of a flow of value ``lower``: (value, error, side).

    ``upper`` (a cut's price) bounds the maximum, so what is left, G = upper −
    lower, is found in the residual graph with each arc's spare clipped to G
    (a flow of value ≤ G never needs more on one arc) and scaled by 2**30/G,
    rounded down: its resolution is G·2**-30 per arc instead of 2**-30. The
    new integer residual graph's cut, priced in float64, is the upper bound;
    ``error`` = upper − lower after the solve.
    """
    num_nodes = flow.shape[0]
    tails, heads = arcs
    gap = upper - lower
    if gap <= 0.0:
        return upper, max(gap, 0.0), np.zeros(num_nodes, dtype=bool)
    scale = SCALE / gap
    data = np.floor(np.clip(spare, 0.0, gap) * scale).astype(np.int32)
    graph = csr_array((data, flow.indices, flow.indptr), shape=flow.shape)
    result = maximum_flow(graph, 0, num_nodes - 1, method="dinic")
    same = np.array_equal(result.flow.indptr, flow.indptr) and np.array_equal(
        result.flow.indices, flow.indices
    )  # every arc already had its reverse, so scipy added none: same order
    positions = slice(None) if same else arc_positions(result.flow, tails, heads)
    net = result.flow.data[positions]
    lower += float(result.flow_value) / scale
    side = _reach(num_nodes, tails, heads, data.astype(np.int64) - net > 0, start=0)
    mine = (side[tails] & ~side[heads])[pos]
    upper = min(upper, float(caps[mine].sum()))
    rounding = float(np.count_nonzero(mine)) * 2.0**-53
    return upper, max(upper - lower, 0.0) + rounding, side


def _reach(
    num_nodes: int,
    tails: np.ndarray,
    heads: np.ndarray,
    keep: np.ndarray,
    *,
    start: int,
    backwards: bool = False,
) -> np.ndarray:
    """Nodes reachable from ``start`` over the arcs ``tails[keep] → heads[keep]``
    (``tails`` ascending); ``backwards``: the nodes that reach ``start``."""
    t, h = tails[keep], heads[keep]
    counts = np.bincount(t, minlength=num_nodes)
    indptr = np.zeros(num_nodes + 1, dtype=np.int32)
    np.cumsum(counts, out=indptr[1:])
    # float64 data: scipy's graph validation would otherwise copy it as float64
    graph = csr_array((np.ones(h.size), h.astype(np.int32), indptr), shape=(num_nodes,) * 2)
    if backwards:
        graph = graph.T.tocsr()  # a counting sort, O(arcs)
    found = breadth_first_order(graph, start, directed=True, return_predecessors=False)
    side = np.zeros(num_nodes, dtype=bool)
    side[found] = True
    return side
