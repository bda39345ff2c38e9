"""The level-of-detail pyramid and the tiles of AttentionMatrixView.

A matrix M of shape (R, C) is served as square tiles of :data:`TILE` cells
from a pyramid of pooled copies, as map viewers serve a map (a "mipmap",
Williams 1983). Level 0 is M itself; level k pools blocks of 2**k × 2**k
cells, so it has ``ceil(R / 2**k)`` × ``ceil(C / 2**k)`` cells. Block (a, b)
of level k covers rows ``a·2**k … min((a+1)·2**k, R) - 1`` and columns
likewise; blocks at the bottom and right edges are smaller, and their pooled
value covers only the cells they hold:

- ``pool="max"`` (default): the largest weight in the block, so a single
  strong link stays visible at any zoom (a mean would fade it by 1/4**k);
- ``pool="mean"``: the mean of the block's cells.

The pyramid stops at the first level of at most :data:`OVERVIEW` cells per
side (for n = 4,096: 64 × 64, 8 KB of float16); that whole level travels
in the widget's state, so the first frame needs no request at all.

Tile (i, j) of level k holds that level's cells ``i·TILE … (i+1)·TILE - 1``
(rows) by ``j·TILE …`` (columns), smaller at the edges, as float16 on the
wire (:mod:`attnwidget.views.core.buffers`; rescaled by a power of two only when
a value is beyond float16's range; weights under 6e-8 are sent as 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np

from attnwidget.views.core.buffers import encode_array

#: Cells per side of one tile (a level-0 tile: 128 × 128 float16 = 32 KiB).
TILE = 128
#: The coarsest level has at most this many cells per side (sent with the state).
OVERVIEW = 64
#: Largest binary payload of one reply (the Jupyter server drops messages over 10 MiB).
MAX_REPLY_BYTES = 8 * 2**20
#: Tiles one request may ask for.
MAX_TILES_PER_REQUEST = 512

Pool = Literal["max", "mean"]
POOLS: tuple[str, ...] = ("max", "mean")


def level_sizes(rows: int, cols: int, overview: int = OVERVIEW) -> list[tuple[int, int]]:
    """(rows, cols) of each level, from level 0 (the matrix) to the overview."""
    sizes = [(rows, cols)]
    while max(sizes[-1]) > overview:
        r, c = sizes[-1]
        sizes.append(((r + 1) // 2, (c + 1) // 2))
    return sizes


def pool_once(matrix: np.ndarray, how: Pool, rows: int, cols: int, factor: int) -> np.ndarray:
    """One level coarser: 2 × 2 blocks of ``matrix`` (a level whose blocks
    are ``factor`` cells of the original ``rows`` × ``cols``) pooled.

    Max pooling nests: the max of four maxima is the max of their cells. Mean
    pooling nests once each block is weighted by how many cells it holds
    (edge blocks hold fewer); the counts factor into a row count times a
    column count, so rows are pooled first, then columns.
    """
    row_counts = _block_counts(rows, factor, matrix.shape[0])
    col_counts = _block_counts(cols, factor, matrix.shape[1])
    half = _pool_axis(matrix, how, row_counts)
    return _pool_axis(half.T, how, col_counts).T


def _pool_axis(matrix: np.ndarray, how: Pool, counts: np.ndarray) -> np.ndarray:
    """Pairs of rows pooled (an odd last row stands alone)."""
    r = matrix.shape[0]
    even, odd = matrix[0 : r - r % 2 : 2], matrix[1::2]
    if how == "max":
        out = np.maximum(even, odd)
    else:
        w0 = counts[0 : r - r % 2 : 2, None]
        w1 = counts[1::2, None]
        out = (even * w0 + odd * w1) / (w0 + w1)
    if r % 2:
        out = np.concatenate([out, matrix[r - 1 :]], axis=0)
    return out.astype(np.float32, copy=False)


def _block_counts(total: int, factor: int, blocks: int) -> np.ndarray:
    """How many original cells (along one axis) each of ``blocks`` blocks of ``factor`` holds."""
    starts = np.arange(blocks, dtype=np.int64) * factor
    return np.minimum(factor, total - starts).astype(np.float32)


def pyramid(matrix: np.ndarray, how: Pool = "max", overview: int = OVERVIEW) -> list[np.ndarray]:
    """Every level of ``matrix`` (float32), level 0 first (the matrix itself, not copied)."""
    if how not in POOLS:
        raise ValueError(f"pool={how!r} is not one of {POOLS}.")
    level = np.asarray(matrix, dtype=np.float32)
    rows, cols = level.shape
    levels = [level]
    factor = 1
    while max(levels[-1].shape) > overview:
        levels.append(pool_once(levels[-1], how, rows, cols, factor))
        factor *= 2
    return levels


def tile_grid(size: tuple[int, int], tile: int = TILE) -> tuple[int, int]:
    """How many tiles (down, across) cover a level of ``size`` cells."""
    return math.ceil(size[0] / tile), math.ceil(size[1] / tile)


def tile_of(level: np.ndarray, i: int, j: int, tile: int = TILE) -> np.ndarray:
    """Tile (i, j) of one level (a view)."""
    return level[i * tile : (i + 1) * tile, j * tile : (j + 1) * tile]


def encode_tile(values: np.ndarray, name: str) -> tuple[bytes, dict[str, Any]]:
    """A tile as float16 bytes and its wire meta (``dtype``, ``shape``, maybe ``scale``)."""
    return encode_array(values, "float16", name=name, fit="rescale", underflow="allow")


def tile_replies(
    levels: list[np.ndarray],
    level: int,
    tiles: list[tuple[int, int]],
    header: dict[str, Any],
    limit: int = MAX_REPLY_BYTES,
) -> Iterator[tuple[dict[str, Any], list[bytes]]]:
    """(content, buffers) messages answering a request for ``tiles`` of ``level``.

    Each message holds as many tiles as fit in ``limit`` bytes (one buffer per
    tile); ``content`` is ``header`` plus ``"level"`` and ``"tiles"``: one
    ``{"i", "j", "dtype", "shape", ["scale"]}`` per buffer, in order.
    """
    grid = tile_grid(levels[level].shape)
    described: list[dict[str, Any]] = []
    buffers: list[bytes] = []
    size = 0
    for i, j in tiles:
        if not (0 <= i < grid[0] and 0 <= j < grid[1]):
            raise ValueError(
                f"tile ({i}, {j}) is outside level {level}'s {grid[0]}×{grid[1]} tiles"
            )
        data, meta = encode_tile(tile_of(levels[level], i, j), f"tile ({i}, {j}) of level {level}")
        if buffers and size + len(data) > limit:
            yield {**header, "level": level, "tiles": described}, buffers
            described, buffers, size = [], [], 0
        described.append({"i": i, "j": j, **meta})
        buffers.append(data)
        size += len(data)
    if buffers:
        yield {**header, "level": level, "tiles": described}, buffers


def value_range(matrix: np.ndarray) -> tuple[float, float]:
    """(lo, hi) of the drawn weights: 0 … max for weights (never negative), else min … max."""
    lo, hi = float(matrix.min(initial=0.0)), float(matrix.max(initial=0.0))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return 0.0, 1.0
    lo = min(lo, 0.0)
    if hi <= lo:
        hi = lo + 1.0
    return lo, hi
