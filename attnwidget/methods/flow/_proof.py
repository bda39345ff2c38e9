"""Exact max-flow values from an integer flow: route its rounding losses along trees.

Part of exact attention flow (Abnar & Zuidema, ACL 2020,
:mod:`attnwidget.methods.flow.flow`). scipy's max flow takes int32 capacities, so
they are rounded down to multiples of 2**-30 (:mod:`._flow_edges`): the
integer flow is feasible, and short of the maximum by at most what rounding
lost on the edges of a minimum cut. This module proves, without another
solve, that those losses can be sent, which makes the cut's price (summed in
float64 from the real capacities) the exact value.

The graph is layered, held dense: a root A, node layers 0 … D−1 of n nodes,
a root Z; arcs A → layer 0, layer t → t+1 (``caps[t]`` (n, n)), layer D−1 → Z.

**The proof.** Let X be a set of nodes holding A and not Z (the source side
of a cut) and δ_a > 0 the spare capacity of each residual arc a leaving X
(rounding losses, and the capacity of edges a subgraph solve left out). A
spanning tree of X's residual arcs rooted at A, and one of the rest's rooted
at Z (arcs towards Z), carry every δ_a from A to a's tail and from a's head
to Z. Each tree arc then carries the δ's of the nodes below it; if none
exceeds that arc's spare capacity, the flow plus these routes is feasible,
crosses the cut on every arc at full capacity, so its value is the cut's
price and the maximum. The trees take each node's widest arc, in rounds of
decreasing width (:data:`WIDTHS`), so that the heavy arcs near the roots are
the wide ones; arcs may run against the layers (cancelling flow), which is
what the proof needs where a node's own arc towards a root is saturated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnwidget.methods.flow._side import side_flow

#: Rounds of tree growth: arcs at least this wide, in turn. The δ's are below
#: 2**-30 each, their sums near the roots below ~1e-5, so arcs ≥ 2**-20 are
#: wide enough for any subtree; thinner ones only take the remaining nodes.
WIDTHS = (2.0**-20, 2.0**-32, 0.0)
#: Fewest tokens for which the last resort is :func:`._flow_side.side_flow`
#: (below, the caller's second solve on the residual graph costs less).
SIDE_FLOW_FROM_N = 96
#: Relative margin on every load check (float64 round-off of loads and spares).
MARGIN = 1e-9


@dataclass(frozen=True)
class Net:
    """A flow on the layered graph: capacities and flows of every arc, float64.

    ``a``, ``fa`` (n,): arcs A → layer 0; ``caps``, ``flow`` (D−1, n, n): layer
    t → t+1; ``z``, ``fz`` (n,): layer D−1 → Z.
    """

    a: np.ndarray
    fa: np.ndarray
    caps: np.ndarray
    flow: np.ndarray
    z: np.ndarray
    fz: np.ndarray

    def flipped(self) -> Net:
        """The same arcs seen from Z: layers reversed, every arc turned round."""
        return Net(
            self.z,
            self.fz,
            self.caps[::-1].transpose(0, 2, 1),
            self.flow[::-1].transpose(0, 2, 1),
            self.a,
            self.fa,
        )


def reach(
    start: np.ndarray,
    down: Callable[[int, np.ndarray], np.ndarray],
    up: Callable[[int, np.ndarray], np.ndarray],
    depth: int,
    region: np.ndarray | None = None,
) -> np.ndarray:
    """Nodes reachable from A (inside ``region``, (D, n), if given): (D, n) bool.

    ``start`` (n,): usable arcs A → layer 0; ``down(t, rows)`` (rows.sum(), n):
    usable arcs from those nodes of layer t to layer t+1; ``up(t, cols)`` (n,
    cols.sum()): usable arcs from those nodes of layer t+1 back to layer t (a
    flow to cancel). Both are only asked about nodes already reached.
    """
    seen = np.zeros((depth, start.size), dtype=bool)
    seen[0] = start if region is None else start & region[0]
    went_down = np.zeros_like(seen)  # the nodes each layer last passed on, per direction
    went_up = np.zeros_like(seen)
    changed = True
    while changed:
        changed = False
        for t in range(depth - 1):
            new = seen[t] & ~went_down[t]
            if new.any():
                went_down[t] |= new
                got = down(t, new).any(axis=0) & ~seen[t + 1]
                if region is not None:
                    got &= region[t + 1]
                seen[t + 1] |= got
        for t in range(depth - 2, -1, -1):
            new = seen[t + 1] & ~went_up[t + 1]
            if new.any():
                went_up[t + 1] |= new
                got = up(t, new).any(axis=1) & ~seen[t]
                if region is not None:
                    got &= region[t]
                if got.any():
                    seen[t] |= got
                    changed = True
        changed |= bool((seen & ~went_down)[:-1].any())
    return seen


def prove(net: Net, side: np.ndarray, lacking: np.ndarray | None = None) -> tuple[bool, float, int]:
    """Is the maximum flow the price of the cut with source side ``side`` (D, n)?

    Returns ``(ok, price, terms)``: ``price`` is the cut's capacity summed in
    float64 (``terms`` positive terms, so round-off ≤ terms·2**-53); ``ok``
    when the losses of every arc leaving ``side`` are routed (module docstring).
    ``lacking`` (D, n): inflow some nodes of ``side`` lack for conservation, to
    be brought from A as well.
    """
    other = ~side
    depth = side.shape[0]
    need_a = np.zeros(side.shape) if lacking is None else lacking.copy()  # from A
    need_z = np.zeros(side.shape)  # what the tree to Z takes from each node
    cut_a, cut_z = net.a[other[0]], net.z[side[-1]]
    price = float(cut_a.sum()) + float(cut_z.sum())
    terms = int(np.count_nonzero(cut_a) + np.count_nonzero(cut_z))
    need_z[0][other[0]] = cut_a - net.fa[other[0]]
    need_a[-1][side[-1]] = cut_z - net.fz[side[-1]]
    for t in range(depth - 1):
        here, there = np.flatnonzero(side[t]), np.flatnonzero(other[t + 1])
        if here.size and there.size:  # forward arcs leaving the side
            block = np.ix_(here, there)
            caps = net.caps[t][block]
            price += float(caps.sum())
            terms += int(np.count_nonzero(caps))
            out = caps - net.flow[t][block]
            need_a[t][here] += out.sum(axis=1)
            need_z[t + 1][there] += out.sum(axis=0)
        here, there = np.flatnonzero(other[t]), np.flatnonzero(side[t + 1])
        if here.size and there.size:  # flows entering the side, to cancel
            back = net.flow[t][np.ix_(here, there)]
            need_z[t][here] += back.sum(axis=1)
            need_a[t + 1][there] += back.sum(axis=0)
    if not _routable(net, side, need_a):
        return False, price, terms
    return _routable(net.flipped(), other[::-1], need_z[::-1]), price, terms


def _wide(net: Net, region: np.ndarray, need: np.ndarray) -> bool:
    """Quick sufficient test: every node with a need is reached inside ``region``
    over arcs whose spare capacity is at least the total need Δ (then any route
    puts at most Δ on an arc)."""
    total = float(need.sum()) * (1.0 + MARGIN) + 1e-300
    caps, flow = net.caps, net.flow

    def down(t: int, rows: np.ndarray) -> np.ndarray:
        return caps[t][rows] - flow[t][rows] >= total

    def up(t: int, cols: np.ndarray) -> np.ndarray:
        return flow[t][:, cols] >= total

    seen = reach(net.a - net.fa >= total, down, up, region.shape[0], region)
    return not (need > 0)[~seen].any()


def _routable(net: Net, region: np.ndarray, need: np.ndarray) -> bool:
    """Can ``need`` (D, n) be sent from A to its nodes inside ``region``?

    Along arcs as wide as the total (:func:`_wide`), else spread down the
    layers in proportion (:func:`_spread`), else along one tree (:func:`_tree`),
    else as one small max flow (:func:`._flow_side.side_flow`) whose rounding
    remainder then goes along a tree.
    """
    if not (need > 0).any() or _wide(net, region, need) or _spread(net, region, need):
        return True
    if _tree(net, region, need):
        return True
    if net.a.size < SIDE_FLOW_FROM_N:  # a second solve on the residual graph is cheaper
        return False
    sent = side_flow(net, region, need)
    if sent is None:
        return False
    moved, left = sent
    return not (left > 0).any() or _wide(moved, region, left) or _tree(moved, region, left)


def _spread(net: Net, region: np.ndarray, need: np.ndarray) -> bool:
    """Send ``need`` from A down the layers only, split in proportion to capacity.

    ``room[t][k]``: what the forward arcs inside ``region`` can bring to node
    (t, k) (each arc's spare, capped by what its tail can get; an upper bound
    when paths share arcs). Each node's load (its need plus what it passes
    down) is split over its incoming arcs in proportion to their share of
    that room, so an arc's load stays within its spare capacity as long as
    each node's load stays within its room, which is checked layer by layer.
    """
    depth = region.shape[0]
    inside = region.astype(np.float64)
    room = np.zeros(region.shape)
    room[0] = np.where(region[0], net.a - net.fa, 0.0)
    shares = []
    for t in range(depth - 1):
        share = np.minimum((net.caps[t] - net.flow[t]) * inside[t][:, None], room[t][:, None])
        share *= inside[t + 1][None, :]
        shares.append(share)
        room[t + 1] = share.sum(axis=0)
    load = need[-1]
    for t in range(depth - 1, -1, -1):
        if (load > room[t] * (1.0 - MARGIN)).any():
            return False
        if t == 0:
            return True
        part = np.divide(load, room[t], out=np.zeros_like(load), where=room[t] > 0)
        load = need[t - 1] + shares[t - 1] @ part
    return True


def _tree(net: Net, region: np.ndarray, need: np.ndarray) -> bool:
    """Can ``need`` (D, n) reach its nodes of ``region`` from A along one tree?

    The tree is grown inside ``region`` from A over residual arcs (forward:
    spare capacity; backward: flow), each new node taking its widest arc to
    a node already in, one :data:`WIDTHS` round after another, until every
    node with a need is in; then every tree arc's load (the needs of the
    nodes below it) is checked against its spare capacity.
    """
    depth, n = region.shape
    needed = need > 0
    spare = net.caps - net.flow
    root = np.where(region[0], net.a - net.fa, 0.0)
    inside = np.zeros((depth, n), dtype=bool)
    width = np.zeros((depth, n))
    steps: list[tuple[int, np.ndarray, int, np.ndarray]] = []  # (layer, nodes, from layer, parents)
    passes = [(t, t + 1) for t in range(depth - 1)]
    passes += [(t, t - 1) for t in range(depth - 1, 0, -1)]
    for least in WIDTHS:
        new = region[0] & ~inside[0] & (root > least)
        inside[0] |= new
        width[0][new] = root[new]
        grown = True
        while grown and (needed & ~inside).any():
            grown = False
            for t, to in passes:
                grown |= _grow(spare, net.flow, region, inside, width, steps, t, to, least)
        if not (needed & ~inside).any():
            break
    else:
        return False
    load = np.where(inside, need, 0.0)
    for layer, nodes, above, parents in reversed(steps):
        np.add.at(load[above], parents, load[layer][nodes])
    return not (load > width * (1.0 - MARGIN)).any()


def _grow(
    spare: np.ndarray,
    flow: np.ndarray,
    region: np.ndarray,
    inside: np.ndarray,
    width: np.ndarray,
    steps: list[tuple[int, np.ndarray, int, np.ndarray]],
    t: int,
    to: int,
    least: float,
) -> bool:
    """Add the nodes of layer ``to`` reached from tree nodes of layer ``t`` over arcs > least."""
    if not inside[t].any():
        return False
    todo = region[to] & ~inside[to]
    if not todo.any():
        return False
    # Arc (t, i) → (t+1, k): spare[t][i, k]; arc (t, k) → (t−1, i): flow[t−1][i, k].
    arcs = spare[t] if to == t + 1 else flow[to].T
    sub = arcs[inside[t]][:, todo]
    best = sub.argmax(axis=0)
    wide = sub[best, np.arange(best.size)]
    ok = wide > least
    if not ok.any():
        return False
    nodes = np.flatnonzero(todo)[ok]
    parents = np.flatnonzero(inside[t])[best[ok]]
    inside[to][nodes] = True
    width[to][nodes] = wide[ok]
    steps.append((to, nodes, t, parents))
    return True
