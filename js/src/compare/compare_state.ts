/**
 * CompareView's numbers, apart from the DOM (tested in node, partly against
 * the fixture Python writes: test/fixtures/compare.json): decoding the traits
 * and checking them against each other, each row's colour range, the most
 * disputed tokens, a token's rank in each method, the scatter's axes and the
 * bars' axis.
 */
import { decodeFloat32, decodeMatrix, type Matrix } from "../core/buffers";
import { scaleFor, type Scale } from "../core/colors";
import { scoreRange, type ScoreRange } from "../core/score_range";
import type { Binary } from "../core/types";
import type { CompareTraits } from "./compare_types";

/** The decoded data of a comparison. */
export interface CompareData {
  tokens: string[];
  raw: string[];
  methods: string[];
  summaries: string[];
  signed: boolean[];
  /** (m, n) token scores. */
  scores: Matrix;
  /** The query position, -1 for none. */
  query: number;
  compared: boolean[];
  /** (n,) rank spread; NaN where not compared. */
  disagreement: Float32Array;
  metrics: string[];
  metricSigned: boolean[];
  /** (A, m, m), C order. */
  agreement: Float32Array;
  figureKinds: string[];
  figureMetrics: string[];
  figureSummaries: string[];
  figureHigher: boolean[];
  /** (m, K) faithfulness and plausibility figures. */
  figures: Matrix;
  rationale: boolean[];
}

/** The traits decodeCompare reads. */
export type CompareInput = Pick<
  CompareTraits,
  | "tokens" | "raw_tokens" | "methods" | "summaries" | "signed" | "scores" | "shape" | "query_index"
  | "compared" | "disagreement" | "agreement_metrics" | "agreement_signed" | "agreement"
  | "agreement_shape" | "figure_kinds" | "figure_metrics" | "figure_summaries"
  | "figure_higher_is_better" | "figures" | "figure_shape" | "rationale"
>;

function checkShape(shape: readonly number[], want: number[], name: string): void {
  if (shape.length !== want.length || shape.some((d, i) => d !== want[i])) {
    throw new RangeError(`${name} has shape [${shape.join(", ")}]; expected [${want.join(", ")}]`);
  }
}

function floats(value: Binary | null, size: number, name: string): Float32Array {
  const out = value == null ? new Float32Array(0) : decodeFloat32(value, name);
  if (out.length !== size) throw new RangeError(`${name}: ${out.length} values where ${size} are expected`);
  return out;
}

/** Decode the traits and check them against each other (a RangeError says what is wrong). */
export function decodeCompare(t: CompareInput): CompareData {
  const tokens = (t.tokens ?? []).map(String);
  const methods = (t.methods ?? []).map(String);
  const metrics = (t.agreement_metrics ?? []).map(String);
  const figureMetrics = (t.figure_metrics ?? []).map(String);
  const [m, n, a, k] = [methods.length, tokens.length, metrics.length, figureMetrics.length];
  checkShape(t.shape ?? [], [m, n], "scores");
  checkShape(t.agreement_shape ?? [], [a, m, m], "agreement");
  checkShape(t.figure_shape ?? [], [m, k], "figures");
  const compared = t.compared ?? [];
  if (compared.length !== n) throw new RangeError(`compared has ${compared.length} flags for ${n} tokens`);
  const rationale = t.rationale ?? [];
  if (rationale.length !== 0 && rationale.length !== n) {
    throw new RangeError(`rationale has ${rationale.length} flags for ${n} tokens`);
  }
  const query = t.query_index ?? -1;
  return {
    tokens,
    raw: (t.raw_tokens ?? []).map(String),
    methods,
    summaries: methods.map((_, i) => String(t.summaries?.[i] ?? "")),
    signed: methods.map((_, i) => Boolean(t.signed?.[i])),
    scores: decodeMatrix(t.scores, [m, n], "scores"),
    query: query >= 0 && query < n ? query : -1,
    compared: compared.map(Boolean),
    disagreement: floats(t.disagreement, n, "disagreement"),
    metrics,
    metricSigned: metrics.map((_, i) => Boolean(t.agreement_signed?.[i])),
    agreement: floats(t.agreement, a * m * m, "agreement"),
    figureKinds: figureMetrics.map((_, i) => String(t.figure_kinds?.[i] ?? "")),
    figureMetrics,
    figureSummaries: figureMetrics.map((_, i) => String(t.figure_summaries?.[i] ?? "")),
    figureHigher: figureMetrics.map((_, i) => t.figure_higher_is_better?.[i] !== false),
    figures: decodeMatrix(t.figures, [m, k], "figures"),
    rationale: rationale.map(Boolean),
  };
}

/** Agreement of methods i and j by metric k. */
export function agreementAt(data: CompareData, k: number, i: number, j: number): number {
  const m = data.methods.length;
  return data.agreement[(k * m + i) * m + j] as number;
}

/** The index of the metric named `name` (the first when unknown; -1 with none). */
export function metricIndex(data: CompareData, name: string): number {
  const k = data.metrics.indexOf(name);
  return k >= 0 ? k : data.metrics.length ? 0 : -1;
}

/** The rows of `selected_pair` ([method, other]), or null. */
export function pairIndices(data: CompareData, pair: readonly string[]): [number, number] | null {
  if (pair.length !== 2) return null;
  const i = data.methods.indexOf(String(pair[0]));
  const j = data.methods.indexOf(String(pair[1]));
  return i >= 0 && j >= 0 && i !== j ? [i, j] : null;
}

/** Each method's colour range: set by the compared tokens, the others drawn clamped. */
export function rowRanges(data: CompareData): ScoreRange[] {
  return data.methods.map((_, i) =>
    scoreRange(data.scores.row(i), data.tokens, { signed: data.signed[i]!, mode: "words", focus: data.query, words: data.compared }),
  );
}

/** The disagreement row's range: 0 to the largest spread (tokens not compared are NaN: grey). */
export function disagreementRange(data: CompareData): ScoreRange {
  return scoreRange(data.disagreement, data.tokens, { signed: false, mode: "words", focus: -1, words: data.compared });
}

/** The `count` compared tokens the methods disagree on most, largest spread first (ties: by position). */
export function disputed(data: CompareData, count = 3): number[] {
  const order: number[] = [];
  data.disagreement.forEach((value, j) => {
    if (data.compared[j] && Number.isFinite(value) && value > 0) order.push(j);
  });
  order.sort((x, y) => (data.disagreement[y] as number) - (data.disagreement[x] as number) || x - y);
  return order.slice(0, count);
}

/**
 * Token j's rank in method i among the compared tokens: 1 = the highest
 * score, ties share their mean rank (as Python's normalised_ranks); NaN for
 * a token not compared.
 */
export function tokenRank(data: CompareData, i: number, j: number): number {
  if (!data.compared[j]) return Number.NaN;
  const row = data.scores.row(i);
  const value = row[j] as number;
  let above = 0;
  let ties = 0;
  for (let t = 0; t < row.length; t++) {
    if (!data.compared[t]) continue;
    const other = row[t] as number;
    if (other > value) above++;
    else if (other === value) ties++;
  }
  return above + (ties + 1) / 2;
}

/**
 * Every token's rank in method i at once (as tokenRank; NaN for tokens not
 * compared): one sort, for the rows and the scatter of long inputs.
 */
export function methodRanks(data: CompareData, i: number): Float64Array {
  const row = data.scores.row(i);
  const out = new Float64Array(row.length).fill(Number.NaN);
  const kept: number[] = [];
  for (let j = 0; j < row.length; j++) if (data.compared[j]) kept.push(j);
  kept.sort((x, y) => (row[y] as number) - (row[x] as number));
  for (let start = 0; start < kept.length; ) {
    let end = start + 1;
    while (end < kept.length && row[kept[end]!] === row[kept[start]!]) end++;
    const rank = (start + 1 + end) / 2; // ties share their mean rank
    for (let t = start; t < end; t++) out[kept[t]!] = rank;
    start = end;
  }
  return out;
}

/** How many tokens are compared. */
export function comparedCount(data: CompareData): number {
  return data.compared.filter(Boolean).length;
}

/** The heat map's colours: fixed ranges, so metrics and views compare (correlations −1 … 1, shares 0 … 1). */
export function agreementScale(signed: boolean): Scale {
  return scaleFor([1], signed);
}

/** A point of the scatter: token `index` at (x, y) = (method a's score, method b's). */
export interface Point {
  index: number;
  x: number;
  y: number;
}

/** What the scatter's axes show: the methods' scores, or the tokens' ranks in them. */
export type Axes = "scores" | "ranks";

/**
 * The compared tokens with finite scores in both methods, at their scores
 * or (`axes = "ranks"`) at their ranks, as count + 1 − rank so that rank 1
 * (the highest score) lies at the right and at the top, as the highest
 * score does.
 */
export function scatterPoints(data: CompareData, a: number, b: number, axes: Axes = "scores"): Point[] {
  const rowA = data.scores.row(a);
  const rowB = data.scores.row(b);
  const count = comparedCount(data);
  const [ranksA, ranksB] = axes === "ranks" ? [methodRanks(data, a), methodRanks(data, b)] : [null, null];
  const out: Point[] = [];
  for (let j = 0; j < data.tokens.length; j++) {
    const x = rowA[j] as number;
    const y = rowB[j] as number;
    if (!(data.compared[j] && Number.isFinite(x) && Number.isFinite(y))) continue;
    if (ranksA && ranksB) out.push({ index: j, x: count + 1 - ranksA[j]!, y: count + 1 - ranksB[j]! });
    else out.push({ index: j, x, y });
  }
  return out;
}

/** A rank axis over `count` tokens (see scatterPoints): half a rank of room at either end. */
export function rankDomain(count: number): [number, number] {
  return [0.5, Math.max(1, count) + 0.5];
}

/**
 * A scatter axis: the values' range padded by 5 % of it on each side; a
 * single value v gets v ± 5 % of |v| (± 1 for 0); no value gives [0, 1].
 */
export function axisDomain(values: readonly number[]): [number, number] {
  const finite = values.filter(Number.isFinite);
  if (!finite.length) return [0, 1];
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  const pad = lo === hi ? (lo === 0 ? 1 : Math.abs(lo) * 0.05) : (hi - lo) * 0.05;
  return [lo - pad, hi + pad];
}

/** Where `value` falls on an axis [lo, hi] drawn over `size` px (0 at lo; clamped). */
export function toPixel(value: number, domain: readonly [number, number], size: number): number {
  const [lo, hi] = domain;
  if (!Number.isFinite(value) || !(hi > lo)) return 0;
  return Math.min(size, Math.max(0, ((value - lo) / (hi - lo)) * size));
}

/** The bars' axis of one figure: its finite values and 0 (bars start at 0). */
export function barDomain(values: readonly number[]): [number, number] {
  const finite = values.filter(Number.isFinite);
  const lo = Math.min(0, ...finite);
  const hi = Math.max(0, ...finite);
  return lo === hi ? [0, 1] : [lo, hi];
}

/** The best method by one figure (the first of equals), -1 when none is finite. */
export function best(values: readonly number[], higher: boolean): number {
  let found = -1;
  values.forEach((value, i) => {
    if (!Number.isFinite(value)) return;
    if (found < 0 || (higher ? value > values[found]! : value < values[found]!)) found = i;
  });
  return found;
}

/** "higher is better" / "lower is better". */
export function directionText(higher: boolean): string {
  return higher ? "higher is better" : "lower is better";
}

/** A figure's column of values, one per method. */
export function figureColumn(data: CompareData, k: number): number[] {
  return data.methods.map((_, i) => data.figures.data[i * data.figures.cols + k] as number);
}
