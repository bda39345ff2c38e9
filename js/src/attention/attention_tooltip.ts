/**
 * What hovering a line, a weight-strip block or a thumbnail says: which
 * tokens, the weight, which head. Pure (no DOM): hit tests on the drawn
 * geometry and the tooltip's text, unit-tested in node.
 */
import { binCenter, binsWithin, bucketLines, levelCutoff, type Focus, type LevelCurve, type LineBuckets, type Range } from "./attention_layout";
import { formatNumber } from "../core/format";

/**
 * The line under the pointer at (x, y) among `count` straight lines from
 * (x0, ya(k)) to (x1, yb(k)): the nearest within `tolerance` px
 * (perpendicular distance); when several lie that near, the heaviest
 * (`weight(k)`) within 1 px of the nearest, since strong lines are drawn on
 * top and thicker. -1: none (also outside [x0, x1]).
 */
export function nearestLine(
  x: number,
  y: number,
  x0: number,
  x1: number,
  count: number,
  ya: (k: number) => number,
  yb: (k: number) => number,
  weight: (k: number) => number,
  tolerance = 4,
): number {
  if (!(x1 > x0) || x < x0 || x > x1) return -1;
  const f = (x - x0) / (x1 - x0);
  const dx = x1 - x0;
  let best = -1;
  let bestDistance = Infinity;
  let bestWeight = -Infinity;
  for (let k = 0; k < count; k++) {
    const a = ya(k);
    const b = yb(k);
    const dy = b - a;
    // Vertical offset at x, scaled to the perpendicular distance.
    const distance = Math.abs(y - (a + dy * f)) / Math.sqrt(1 + (dy / dx) ** 2);
    if (distance > tolerance) continue;
    const w = weight(k);
    const nearer = distance < bestDistance - 1;
    const asNear = Math.abs(distance - bestDistance) <= 1;
    if (best < 0 || nearer || (asNear && w > bestWeight)) {
      best = k;
      bestDistance = Math.min(distance, bestDistance);
      bestWeight = w;
    }
  }
  return best;
}

/** A token as the tooltip names it: its index and its text (quoted, so spaces show). */
export function tokenLabel(index: number, token: string | undefined): string {
  return `#${index} ${JSON.stringify(token ?? "")}`;
}

/** "#2 "cat" → #3 "[SEP]": 0.419 (head 5)": one weight of one head. */
export function weightText(
  query: number,
  queryToken: string | undefined,
  key: number,
  keyToken: string | undefined,
  weight: number,
  head: number,
): string {
  return `${tokenLabel(query, queryToken)} → ${tokenLabel(key, keyToken)}: ${formatNumber(weight)} (head ${head})`;
}

/** Tokens [start, stop) of a thumbnail bin: one token by its label, several as "#a–#b". */
export function binLabel(start: number, stop: number, tokens: readonly string[]): string {
  return stop - start <= 1 ? tokenLabel(start, tokens[start]) : `#${start}–#${stop - 1}`;
}

/**
 * A thumbnail line: "Layer 1, head 2: #0 "[CLS]" → #3 "[SEP]": 0.42", or for
 * pooled bins "… #0–#5 → #12–#17: 0.42 (pooled: mean over the queries of
 * the sum over the keys)", so a pooled number is not read as one weight.
 */
export function thumbText(
  layer: number,
  head: number,
  rows: readonly [number, number],
  cols: readonly [number, number],
  queryTokens: readonly string[],
  keyTokens: readonly string[],
  weight: number,
): string {
  const pooled = rows[1] - rows[0] > 1 || cols[1] - cols[0] > 1;
  const link = `${binLabel(rows[0], rows[1], queryTokens)} → ${binLabel(cols[0], cols[1], keyTokens)}: ${formatNumber(weight)}`;
  return `Layer ${layer}, head ${head}: ${link}${pooled ? " (pooled: mean over the queries of the sum over the keys)" : ""}`;
}

/** What a line panel shows, as far as hit tests need it. */
export interface HitData {
  stride: number;
  rows: Range;
  cols: Range;
  heads: readonly { slot: number; weights: ArrayLike<number> }[];
}

/** A line panel's layout (CSS px): key strip | lines (`width`) | query strip, rows `row` tall. */
export interface HitGeometry {
  stripWidth: number;
  perHead: number;
  width: number;
  row: number;
}

/** What lies under the pointer: head k (index into `heads`), query i and key j (local to the block). */
export interface PanelHit {
  head: number;
  i: number;
  j: number;
  kind: "line" | "strip";
}

/**
 * The hit at (x, y), from the left strip's edge: with a focused token, a
 * block of its strip (beside the other column); else the nearest of the
 * lines drawn (`drawn`: per head, the lines at level >= cutoff).
 */
export function panelHit(
  data: HitData,
  drawn: { buckets: readonly LineBuckets[]; cutoff: number },
  focus: Focus | null,
  g: HitGeometry,
  x: number,
  y: number,
): PanelHit | null {
  const x0 = g.stripWidth;
  const x1 = g.stripWidth + g.width;
  if (focus && (focus.side === "query" ? x > x1 : x < x0)) {
    const t = Math.floor(y / g.row);
    const count = focus.side === "query" ? data.cols[1] - data.cols[0] : data.rows[1] - data.rows[0];
    const slot = Math.floor((x - (focus.side === "query" ? x1 : 0)) / g.perHead);
    const k = data.heads.findIndex((head) => head.slot === slot);
    if (k < 0 || t < 0 || t >= count) return null;
    const [i, j] = focus.side === "query" ? [focus.index, t] : [t, focus.index];
    return { head: k, i, j, kind: "strip" };
  }
  // Every stroked line as (head, local flat index).
  const heads: number[] = [];
  const flats: number[] = [];
  drawn.buckets.forEach((b, k) => {
    for (let u = b.starts[Math.max(1, drawn.cutoff)]!; u < b.starts[256]!; u++) {
      heads.push(k);
      flats.push(b.items[u]!);
    }
  });
  const cols = data.cols[1] - data.cols[0];
  const iOf = (u: number): number => Math.floor(flats[u]! / cols);
  const jOf = (u: number): number => flats[u]! - iOf(u) * cols;
  const u = nearestLine(
    x,
    y,
    x0,
    x1,
    flats.length,
    (v) => (iOf(v) + 0.5) * g.row,
    (v) => (jOf(v) + 0.5) * g.row,
    (v) => data.heads[heads[v]!]!.weights[(data.rows[0] + iOf(v)) * data.stride + data.cols[0] + jOf(v)] as number,
  );
  return u < 0 ? null : { head: heads[u]!, i: iOf(u), j: jOf(u), kind: "line" };
}

/**
 * The thumbnail line nearest (x, y), as the thumbnail draws them: pooled
 * bins (`values`: row bins × col bins, edges in tokens) within the shown
 * `rows` × `cols`, the lines at or above the budget's cutoff, inside `box`
 * (a `size` px square, lines inset by `pad`). Bin indices and the pooled
 * weight, or null.
 */
export function thumbHit(
  values: ArrayLike<number>,
  rowEdges: readonly number[],
  colEdges: readonly number[],
  rows: Range,
  cols: Range,
  curve: LevelCurve,
  budget: number,
  box: { x: number; y: number; size: number; pad: number },
  x: number,
  y: number,
): { i: number; j: number; weight: number } | null {
  const bc = colEdges.length - 1;
  const rowBins = binsWithin(rowEdges, rows);
  const colBins = binsWithin(colEdges, cols);
  const buckets = bucketLines(values, bc, rowBins, colBins, curve);
  const items = buckets.items.subarray(buckets.starts[levelCutoff([buckets], budget)]!, buckets.starts[256]!);
  const inner = box.size - 2 * box.pad;
  const iOf = (u: number): number => rowBins[0] + Math.floor(items[u]! / buckets.blockCols);
  const jOf = (u: number): number => colBins[0] + (items[u]! % buckets.blockCols);
  const weightOf = (u: number): number => values[iOf(u) * bc + jOf(u)] as number;
  const u = nearestLine(
    x,
    y,
    box.x + box.pad,
    box.x + box.size - box.pad,
    items.length,
    (v) => box.y + binCenter(rowEdges, iOf(v), rows[0], rows[1] - rows[0], box.pad, inner),
    (v) => box.y + binCenter(colEdges, jOf(v), cols[0], cols[1] - cols[0], box.pad, inner),
    weightOf,
    3,
  );
  return u < 0 ? null : { i: iOf(u), j: jOf(u), weight: weightOf(u) };
}
