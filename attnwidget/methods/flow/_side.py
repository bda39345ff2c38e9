"""Route amounts from a root into some nodes of one side of a cut: one small exact max flow.

Part of exact attention flow (Abnar & Zuidema, ACL 2020,
:mod:`attnwidget.methods.flow.flow`); the layout is :class:`._flow_proof.Net`'s
(root A, node layers 0 … D−1). :mod:`._flow_proof` routes rounding losses
along trees, which carries small amounts; when a tree cannot (larger
amounts, or thin arcs near the root), the amounts are sent as one max flow
(scipy's Dinic) through the residual arcs inside the region: spare capacity
forward, flow backward. Capacities are scaled by 2**30 over the total to
send, so what rounding leaves is below 2**-30 of it per arc; the caller
routes that remainder again.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from attnwidget.methods.flow.edges import SCALE, arc_positions

if TYPE_CHECKING:
    from attnwidget.methods.flow._proof import Net

#: Largest region (arcs inside it) sent as one max flow.
MOST_ARCS = 60_000


def side_flow(
    net: Net, region: np.ndarray, need: np.ndarray, *, share: float = 1e-6
) -> tuple[Net, np.ndarray] | None:
    """Send ``need`` (D, n) from A to its nodes inside ``region`` (D, n): (net, left) or None.

    The returned net carries the sent flow; ``left`` (D, n) is what rounding
    kept from arriving (≥ 0). None when less than ``1 − share`` of the total
    arrives, or the region holds more than :data:`MOST_ARCS` arcs.
    """
    depth = region.shape[0]
    members = [np.flatnonzero(region[t]) for t in range(depth)]
    sizes = [m.size for m in members]
    if sum(a * b for a, b in itertools.pairwise(sizes)) > MOST_ARCS:
        return None
    offsets = np.cumsum([1, *sizes])
    size = int(offsets[-1]) + 1  # 0: the root, last: where the needs go
    total = float(need.sum())
    rows = members[0]
    root = net.a[rows] - net.fa[rows]
    tails = [np.zeros(rows.size, dtype=np.int64)]
    heads = [offsets[0] + np.arange(rows.size)]
    caps = [root]
    for t in range(depth):
        wanting = np.flatnonzero(need[t][members[t]] > 0)
        tails.append(offsets[t] + wanting)
        heads.append(np.full(wanting.size, size - 1))
        caps.append(need[t][members[t][wanting]])
    blocks = []
    for t in range(depth - 1):
        here, there = members[t], members[t + 1]
        if here.size == 0 or there.size == 0:
            continue
        block = np.ix_(here, there)
        i = offsets[t] + np.repeat(np.arange(here.size), there.size)
        k = offsets[t + 1] + np.tile(np.arange(there.size), here.size)
        tails += [i, k]
        heads += [k, i]
        caps += [(net.caps[t][block] - net.flow[t][block]).ravel(), net.flow[t][block].ravel()]
        blocks.append((t, block))
    tail, head = np.concatenate(tails), np.concatenate(heads)
    scale = SCALE / max(total, 1e-300)
    data = np.floor(np.clip(np.concatenate(caps), 0.0, total) * scale)
    # Arcs of no capacity are left out (their flows read as 0 below).
    order = np.flatnonzero(data > 0)
    order = order[np.argsort(tail[order] * size + head[order], kind="stable")]
    indptr = np.zeros(size + 1, dtype=np.int32)
    np.cumsum(np.bincount(tail[order], minlength=size), out=indptr[1:])
    graph = csr_array(
        (data[order].astype(np.int32), head[order].astype(np.int32), indptr), shape=(size, size)
    )
    result = maximum_flow(graph, 0, size - 1, method="dinic")
    if float(result.flow_value) / scale < total * (1.0 - share):
        return None
    got = np.zeros(tail.size)
    got[order] = result.flow.data[arc_positions(result.flow, tail[order], head[order])] / scale
    fa = net.fa.copy()
    fa[rows] += got[: rows.size]
    start = rows.size
    left = need.copy()
    for t in range(depth):
        wanting = np.flatnonzero(need[t][members[t]] > 0)
        left[t][members[t][wanting]] -= got[start : start + wanting.size]
        start += wanting.size
    flow = net.flow.copy()
    kept = np.zeros(tail.size, dtype=bool)
    kept[order] = True
    for t, block in blocks:
        count = block[0].size * block[1].size
        # scipy's flows are net, the backward arc's the negative of the
        # forward's; read the one that was given to it.
        ahead, back = slice(start, start + count), slice(start + count, start + 2 * count)
        change = np.where(kept[ahead], got[ahead], -got[back])
        flow[t][block] += change.reshape(block[0].size, block[1].size)
        start += 2 * count
    np.clip(flow, 0.0, net.caps, out=flow)
    return replace(net, fa=np.minimum(fa, net.a), flow=flow), np.maximum(left, 0.0)
