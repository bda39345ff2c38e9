/**
 * Pure helpers of the attention views (no DOM, unit-tested in node):
 * sentence-pair blocks, how a weight becomes a line (opacity curve, width),
 * grouping lines by opacity, thumbnail bins, and the model view's grid
 * geometry. (Head colours: colors.ts.)
 */
import type { PairFilter } from "./attention_types";

/** A half-open index range [start, stop). */
export type Range = readonly [number, number];

/** The query rows and key columns a pair filter keeps (bertviz's A->B blocks). */
export function pairBlock(filter: PairFilter, rows: number, cols: number, split: number | null): { rows: Range; cols: Range } {
  if (filter === "all" || split === null || split <= 0) return { rows: [0, rows], cols: [0, cols] };
  const [query, key] = filter.split("->") as ["A" | "B", "A" | "B"];
  const part = (side: "A" | "B", size: number): Range => (side === "A" ? [0, Math.min(split, size)] : [Math.min(split, size), size]);
  return { rows: part(query, rows), cols: part(key, cols) };
}

/** 8-bit alpha level of an opacity: 0 (not drawn) .. 255. */
export function alphaLevel(opacity: number): number {
  if (!(opacity > 0)) return 0; // also NaN
  return opacity >= 1 ? 255 : Math.round(opacity * 255);
}

/** Steps of a LevelCurve: weights are looked up at a resolution of 1/CURVE_STEPS. */
export const CURVE_STEPS = 4096;

/**
 * How a weight becomes a line's 8-bit alpha level: `curve[round(w ×
 * CURVE_STEPS)]` (w clamped to [0, 1]; level 0: not drawn). A table, not a
 * formula, because the bucketing loops below run over every weight of every
 * shown head (3 M at 512 tokens × 12 heads) on each redraw.
 */
export type LevelCurve = Uint8Array;

/** Weights under this share of a query's attention draw no line (the blur of weak links). */
export const MIN_WEIGHT = 0.02;

/**
 * The line curve for `heads` heads drawn over each other.
 *
 * bertviz draws opacity = weight / heads: at 12 heads a weight of 0.5 is
 * 4 % opaque, so even strong links read faintly. Here opacity follows a
 * perceptual curve instead: weights under MIN_WEIGHT are not drawn, the
 * rest rise from a faint floor to fully opaque at weight 1 along
 * t^gamma (t = the weight's place between MIN_WEIGHT and 1). One head:
 * gamma 0.5 (square root: weak links stay visible); more heads overlap, so
 * gamma rises to 1 at 12 and the floor halves, which keeps the many weak
 * lines of 12 heads faint while a strong link of any head is near opaque.
 */
export function lineCurve(heads: number): LevelCurve {
  const h = Math.max(1, Number.isFinite(heads) ? heads : 1);
  const gamma = 0.5 + 0.5 * Math.min(1, (h - 1) / 11);
  const floor = h > 1 ? 0.06 : 0.12;
  const curve = new Uint8Array(CURVE_STEPS + 1);
  for (let k = 0; k <= CURVE_STEPS; k++) {
    const w = k / CURVE_STEPS;
    if (w < MIN_WEIGHT) continue;
    const t = (w - MIN_WEIGHT) / (1 - MIN_WEIGHT);
    curve[k] = Math.max(1, Math.round(255 * (floor + (1 - floor) * t ** gamma)));
  }
  return curve;
}

/** lineCurve per number of heads shown, built once per count (a 4,097-entry table). */
const curves = new Map<number, LevelCurve>();
export function curveFor(heads: number): LevelCurve {
  let curve = curves.get(heads);
  if (!curve) curves.set(heads, (curve = lineCurve(heads)));
  return curve;
}

/** The old linear mapping, opacity = weight × scale (alphaLevel at the curve's resolution). */
export function linearCurve(scale: number): LevelCurve {
  const curve = new Uint8Array(CURVE_STEPS + 1);
  for (let k = 0; k <= CURVE_STEPS; k++) curve[k] = alphaLevel((k / CURVE_STEPS) * scale);
  return curve;
}

/** Index of a weight in a LevelCurve: 0 for anything not > 0 (NaN too), CURVE_STEPS from 1 up. */
function curveIndex(w: number): number {
  return w >= 1 ? CURVE_STEPS : w > 0 ? (w * CURVE_STEPS + 0.5) | 0 : 0;
}

/** The alpha level (0..255) of one weight on a curve. */
export function levelOf(curve: LevelCurve, w: number): number {
  return curve[curveIndex(w)]!;
}

/**
 * Stroke width (CSS px) of lines at an alpha level: strong links are drawn
 * thicker, so they stand out by shape as well as by colour. Only strong
 * lines are thick: rasterising thick lines costs ~4x hairlines in a
 * software-rendered browser, and a row holds at most one weight over 0.5.
 */
export function lineWidthFor(level: number): number {
  return level >= 204 ? 3 : level >= 128 ? 2 : 1;
}

/**
 * The per-head weight strip beside a token column: one block per head slot
 * (all heads of the layer, shown or not, so a head keeps its place), about
 * 120 px in all as bertviz's, at least 4 px a head and at most 24.
 */
export function stripLayout(slots: number): { perHead: number; width: number } {
  const n = Math.max(1, Math.floor(slots));
  const perHead = Math.max(4, Math.min(24, Math.floor(120 / n)));
  return { perHead, width: perHead * n };
}

/** Opacity of a strip block: the square root of the weight (perceptual, as the lines' one-head curve), 0 for none. */
export function stripAlpha(w: number): number {
  return w > 0 ? Math.sqrt(Math.min(1, w)) : 0;
}

/** What a hovered or pinned token restricts the lines to (local indices in the block). */
export interface Focus {
  side: "query" | "key";
  index: number;
}

/**
 * Lines of one head, grouped by alpha level so each level is one canvas path:
 * `items[starts[k] .. starts[k + 1])` are the lines of level k, each as a
 * local flat index i * blockCols + j. Level 0 (fainter than 1/510) is dropped.
 */
export interface LineBuckets {
  blockRows: number;
  blockCols: number;
  starts: Int32Array; // 257 entries
  items: Int32Array;
  /** Lines drawn (all levels >= 1). */
  count: number;
}

/**
 * Group the lines of a head's block by alpha level.
 *
 * @param weights the head's (rows × cols) weights, row-major, stride `stride`
 * @param rows, cols the block (pair filter) in matrix coordinates
 * @param curve alpha level of each weight (lineCurve)
 * @param focus only the lines of this query (or into this key), if given
 */
export function bucketLines(
  weights: ArrayLike<number>,
  stride: number,
  rows: Range,
  cols: Range,
  curve: LevelCurve,
  focus: Focus | null = null,
): LineBuckets {
  const blockRows = Math.max(0, rows[1] - rows[0]);
  const blockCols = Math.max(0, cols[1] - cols[0]);
  const i0 = focus?.side === "query" ? focus.index : 0;
  const i1 = focus?.side === "query" ? Math.min(blockRows, focus.index + 1) : blockRows;
  const j0 = focus?.side === "key" ? focus.index : 0;
  const j1 = focus?.side === "key" ? Math.min(blockCols, focus.index + 1) : blockCols;
  const counts = new Int32Array(256);
  const levels = new Uint8Array(Math.max(0, (i1 - i0) * (j1 - j0)));
  // curveIndex inlined: this loop runs over every weight of every shown head.
  let t = 0;
  for (let i = i0; i < i1; i++) {
    const base = (rows[0] + i) * stride + cols[0];
    for (let j = j0; j < j1; j++, t++) {
      const w = weights[base + j] as number;
      const level = curve[w >= 1 ? CURVE_STEPS : w > 0 ? (w * CURVE_STEPS + 0.5) | 0 : 0]!;
      levels[t] = level;
      counts[level]! += 1;
    }
  }
  const starts = new Int32Array(257);
  for (let k = 1; k < 256; k++) starts[k + 1] = starts[k]! + counts[k]!;
  starts[1] = 0;
  const count = starts[256]!;
  const items = new Int32Array(count);
  const next = starts.slice(0, 256);
  t = 0;
  for (let i = i0; i < i1; i++) {
    for (let j = j0; j < j1; j++, t++) {
      const level = levels[t]!;
      if (level > 0) items[next[level]!++] = i * blockCols + j;
    }
  }
  return { blockRows, blockCols, starts, items, count };
}

/**
 * The lowest alpha level to draw so that at most `budget` lines are drawn
 * over all `buckets` (the strongest lines are kept; ties at the cut level are
 * dropped together). 1 when everything fits. Canvas cost grows with the
 * pixels lines cover, so dense views draw their strongest lines only.
 */
export function levelCutoff(buckets: readonly LineBuckets[], budget: number): number {
  let total = 0;
  for (let level = 255; level >= 1; level--) {
    for (const b of buckets) total += b.starts[level + 1]! - b.starts[level]!;
    if (total > budget) return level + 1;
  }
  return 1;
}

/**
 * How many lines of a head's block fall at each alpha level (0..255), as
 * bucketLines would group them, without storing any line. Together with
 * cutoffFromCounts and bucketStrong this draws a dense view's strongest lines
 * without writing a level per weight (3 M at 512 tokens × 12 heads).
 */
export function levelCounts(weights: ArrayLike<number>, stride: number, rows: Range, cols: Range, curve: LevelCurve): Int32Array {
  return countsOnCurve(indexCounts(weights, stride, rows, cols), curve);
}

/**
 * How many weights of a head's block fall at each curve index (0..
 * CURVE_STEPS): what levelCounts needs, but independent of the curve, so a
 * view can keep it per head while the curve changes with the number of heads
 * shown (a head-box click then rescans no weights).
 */
export function indexCounts(weights: ArrayLike<number>, stride: number, rows: Range, cols: Range): Int32Array {
  const counts = new Int32Array(CURVE_STEPS + 1);
  for (let i = rows[0]; i < rows[1]; i++) {
    const base = i * stride;
    for (let j = cols[0]; j < cols[1]; j++) {
      const w = weights[base + j] as number;
      counts[w >= 1 ? CURVE_STEPS : w > 0 ? (w * CURVE_STEPS + 0.5) | 0 : 0]! += 1;
    }
  }
  return counts;
}

/** Per-level counts (levelCounts) from per-index counts (indexCounts) on a curve. */
export function countsOnCurve(indexed: ArrayLike<number>, curve: LevelCurve): Int32Array {
  const counts = new Int32Array(256);
  for (let k = 0; k <= CURVE_STEPS; k++) counts[curve[k]!]! += indexed[k] as number;
  return counts;
}

/** levelCutoff from per-level counts (summed over heads): the lowest level that keeps at most `budget` lines. */
export function cutoffFromCounts(counts: ArrayLike<number>, budget: number): number {
  let total = 0;
  for (let level = 255; level >= 1; level--) {
    total += counts[level] as number;
    if (total > budget) return level + 1;
  }
  return 1;
}

/**
 * bucketLines for the lines at level >= `minLevel` only, given the head's
 * levelCounts: one pass that rejects faint weights with one comparison and
 * stores only the lines that will be drawn.
 */
export function bucketStrong(
  weights: ArrayLike<number>,
  stride: number,
  rows: Range,
  cols: Range,
  curve: LevelCurve,
  minLevel: number,
  counts: ArrayLike<number>,
): LineBuckets {
  const blockRows = Math.max(0, rows[1] - rows[0]);
  const blockCols = Math.max(0, cols[1] - cols[0]);
  const from = Math.max(1, Math.min(256, Math.ceil(minLevel)));
  const starts = new Int32Array(257);
  for (let k = from; k < 256; k++) starts[k + 1] = starts[k]! + (counts[k] as number);
  for (let k = 0; k < from; k++) starts[k] = 0;
  const count = starts[256]!;
  const items = new Int32Array(count);
  const next = starts.slice(0, 256);
  // The curve rises with the weight: level >= from <=> curve index >= first
  // <=> w >= (first - 0.5) / CURVE_STEPS. Most weights fail that one
  // comparison (the prefilter, a hair low against rounding; k decides).
  let first = 1;
  while (first <= CURVE_STEPS && curve[first]! < from) first++;
  const floor = (first - 0.5) / CURVE_STEPS - 1e-9;
  if (count > 0) {
    for (let i = 0; i < blockRows; i++) {
      const base = (rows[0] + i) * stride + cols[0];
      for (let j = 0; j < blockCols; j++) {
        const w = weights[base + j] as number;
        if (!(w >= floor)) continue;
        const k = w >= 1 ? CURVE_STEPS : (w * CURVE_STEPS + 0.5) | 0;
        if (k < first) continue;
        const level = curve[k]!;
        items[next[level]!++] = i * blockCols + j;
      }
    }
  }
  return { blockRows, blockCols, starts, items, count };
}

/** The bins [k0, k1) that lie inside tokens [t0, t1) (edges: bin k = edges[k]..edges[k+1]). */
export function binsWithin(edges: readonly number[], tokens: Range): Range {
  let k0 = 0;
  while (k0 < edges.length - 1 && (edges[k0] as number) < tokens[0]) k0++;
  let k1 = k0;
  while (k1 < edges.length - 1 && (edges[k1 + 1] as number) <= tokens[1]) k1++;
  return [k0, k1];
}

/**
 * Vertical centre of bin k, for bins laid out proportionally to their tokens
 * over [top, top + height), counting tokens from `t0` of a span of `span` tokens.
 */
export function binCenter(edges: readonly number[], k: number, t0: number, span: number, top: number, height: number): number {
  const mid = ((edges[k] as number) + (edges[k + 1] as number)) / 2 - t0;
  return top + (span > 0 ? (mid / span) * height : height / 2);
}

/** Where the model view's thumbnails lie on its canvas (CSS pixels). */
export interface GridGeometry {
  layers: number;
  heads: number;
  /** Width of the row labels / height of the column labels. */
  labelWidth: number;
  labelHeight: number;
  /** Thumbnail side and the gap between thumbnails. */
  cell: number;
  gap: number;
}

export function gridSize(g: GridGeometry): { width: number; height: number } {
  return { width: g.labelWidth + g.heads * (g.cell + g.gap), height: g.labelHeight + g.layers * (g.cell + g.gap) };
}

/** Top-left corner of thumbnail (layer position, head position). */
export function cellOrigin(g: GridGeometry, layer: number, head: number): { x: number; y: number } {
  return { x: g.labelWidth + head * (g.cell + g.gap), y: g.labelHeight + layer * (g.cell + g.gap) };
}

/** The thumbnail under a point, or null (labels, gaps, outside). */
export function cellAt(g: GridGeometry, x: number, y: number): { layer: number; head: number } | null {
  const fx = (x - g.labelWidth) / (g.cell + g.gap);
  const fy = (y - g.labelHeight) / (g.cell + g.gap);
  const head = Math.floor(fx);
  const layer = Math.floor(fy);
  if (head < 0 || layer < 0 || head >= g.heads || layer >= g.layers) return null;
  if ((fx - head) * (g.cell + g.gap) > g.cell || (fy - layer) * (g.cell + g.gap) > g.cell) return null;
  return { layer, head };
}

/** Row height (CSS px) for n tokens: readable, but the canvas stays under browsers' size limits. */
export function rowHeightFor(n: number, preferred = 20, maxCanvas = 30000): number {
  if (n <= 0) return preferred;
  return Math.max(4, Math.min(preferred, Math.floor(maxCanvas / n)));
}
