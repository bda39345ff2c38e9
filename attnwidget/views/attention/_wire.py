"""How HeadView and ModelView attention is packed for the page: preloaded
chunks, chunk replies to the page's requests, what a saved page records,
and ModelView's pooled thumbnails (format: :mod:`attnwidget.views.attention._shared`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from attnwidget.views.core.attention_data import (
    MAX_MESSAGE_BYTES,
    PRELOAD_BYTES,
    WIRE_DTYPE,
    AttentionMatrix,
    AttentionSet,
    decode_float16,
    encode_float16,
)

# -- thumbnails (ModelView) ---------------------------------------------------

#: Thumbnails show attention pooled to at most this many bins per side.
MAX_THUMB_BINS = 48
#: Float16 bytes of one matrix's thumbnails, at most.
THUMB_BYTES = 2**20


def bin_edges(n: int, bins: int, split: int | None = None) -> np.ndarray:
    """Edges of at most ``bins`` contiguous token bins; ``split`` is always an edge.

    Keeping the sentence-B start as an edge lets the page apply the pair
    filters to pooled thumbnails exactly (no bin straddles both sentences).
    """
    if n <= bins:
        return np.arange(n + 1)
    if split is None or not 0 < split < n:
        return np.unique(np.linspace(0, n, bins + 1).round().astype(np.int64))
    first = min(bins - 1, max(1, round(bins * split / n)))
    a = np.linspace(0, split, first + 1).round().astype(np.int64)
    b = np.linspace(split, n, bins - first + 1).round().astype(np.int64)
    return np.unique(np.concatenate([a, b]))


def pool(weights: np.ndarray, row_edges: np.ndarray, col_edges: np.ndarray) -> np.ndarray:
    """Block-pool (..., rows, cols): mean over the rows of a bin, sum over its columns.

    So each pooled row still sums to 1 (a query bin's average attention to
    each key bin), and an exact copy comes back when every bin is one token.
    """
    summed = np.add.reduceat(weights, row_edges[:-1], axis=-2)
    summed = np.add.reduceat(summed, col_edges[:-1], axis=-1)
    counts = np.diff(row_edges).astype(np.float32)
    return (summed / counts[:, None]).astype(np.float32)


def thumbnail_bins(matrix: AttentionMatrix) -> int:
    layers, heads = matrix.shape[:2]
    fit = int(np.sqrt(THUMB_BYTES / (layers * heads * WIRE_DTYPE.itemsize)))
    return max(4, min(MAX_THUMB_BINS, fit))


def thumbnails(attention: AttentionSet) -> tuple[bytes, list[dict[str, Any]]]:
    """Pooled float16 thumbnails of every matrix: (bytes, index)."""
    parts: list[bytes] = []
    index: list[dict[str, Any]] = []
    offset = 0
    for m in attention.matrices:
        layers, _, rows, cols = m.shape
        bins = thumbnail_bins(m)
        split = attention.sentence_b_start if attention.pair_split_applies(m.key) else None
        row_edges = bin_edges(rows, bins, split)
        col_edges = bin_edges(cols, bins, split)
        data = b"".join(
            encode_float16(pool(m.weights[layer], row_edges, col_edges)) for layer in range(layers)
        )
        index.append(
            {
                "matrix": m.key,
                "row_edges": [int(e) for e in row_edges],
                "col_edges": [int(e) for e in col_edges],
                "offset": offset,
                "nbytes": len(data),
            }
        )
        parts.append(data)
        offset += len(data)
    return b"".join(parts), index


def _describe_ids(ids: Sequence[int]) -> str:
    ids = list(ids)
    if ids == list(range(len(ids))):
        return f"0..{len(ids) - 1}"
    return ", ".join(map(str, ids))


def _position(ids: Sequence[int], value: int, name: str) -> int:
    """Position of a layer/head id among those shown (a clear error otherwise)."""
    if isinstance(value, bool) or int(value) not in ids:
        raise ValueError(f"{name}={value!r} is not one of those shown ({_describe_ids(ids)}).")
    return list(ids).index(int(value))


def _put_chunk(out: np.ndarray, descriptor: dict[str, Any], data: bytes) -> None:
    h0, h1 = descriptor["heads"]
    r0, r1 = descriptor["rows"]
    cols = out.shape[-1]
    out[descriptor["layer"], h0:h1, r0:r1] = decode_float16(data, (h1 - h0, r1 - r0, cols))


def _pack(
    wanted: Iterator[tuple[AttentionMatrix, int, tuple[int, int] | None]], budget: int
) -> tuple[bytes, list[dict[str, Any]]]:
    """Chunks of the wanted (matrix, layer, heads) blocks, in order, until ``budget`` bytes."""
    parts: list[bytes] = []
    index: list[dict[str, Any]] = []
    offset = 0
    seen: set[tuple[str, int]] = set()
    for m, layer, heads in wanted:
        if (m.key, layer) in seen:
            continue
        if heads is None:
            seen.add((m.key, layer))
        for descriptor, data in m.chunks(layer, heads):
            if offset + len(data) > budget:
                return b"".join(parts), index  # the page asks for the rest
            index.append({**descriptor, "offset": offset, "nbytes": len(data)})
            parts.append(data)
            offset += len(data)
    return b"".join(parts), index


def _everything(
    attention: AttentionSet, covered: frozenset[str] = frozenset()
) -> Iterator[tuple[AttentionMatrix, int, None]]:
    for m in attention.matrices:
        if m.key in covered:
            continue
        for layer in range(m.shape[0]):
            yield m, layer, None


def _preload(
    attention: AttentionSet,
    first: AttentionMatrix,
    layer: int,
    head: int | None,
    budget: int = MAX_MESSAGE_BYTES,
    covered: frozenset[str] = frozenset(),
) -> tuple[bytes, list[dict[str, Any]]]:
    """The initial state's attention: all of it when small, else what is shown first.

    ``budget`` bounds the bytes (the whole initial state is one message);
    matrices in ``covered`` are left out (the page has them already).
    """
    total = sum(m.nbytes() for m in attention.matrices if m.key not in covered)
    if total <= min(PRELOAD_BYTES, budget):
        return _pack(_everything(attention, covered), budget)
    if layer < 0 or first.key in covered:
        return b"", []
    heads = None if head is None else (head, head + 1)
    return _pack(iter([(first, layer, heads)]), budget)


def _export_order(
    attention: AttentionSet, first: AttentionMatrix, layer: int
) -> Iterator[tuple[AttentionMatrix, int]]:
    """What a saved page records, in order: the shown layer, then every layer of every matrix."""
    if layer >= 0:
        yield first, layer
    for m in attention.matrices:
        for other in range(m.shape[0]):
            if (m.key, other) != (first.key, layer):
                yield m, other


def _attention_messages(
    m: AttentionMatrix, layer: int, heads: tuple[int, int]
) -> Iterator[tuple[dict[str, Any], bytes]]:
    """The kernel's reply to a request for ``heads`` of ``layer``: (content, float16 bytes)."""
    for descriptor, data in m.chunks(layer, heads):
        yield {"type": "attention", **descriptor, "dtype": "float16"}, data
