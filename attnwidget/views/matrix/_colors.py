"""AttentionMatrixView's colour scale, fitted to the drawn matrix.

A fixed linear 0 … max scale is unreadable on long inputs: a causal model's
first query attends only to itself (weight 1), sinks take most of every row,
and the other weights are about 1/n, so at 2,000 tokens almost every cell
sits in the darkest hundredth of the scale. The scale is fitted instead:

- ``"linear"``: 0 … the largest weight, unless that exceeds the 99.9th
  percentile of the positive weights more than :data:`CLIP_RATIO` times; then
  0 … that percentile, the cells above it drawn in the top colour and counted
  in the legend.
- ``"log"``: a decade below the 1st percentile of the positive weights …
  the largest (at most :data:`MAX_DECADES` decades); a weight at or under
  the floor, a masked 0 included, takes the bottom colour.
- ``"auto"`` (the default): linear when at least half the positive weights
  reach a tenth of its top, else log (most cells would look alike and dark).

:func:`color_position` is the mapping from a weight to its place on the
scale; ``colorPosition`` in ``js/src/matrix/matrix_draw.ts`` is the same one,
held to it by the golden fixture ``js/test/fixtures/matrix.json``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnwidget.views.core.format import format_number

COLOR_SCALES: tuple[str, ...] = ("auto", "linear", "log")
#: The linear scale's top when the largest weight stands far above the rest.
HIGH_QUANTILE = 0.999
#: The largest weight may exceed the HIGH_QUANTILE weight this much before linear clips.
CLIP_RATIO = 4.0
#: The log scale's floor sits a decade below this quantile of the positive weights.
LOW_QUANTILE = 0.01
#: The log scale spans at most this many decades.
MAX_DECADES = 6.0
#: Cells the quantiles are taken from, at most.
SAMPLE = 2**20
#: Auto picks log when the median positive weight is under this share of linear's top.
DARK = 0.1


@dataclass(frozen=True)
class WeightStats:
    """What the scale is fitted from: one matrix's weights, summarised once."""

    lo: float  # smallest weight (negative only for matrices that are not attention)
    hi: float  # largest weight
    positive: int  # cells > 0
    low: float  # LOW_QUANTILE of the positive weights
    median: float  # median of the positive weights
    high: float  # HIGH_QUANTILE of the positive weights
    above_high: int  # cells above ``high``


def weight_stats(matrix: np.ndarray) -> WeightStats:
    """Summarise ``matrix`` for :func:`fit`.

    The quantiles come from at most :data:`SAMPLE` cells spread evenly over
    the matrix (exact quantiles of 16.8 M weights take ~0.4 s, too slow for a
    head switch); the counts are exact.
    """
    values = np.asarray(matrix, dtype=np.float32)
    lo, hi = float(values.min(initial=0.0)), float(values.max(initial=0.0))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        # The source refuses non-finite weights; drawn anyway, on 0 … 1.
        return WeightStats(0.0, 1.0, 0, 0.0, 0.0, 0.0, 0)
    count = int(np.count_nonzero(values > 0))
    if count == 0:
        return WeightStats(lo, hi, 0, 0.0, 0.0, 0.0, 0)
    flat = values.ravel()
    width = values.shape[-1] if values.ndim else 1
    sample = flat[:: _stride(flat.size, width)]
    positive = sample[sample > 0]
    if positive.size == 0:  # a few positive cells the sample missed: all of them
        positive = flat[flat > 0]
    low, median, high = (
        float(q) for q in np.quantile(positive, [LOW_QUANTILE, 0.5, HIGH_QUANTILE])
    )
    above = int(np.count_nonzero(values > high))
    return WeightStats(lo, hi, count, low, median, high, above)


def _stride(size: int, width: int) -> int:
    """A step through ``size`` cells leaving about :data:`SAMPLE`, coprime with
    the row ``width`` so that every column is sampled alike (a step dividing it
    would sample a few columns only, a sink's among them, in every row)."""
    step = max(1, -(-size // SAMPLE))
    while step > 1 and math.gcd(step, width) != 1:
        step += 1
    return step


@dataclass(frozen=True)
class ColorMap:
    """The scale in use: ``scale`` ("linear" or "log") from ``lo`` to ``hi``."""

    asked: str  # "auto", "linear" or "log": what the view's color_scale says
    scale: str  # "linear" or "log": what is drawn
    lo: float
    hi: float
    clipped: bool  # linear topped at the HIGH_QUANTILE weight: ``above`` cells beyond it
    above: int
    label: str  # the legend's line, e.g. "log scale, 4.7e-5 … 1"

    def to_json(self) -> dict[str, Any]:
        """The synced ``color_map`` trait (matrix_types.ts ``ColorMap``)."""
        return {
            "asked": self.asked,
            "scale": self.scale,
            "lo": self.lo,
            "hi": self.hi,
            "clipped": self.clipped,
            "above": self.above,
            "label": self.label,
        }


def fit(stats: WeightStats, asked: str) -> ColorMap:
    """The colour scale ``asked`` ("auto", "linear" or "log") for weights of ``stats``."""
    if asked not in COLOR_SCALES:
        raise ValueError(f"color_scale={asked!r} is not one of {COLOR_SCALES}.")
    if stats.positive == 0 or stats.lo < 0:
        # No positive weight, or signed values (not attention): min … max, linear.
        lo = min(stats.lo, 0.0)
        hi = stats.hi if stats.hi > lo else lo + 1.0
        label = f"linear {_range(lo, hi)}"
        return ColorMap(asked, "linear", lo, hi, False, 0, _prefix(asked, label))
    clipped = stats.hi > CLIP_RATIO * stats.high
    top = stats.high if clipped else stats.hi
    scale = asked
    if asked == "auto":
        scale = "linear" if stats.median >= DARK * top else "log"
    if scale == "log":
        floor = max(stats.low / 10, stats.hi * 10**-MAX_DECADES)
        if floor >= stats.hi:  # every positive weight equal: a decade below it
            floor = stats.hi / 10
        label = f"log scale, {_range(floor, stats.hi)}"
        return ColorMap(asked, "log", floor, stats.hi, False, 0, _prefix(asked, label))
    label = f"linear {_range(0.0, top)}"
    if clipped:
        cells = "cell" if stats.above_high == 1 else "cells"
        label += (
            f" ({format_number(HIGH_QUANTILE * 100)}th percentile; "
            f"{stats.above_high:,} {cells} above, up to {format_number(stats.hi)})"
        )
    above = stats.above_high if clipped else 0
    return ColorMap(asked, "linear", 0.0, top, clipped, above, _prefix(asked, label))


def _range(lo: float, hi: float) -> str:
    return f"{format_number(lo)} … {format_number(hi)}"


def _prefix(asked: str, label: str) -> str:
    return f"auto: {label}" if asked == "auto" else label


def color_position(cmap: ColorMap | dict[str, Any], values: Any) -> np.ndarray:
    """Where each weight sits on the scale, in [0, 1] (NaN: 0); float64.

    Linear: (v - lo) / (hi - lo). Log: log10(v / lo) / log10(hi / lo), 0 at
    or under ``lo``. Clamped to [0, 1]. matrix_draw.ts ``colorPosition`` is
    the same mapping.
    """
    c = cmap.to_json() if isinstance(cmap, ColorMap) else cmap
    lo, hi = float(c["lo"]), float(c["hi"])
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if c["scale"] == "log":
            t = np.where(v > lo, np.log10(v / lo) / np.log10(hi / lo), 0.0)
        else:
            t = (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
    return np.clip(np.nan_to_num(t, nan=0.0), 0.0, 1.0)


def color_index(cmap: ColorMap | dict[str, Any], values: Any) -> np.ndarray:
    """The lookup-table index (0 … 255) of each weight: round half up, as JS Math.round."""
    return np.floor(color_position(cmap, values) * 255 + 0.5).astype(np.int64)
