"""The one reference for attention flow in the tests and ``bench/flow.py``.

Attention flow (Abnar & Zuidema, "Quantifying Attention Flow in Transformers",
ACL 2020) written out independently of attnwidget, as the authors'
``compute_flows`` does it: the full layered networkx DiGraph (nodes (l, i) for
l = 0 … L, an edge (l, i) → (l−1, j) of capacity Â_l[i, j] for every pair)
and ``nx.maximum_flow_value`` with Edmonds–Karp per (source, sink) pair.
Also the attention that makes the check hard (many values below their
trivial bound), and the gate that says whether the compiled solver runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import networkx as nx
import numpy as np
from networkx.algorithms.flow import edmonds_karp

# ------------------------------------------------------------------ reference


def adjusted_attention(attentions: np.ndarray, *, residual: bool = True) -> np.ndarray:
    """The paper's capacities Â_l, (L, n, n): the head mean of (L, H, n, n) attention,
    plus 0.5·I with ``residual`` (halving the attention), rows re-normalised."""
    fused = np.asarray(attentions, dtype=np.float64).mean(axis=1)
    n = fused.shape[-1]
    adjusted = 0.5 * fused + 0.5 * np.eye(n) if residual else fused
    return adjusted / adjusted.sum(axis=-1, keepdims=True)


def reference_flows(
    adjusted: np.ndarray, rows: Sequence[int], sinks: Sequence[int] | None = None
) -> np.ndarray:
    """Raw max flows (len(rows), len(sinks)) from nodes ``rows`` of the top node layer
    L = ``len(adjusted)`` to the input tokens ``sinks`` (None: every token).

    ``adjusted[l-1]`` is Â_l; pass ``adjusted[:top]`` for the sources of a lower layer.
    """
    layers, n = adjusted.shape[0], adjusted.shape[-1]
    graph = nx.DiGraph()
    for layer in range(1, layers + 1):
        for i in range(n):
            for j in range(n):
                graph.add_edge(
                    (layer, i), (layer - 1, j), capacity=float(adjusted[layer - 1, i, j])
                )
    targets = range(n) if sinks is None else sinks
    return np.array(
        [
            [
                nx.maximum_flow_value(graph, (layers, i), (0, j), flow_func=edmonds_karp)
                for j in targets
            ]
            for i in rows
        ]
    )


def reference_bounds(adjusted: np.ndarray, rows: Sequence[int]) -> np.ndarray:
    """Trivial bounds (len(rows), n): min(capacity out of source (L, i), into sink (0, j))."""
    out_cap = adjusted[-1][list(rows)].sum(axis=1)
    in_cap = adjusted[0].sum(axis=0)
    return np.minimum(out_cap[:, None], in_cap[None, :])


# ------------------------------------------------------------ hard attention


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
    """Each row keeps 95 % on its own token, 5 % spread at random."""
    rng = np.random.default_rng(seed)
    spread = rng.random((layers, 2, n, n))
    spread /= spread.sum(axis=-1, keepdims=True)
    return 0.95 * np.eye(n) + 0.05 * spread


def blocks(layers: int, n: int, seed: int, *, width: int = 4, apart_by: float = 6.0) -> np.ndarray:
    """Attention within segments of ``width`` tokens; between them, logits ``apart_by`` lower."""
    rng = np.random.default_rng(seed)
    segment = np.arange(n) // width
    apart = segment[:, None] != segment[None, :]
    return softmax(rng.normal(size=(layers, 2, n, n)) * 2.0 - apart_by * apart)


# ---------------------------------------------------------------- the solver

#: Set in scripts/test.sh's oldest-transformers run, which has no numba: there
#: the uncompiled kernel is what is tested, and it must be the one running.
EXPECT_NO_NUMBA = os.environ.get("ATTNWIDGET_EXPECT_NO_NUMBA") == "1"
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require_compiled_solver() -> None:
    """Skip (on a developer's machine) or fail (in CI) unless numba compiled the solver.

    A missing or broken numba makes flow run its kernel uncompiled: right, but
    not what users get, so CI must not pass silently without it.
    """
    import pytest

    from attnwidget.methods.flow import _push

    reason = _push.warm_up()
    if reason is None:
        return
    message = f"the compiled flow solver is not in use: {reason}"
    if IN_CI and not EXPECT_NO_NUMBA:
        pytest.fail(f"{message} (CI=true: install numba, or set ATTNWIDGET_EXPECT_NO_NUMBA=1)")
    pytest.skip(message)
