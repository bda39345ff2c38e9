/**
 * EvaluationView's numbers, apart from the DOM (tested in node): decoding the
 * summary and per-example values, ordering a cell's examples, the chart's
 * axis, and the texts a person reads.
 */
import { decodeFloat32 } from "../core/buffers";
import { formatNumber } from "../core/format";
import type { Binary } from "../core/types";

/** One table cell: mean, interval and how many values it averages. */
export interface Cell {
  mean: number;
  low: number;
  high: number;
  count: number;
}

/** The decoded data of an evaluation. */
export interface EvaluationData {
  methods: string[];
  metrics: string[];
  higherIsBetter: boolean[];
  /** cells[i][k]: method i, metric k. */
  cells: Cell[][];
  ids: string[];
  texts: string[];
  /** float32 (N, M, K), C order. */
  values: Float32Array;
}

function checkShape(shape: readonly number[], want: number[], name: string): void {
  if (shape.length !== want.length || shape.some((d, i) => d !== want[i])) {
    throw new RangeError(`${name} has shape [${shape.join(", ")}]; expected [${want.join(", ")}]`);
  }
}

/** Decode and check the traits against each other. */
export function decodeEvaluation(traits: {
  methods: string[];
  metrics: string[];
  higher_is_better: boolean[];
  summary: Binary | null;
  summary_shape: number[];
  example_ids: string[];
  example_texts: string[];
  values: Binary | null;
  values_shape: number[];
}): EvaluationData {
  const methods = traits.methods.map(String);
  const metrics = traits.metrics.map(String);
  const ids = traits.example_ids.map(String);
  const [m, k, n] = [methods.length, metrics.length, ids.length];
  checkShape(traits.summary_shape, [m, k, 4], "summary");
  checkShape(traits.values_shape, [n, m, k], "values");
  const summary = traits.summary == null ? new Float32Array(0) : decodeFloat32(traits.summary, "summary");
  const values = traits.values == null ? new Float32Array(0) : decodeFloat32(traits.values, "values");
  if (summary.length !== m * k * 4) throw new RangeError(`summary: ${summary.length} values for shape [${m}, ${k}, 4]`);
  if (values.length !== n * m * k) throw new RangeError(`values: ${values.length} values for shape [${n}, ${m}, ${k}]`);
  const cells = methods.map((_, i) =>
    metrics.map((__, j) => {
      const at = (i * k + j) * 4;
      return { mean: summary[at]!, low: summary[at + 1]!, high: summary[at + 2]!, count: summary[at + 3]! };
    }),
  );
  return {
    methods,
    metrics,
    higherIsBetter: metrics.map((_, j) => traits.higher_is_better[j] !== false),
    cells,
    ids,
    texts: ids.map((_, e) => String(traits.example_texts[e] ?? "")),
    values,
  };
}

/** Example e's value of cell (method i, metric k). */
export function valueAt(data: EvaluationData, e: number, i: number, k: number): number {
  const m = data.methods.length;
  const kk = data.metrics.length;
  return data.values[(e * m + i) * kk + k] as number;
}

/**
 * The examples of cell (i, k), worst first: lowest first where higher is
 * better, highest first where lower is better (`worstFirst = false`
 * reverses). NaN values come last either way; ties keep the data order.
 */
export function cellOrder(data: EvaluationData, i: number, k: number, worstFirst = true): number[] {
  const ascending = data.higherIsBetter[k] === worstFirst;
  const order = data.ids.map((_, e) => e);
  const value = (e: number): number => valueAt(data, e, i, k);
  return order.sort((a, b) => {
    const x = value(a);
    const y = value(b);
    const xn = Number.isNaN(x);
    const yn = Number.isNaN(y);
    if (xn || yn) return xn === yn ? a - b : xn ? 1 : -1;
    if (x === y) return a - b;
    return ascending ? x - y : y - x;
  });
}

/** The chart's value axis for one metric: every finite low/high/mean, padded by 5 %. */
export function axisRange(cells: readonly Cell[]): [number, number] {
  const values = cells.flatMap((c) => [c.low, c.high, c.mean]).filter(Number.isFinite);
  if (!values.length) return [0, 1];
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (lo === hi) {
    const pad = lo === 0 ? 1 : Math.abs(lo) * 0.05;
    return [lo - pad, hi + pad];
  }
  const pad = (hi - lo) * 0.05;
  lo -= pad;
  hi += pad;
  return [lo, hi];
}

/** Position of `value` on an axis [lo, hi] drawn `width` px wide (clamped to it). */
export function toX(value: number, lo: number, hi: number, width: number): number {
  if (!Number.isFinite(value)) return 0;
  return Math.min(width, Math.max(0, ((value - lo) / (hi - lo)) * width));
}

/** "0.576 [0.431, 0.732]": a mean and its interval as the table's title says. */
export function cellText(cell: Cell): string {
  return `${formatNumber(cell.mean)} [${formatNumber(cell.low)}, ${formatNumber(cell.high)}]`;
}

/** "higher is better" / "lower is better". */
export function directionText(higher: boolean): string {
  return higher ? "higher is better" : "lower is better";
}
