/**
 * FlowView's lines, grouped by strength so each group is one canvas path
 * (pure, unit-tested in node): levels, widths and opacities, the strongest
 * cut that keeps a canvas drawable, and how the context lines (the attention
 * graph behind the paths) are thinned and faded for long inputs.
 */
import { ROOMY_TOKENS } from "./flow_paths";

/** Strength levels lines are grouped into (one canvas path each). */
export const LEVELS = 16;

/** The level (1 … LEVELS) of a strength in (0, 1]; 0 below `threshold` (not drawn). */
export function levelOf(strength: number, threshold: number): number {
  if (!(strength >= threshold) || !(strength > 0)) return 0;
  return Math.max(1, Math.min(LEVELS, Math.ceil(strength * LEVELS)));
}

/**
 * How much the weakest context lines (the attention graph behind the paths)
 * are faded for an input of n tokens: 1 up to ROOMY_TOKENS, then
 * √(ROOMY_TOKENS / n). Many weak lines crossing hundreds of rows add up to a
 * grey curtain; fading only the weak end keeps the strong lines as they were.
 */
export function contextFade(n: number): number {
  return n <= ROOMY_TOKENS ? 1 : Math.sqrt(ROOMY_TOKENS / n);
}

/**
 * Line width and opacity of a level: both grow with the strength. `fade`
 * (contextFade) scales the part of a context line's opacity that every line
 * gets whatever its weight, so weak lines fade and strong ones stay.
 */
export function lineStyle(level: number, kind: "edge" | "path", fade = 1): { width: number; alpha: number } {
  const t = level / LEVELS;
  return kind === "edge" ? { width: 0.6 + 2.4 * t, alpha: 0.12 * fade + 0.5 * t } : { width: 1 + 7 * t, alpha: 0.35 + 0.6 * t };
}

/** Context lines drawn per token and edge layer, on average, above ROOMY_TOKENS tokens. */
export const CONTEXT_LINES_PER_TOKEN = 3;

/**
 * How many context lines to draw at most: `max` (what a canvas draws in
 * time) for short inputs; above ROOMY_TOKENS tokens also at most
 * CONTEXT_LINES_PER_TOKEN per token and edge layer (the strongest), so the
 * graph stays a set of lines one can follow instead of a texture.
 */
export function contextBudget(n: number, layers: number, max: number): number {
  if (n <= ROOMY_TOKENS) return max;
  return Math.min(max, Math.max(1, CONTEXT_LINES_PER_TOKEN * n * layers));
}

/** Lines of one edge layer grouped by level: `items[starts[k] … starts[k+1])` hold level k's flat indices. */
export interface Buckets {
  starts: Int32Array;
  items: Uint32Array;
  /** For signed paths: 1 when the value is negative, per item. */
  negative: Uint8Array;
  count: number;
}

/**
 * Group lines by level. `strength(k)` is the k-th line's strength in [0, 1]
 * (weight for edges, share of the layer's total for paths).
 */
export function bucketByLevel(
  flat: ArrayLike<number>,
  strength: (k: number) => number,
  threshold: number,
  negative: (k: number) => boolean = () => false,
): Buckets {
  const levels = new Uint8Array(flat.length);
  const counts = new Int32Array(LEVELS + 2);
  for (let k = 0; k < flat.length; k++) {
    const level = levelOf(strength(k), threshold);
    levels[k] = level;
    if (level > 0) counts[level + 1]!++;
  }
  for (let level = 1; level <= LEVELS + 1; level++) counts[level] = (counts[level] as number) + (counts[level - 1] as number);
  const starts = counts.slice(0, LEVELS + 2);
  const fill = starts.slice();
  const count = starts[LEVELS + 1] as number;
  const items = new Uint32Array(count);
  const neg = new Uint8Array(count);
  for (let k = 0; k < flat.length; k++) {
    const level = levels[k] as number;
    if (level === 0) continue;
    const at = fill[level]!++;
    items[at] = flat[k] as number;
    neg[at] = negative(k) ? 1 : 0;
  }
  return { starts, items, negative: neg, count };
}

/** The edges of an (n × n) weight matrix at or above `threshold`: flat indices. */
export function edgesAbove(weights: ArrayLike<number>, threshold: number): Uint32Array {
  let count = 0;
  for (let k = 0; k < weights.length; k++) if ((weights[k] as number) >= threshold && (weights[k] as number) > 0) count++;
  const out = new Uint32Array(count);
  let c = 0;
  for (let k = 0; k < weights.length; k++) if ((weights[k] as number) >= threshold && (weights[k] as number) > 0) out[c++] = k;
  return out;
}

/**
 * The threshold that keeps at most about `max` of the values ≥ `threshold`
 * across several arrays (the strongest ones; ties at the cut may add a few).
 */
export function strongestCut(
  arrays: readonly ArrayLike<number>[],
  threshold: number,
  max: number,
): { threshold: number; candidates: number; kept: number } {
  let candidates = 0;
  for (const values of arrays) for (let k = 0; k < values.length; k++) if ((values[k] as number) >= threshold && (values[k] as number) > 0) candidates++;
  if (candidates <= max) return { threshold, candidates, kept: candidates };
  const above = new Float32Array(candidates);
  let c = 0;
  for (const values of arrays) {
    for (let k = 0; k < values.length; k++) {
      const v = values[k] as number;
      if (v >= threshold && v > 0) above[c++] = v;
    }
  }
  above.sort();
  const cut = Math.max(threshold, above[candidates - max] as number);
  let kept = 0;
  for (let k = 0; k < candidates; k++) if ((above[k] as number) >= cut) kept++;
  return { threshold: cut, candidates, kept };
}
