"""The kernel of :mod:`._push`: phase-one push–relabel on bit sets.

Push–relabel is Goldberg & Tarjan's (JACM 1988); attention flow is Abnar &
Zuidema's (ACL 2020). These are plain functions, compiled with numba on
first use (:func:`attnwidget.methods.flow._push.kernel`); numba is imported
only then, not with the package (it costs ~0.5 s). Without a working numba
the same functions run uncompiled: every operation is int64 or float64 in the
same order, so the values are the same to the bit, only slower. See
:mod:`._push` for the method, the certificate and why the arrays are bit sets.

The arrays, for node (l, i) (l = 0 … top−1; l = 0 are the input tokens;
node id l·n + i; N = top·n means "cannot reach the sink"):

* ``room_down[l, i]``: bits j, arc (l, i) → (l−1, j) has room;
* ``flow_in[l, i]``: bits k, arc (l+1, k) → (l, i) carries flow (so (l, i)
  can push back up to (l+1, k));
* ``room_in[l, j]``: bits i, arc (l+1, i) → (l, j) has room (the transpose
  of ``room_down``, for the breadth-first search);
* ``flow_down[l, j]``: bits k, arc (l, j) → (l−1, k) carries flow (the
  transpose of ``flow_in``);
* ``level[l, d]``: bits i, node (l, i) has label d;
* ``f[a, i, j]``: the integer flow on arc (a+1, i) → (a, j), ``c`` its
  capacity.
"""

from __future__ import annotations

import numpy as np

#: Capacities become integers at this scale (2**56; see :mod:`._push`).
SCALE = float(2**56)
#: Lowest set bit of a 64-bit word by de Bruijn multiplication (numba has no ctz).
_DE_BRUIJN = 0x03F79D71B4CB0A89
_BIT_INDEX = np.zeros(64, dtype=np.int64)
for _bit in range(64):
    _BIT_INDEX[(((1 << _bit) * 0x03F79D71B4CB0A89) % 2**64) >> 58] = _bit


def _lowest(bit: int) -> int:  # pragma: no cover - jit
    """Index of the single set bit of ``bit`` (an int64 power of two, or int64 min)."""
    return _BIT_INDEX[((bit * _DE_BRUIJN) >> 58) & 63]


def _set(bits: np.ndarray, layer: int, node: int, index: int) -> None:  # pragma: no cover - jit
    bits[layer, node, index >> 6] |= np.int64(1) << (index & 63)


def _clear(bits: np.ndarray, layer: int, node: int, index: int) -> None:  # pragma: no cover - jit
    bits[layer, node, index >> 6] &= ~(np.int64(1) << (index & 63))


def _relabel_all(  # pragma: no cover - jit
    room_in: np.ndarray,
    flow_down: np.ndarray,
    level: np.ndarray,
    label: np.ndarray,
    count: np.ndarray,
    queue: np.ndarray,
    seen: np.ndarray,
    top: int,
    n: int,
    sink: int,
) -> int:
    """Exact distances to ``sink`` in the residual graph; unreachable → N. Returns the top label."""
    big = top * n
    words = seen.shape[1]
    label[:] = big
    count[:] = 0
    level[:] = 0
    seen[:] = 0
    label[sink] = 0
    count[0] = 1
    _set(level, 0, 0, sink)
    seen[0, sink >> 6] |= np.int64(1) << (sink & 63)
    queue[0] = sink
    head = 0
    tail = 1
    top_label = 0
    while head < tail:
        v = queue[head]
        head += 1
        layer = v // n
        j = v - layer * n
        new = label[v] + 1
        for side in range(2):
            if side == 0:
                other = layer + 1  # nodes above with room on their arc into v
                if other > top - 1:
                    continue
            else:
                other = layer - 1  # nodes below that v's flow reached (push back up)
                if other < 0:
                    continue
            for w in range(words):
                if side == 0:
                    m = room_in[layer, j, w] & ~seen[other, w]
                else:
                    m = flow_down[layer, j, w] & ~seen[other, w]
                if m == 0:
                    continue
                seen[other, w] |= m
                level[other, new, w] |= m
                while m != 0:
                    bit = m & -m
                    m ^= bit
                    u = other * n + w * 64 + _lowest(bit)
                    label[u] = new
                    count[new] += 1
                    queue[tail] = u
                    tail += 1
                    top_label = new
    return top_label


def _fill_buckets(  # pragma: no cover - jit
    excess: np.ndarray,
    label: np.ndarray,
    sink: int,
    big: int,
    bucket_head: np.ndarray,
    bucket_next: np.ndarray,
) -> int:
    """Active nodes (excess, label < N, not the sink) into label buckets; the highest label."""
    bucket_head[:] = -1
    highest = -1
    for u in range(big):
        if excess[u] > 0 and u != sink and label[u] < big:
            bucket_next[u] = bucket_head[label[u]]
            bucket_head[label[u]] = u
            if label[u] > highest:
                highest = label[u]
    return highest


def _start(  # pragma: no cover - jit
    c: np.ndarray,
    supply: np.ndarray,
    f: np.ndarray,
    room_down: np.ndarray,
    room_in: np.ndarray,
    flow_in: np.ndarray,
    flow_down: np.ndarray,
    excess: np.ndarray,
    top: int,
    n: int,
) -> None:
    """A bare preflow: no arc carries flow, the source's arcs saturated."""
    f[:] = 0
    room_down[:] = 0
    room_in[:] = 0
    flow_in[:] = 0
    flow_down[:] = 0
    for a in range(top - 1):
        for i in range(n):
            for j in range(n):
                if c[a, i, j] > 0:
                    _set(room_down, a + 1, i, j)
                    _set(room_in, a, j, i)
    excess[:] = 0
    for k in range(n):
        excess[(top - 1) * n + k] = supply[k]


def _gap(  # pragma: no cover - jit
    du: int, top_label: int, level: np.ndarray, label: np.ndarray, count: np.ndarray, n: int
) -> None:
    """No node has label du: those above it cannot reach the sink; label them N."""
    big = level.shape[1] - 1
    for d in range(du + 1, top_label + 1):
        for other in range(level.shape[0]):
            for w in range(level.shape[2]):
                m = level[other, d, w]
                level[other, d, w] = 0
                while m != 0:
                    bit = m & -m
                    m ^= bit
                    label[other * n + w * 64 + _lowest(bit)] = big
        count[d] = 0


def _cut(  # pragma: no cover - jit
    c: np.ndarray,
    real_t: np.ndarray,
    real_source: np.ndarray,
    supply: np.ndarray,
    label: np.ndarray,
    top: int,
    n: int,
) -> tuple[int, float, int]:
    """Capacity of the cut into T' = {label < N}: (integers, floats, arcs counted)."""
    big = top * n
    int_cut = 0
    real_cut = 0.0
    arcs = 0
    for k in range(n):  # the source's arcs
        if label[(top - 1) * n + k] < big:
            int_cut += supply[k]
            real_cut += real_source[k]
            arcs += 1
    for a in range(top - 1):
        for j in range(n):
            if label[a * n + j] == big:
                continue
            for i in range(n):
                if label[(a + 1) * n + i] == big and real_t[a, j, i] > 0:
                    int_cut += c[a, i, j]
                    real_cut += real_t[a, j, i]
                    arcs += 1
    return int_cut, real_cut, arcs


def solve_sinks(  # pragma: no cover - jit
    c: np.ndarray,
    real_t: np.ndarray,
    real_source: np.ndarray,
    supply: np.ndarray,
    sinks: np.ndarray,
    warm: bool,
    global_every: float,
    lower: np.ndarray,
    upper: np.ndarray,
    cut_arcs: np.ndarray,
) -> bool:
    """Phase-one push–relabel for each sink in turn; returns False on an integer cut ≠ flow.

    ``c[a]`` (int64, (n, n)): arcs from node layer a+1 to node layer a
    (a = 0 … top−2); node layer top−1 takes ``supply[s]`` from the source;
    ``real_t`` / ``real_source`` are the float capacities (``real_t[a, j, i]``
    for arc (a+1, i) → (a, j)). ``warm``: carry the preflow from sink to sink
    (else each sink starts from the bare source supply). Fills ``lower`` /
    ``upper`` (flow value, cut capacity) and ``cut_arcs``.
    """
    top = c.shape[0] + 1
    n = c.shape[1]
    big = top * n
    words = (n + 63) // 64
    f = np.zeros_like(c)
    room_down = np.zeros((top, n, words), dtype=np.int64)
    room_in = np.zeros((top, n, words), dtype=np.int64)
    flow_in = np.zeros((top, n, words), dtype=np.int64)
    flow_down = np.zeros((top, n, words), dtype=np.int64)
    level = np.zeros((top, big + 1, words), dtype=np.int64)
    seen = np.zeros((top, words), dtype=np.int64)
    excess = np.zeros(big, dtype=np.int64)
    label = np.full(big, big, dtype=np.int64)
    count = np.zeros(big + 1, dtype=np.int64)
    bucket_head = np.full(big + 1, -1, dtype=np.int64)
    bucket_next = np.full(big, -1, dtype=np.int64)
    queue = np.empty(big, dtype=np.int64)
    every = int(global_every * big) + 1
    ok = True
    for s in range(sinks.size):
        sink = sinks[s]
        if s == 0 or not warm:
            _start(c, supply[s], f, room_down, room_in, flow_in, flow_down, excess, top, n)
        top_label = _relabel_all(room_in, flow_down, level, label, count, queue, seen, top, n, sink)
        highest = _fill_buckets(excess, label, sink, big, bucket_head, bucket_next)
        relabels = 0
        while highest >= 0:
            u = bucket_head[highest]
            if u < 0:
                highest -= 1
                continue
            bucket_head[highest] = bucket_next[u]
            layer = u // n
            i = u - layer * n
            du = label[u]
            while True:
                # push along admissible arcs: room, and a head one label lower
                if du >= 1:
                    for side in range(2):
                        if side == 0:
                            other = layer - 1
                            if other < 0:
                                continue
                        else:
                            other = layer + 1
                            if other > top - 1:
                                continue
                        for w in range(words):
                            if excess[u] == 0:
                                break
                            if side == 0:
                                m = room_down[layer, i, w] & level[other, du - 1, w]
                            else:
                                m = flow_in[layer, i, w] & level[other, du - 1, w]
                            while m != 0 and excess[u] > 0:
                                bit = m & -m
                                m ^= bit
                                t = w * 64 + _lowest(bit)
                                v = other * n + t
                                if side == 0:  # down: (layer, i) → (layer−1, t)
                                    before = f[layer - 1, i, t]
                                    delta = min(excess[u], c[layer - 1, i, t] - before)
                                    f[layer - 1, i, t] = before + delta
                                    if before + delta == c[layer - 1, i, t]:
                                        _clear(room_down, layer, i, t)
                                        _clear(room_in, layer - 1, t, i)
                                    if before == 0:
                                        _set(flow_in, layer - 1, t, i)
                                        _set(flow_down, layer, i, t)
                                else:  # up: undo flow on (layer+1, t) → (layer, i)
                                    before = f[layer, t, i]
                                    delta = min(excess[u], before)
                                    f[layer, t, i] = before - delta
                                    if before == delta:
                                        _clear(flow_in, layer, i, t)
                                        _clear(flow_down, layer + 1, t, i)
                                    if before == c[layer, t, i]:
                                        _set(room_down, layer + 1, t, i)
                                        _set(room_in, layer, i, t)
                                if excess[v] == 0 and v != sink:
                                    bucket_next[v] = bucket_head[du - 1]
                                    bucket_head[du - 1] = v
                                    if du - 1 > highest:
                                        highest = du - 1
                                excess[v] += delta
                                excess[u] -= delta
                if excess[u] == 0:
                    break
                # relabel: one more than the lowest neighbour with room (all are ≥ du)
                relabels += 1
                new = big
                for d in range(du, top_label + 1):
                    found = False
                    for w in range(words):
                        if layer >= 1 and room_down[layer, i, w] & level[layer - 1, d, w] != 0:
                            found = True
                        if layer <= top - 2 and flow_in[layer, i, w] & level[layer + 1, d, w] != 0:
                            found = True
                    if found:
                        new = d + 1
                        break
                _clear(level, layer, du, i)
                count[du] -= 1
                if count[du] == 0:  # gap: nothing at or above du reaches the sink
                    _gap(du, top_label, level, label, count, n)
                    top_label = du - 1
                    new = big
                if new >= big:
                    label[u] = big
                    break
                label[u] = new
                count[new] += 1
                _set(level, layer, new, i)
                if new > top_label:
                    top_label = new
                du = new
            if relabels > every:
                top_label = _relabel_all(
                    room_in, flow_down, level, label, count, queue, seen, top, n, sink
                )
                highest = _fill_buckets(excess, label, sink, big, bucket_head, bucket_next)
                relabels = 0
        # the minimum cut: T' = the nodes that reach the sink in the residual graph
        _relabel_all(room_in, flow_down, level, label, count, queue, seen, top, n, sink)
        int_cut, real_cut, arcs = _cut(c, real_t, real_source[s], supply[s], label, top, n)
        if int_cut != excess[sink]:
            ok = False
        lower[s] = excess[sink] / SCALE
        upper[s] = real_cut
        cut_arcs[s] = arcs
    return ok
