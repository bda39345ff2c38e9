/**
 * What hovering a line, a weight-strip block or a thumbnail says: which
 * tokens, the weight, which head. Pure (no DOM): hit tests on the drawn
 * geometry and the tooltip's text, unit-tested in node.
 */
import { formatNumber } from "./format";

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
