/**
 * GenerationView's pure logic (unit-tested in node): read the scores, pick a
 * method's (steps × columns) grid, sum subword columns to words, colour a
 * row, and the lines of a step's flow diagram.
 */
import { decodeFloat32 } from "../core/buffers";
import { css, scaleFor, textColorFor, type Scale } from "../core/colors";
import { levelOf, lineStyle } from "../flow/flow_lines";
import type { Binary } from "../core/types";

export type Aggregate = "tokens" | "words";

export interface GenerationData {
  methods: string[];
  signed: boolean[];
  steps: number;
  cols: number;
  /** (M, T, N) row-major. */
  scores: Float32Array;
  columns: string[];
  generated: string[];
  promptLength: number;
  prefixLengths: number[];
  words: number[];
  wordLabels: string[];
}

/** Decode the traits and check every length against the shape. */
export function readGeneration(traits: {
  scores: Binary | null;
  shape: number[];
  methods: string[];
  signed: boolean[];
  columns: string[];
  generated_tokens: string[];
  prompt_length: number;
  prefix_lengths: number[];
  words: number[];
  word_labels: string[];
}): GenerationData {
  const shape = traits.shape ?? [];
  if (shape.length !== 3 || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new RangeError(`scores: shape must be [methods, steps, columns], got [${shape.join(", ")}]`);
  }
  const [m, steps, cols] = shape as [number, number, number];
  const scores = traits.scores == null ? new Float32Array(0) : decodeFloat32(traits.scores, "scores");
  if (scores.length !== m * steps * cols) {
    throw new RangeError(`scores: ${scores.length} float32 values do not fill shape [${m}, ${steps}, ${cols}]`);
  }
  const methods = traits.methods ?? [];
  const columns = traits.columns ?? [];
  const generated = traits.generated_tokens ?? [];
  const words = traits.words ?? [];
  const prefixLengths = traits.prefix_lengths ?? [];
  if (methods.length !== m || generated.length !== steps || columns.length !== cols || words.length !== cols || prefixLengths.length !== steps) {
    throw new RangeError(
      `scores: shape [${m}, ${steps}, ${cols}] does not match ${methods.length} methods, ${generated.length} generated tokens, ${columns.length} columns`,
    );
  }
  return {
    methods,
    signed: traits.signed ?? [],
    steps,
    cols,
    scores,
    columns,
    generated,
    promptLength: traits.prompt_length ?? 0,
    prefixLengths,
    words,
    wordLabels: traits.word_labels ?? [],
  };
}

/** One method's scores as shown: rows are steps, columns tokens or words. */
export interface Grid {
  labels: string[];
  /** true for columns (tokens or words) that belong to the prompt. */
  prompt: boolean[];
  /** rows[t][j]; NaN where step t has not seen column j. */
  rows: Float32Array[];
  signed: boolean;
}

/** The index of `name` in the methods (0 when unknown). */
export function methodIndex(data: GenerationData, name: string): number {
  const index = data.methods.indexOf(name);
  return index < 0 ? 0 : index;
}

/** A method's grid; "words" sums the finite scores of each word's columns (NaN when it has none). */
export function gridOf(data: GenerationData, method: number, mode: Aggregate): Grid {
  const offset = method * data.steps * data.cols;
  const signed = Boolean(data.signed[method]);
  const tokenRows: Float32Array[] = [];
  for (let t = 0; t < data.steps; t++) {
    tokenRows.push(data.scores.subarray(offset + t * data.cols, offset + (t + 1) * data.cols));
  }
  if (mode !== "words") {
    const prompt = data.columns.map((_, j) => j < data.promptLength);
    return { labels: data.columns, prompt, rows: tokenRows, signed };
  }
  const count = data.words.reduce((a, b) => Math.max(a, b + 1), 0);
  const labels = Array.from({ length: count }, (_, w) => data.wordLabels[w] ?? "");
  const prompt = new Array<boolean>(count).fill(false);
  data.words.forEach((w, j) => {
    if (j < data.promptLength) prompt[w] = true;
  });
  const rows = tokenRows.map((row) => {
    const out = new Float32Array(count).fill(Number.NaN);
    data.words.forEach((w, j) => {
      const value = row[j] as number;
      if (!Number.isFinite(value)) return;
      out[w] = Number.isFinite(out[w] as number) ? (out[w] as number) + value : value;
    });
    return out;
  });
  return { labels, prompt, rows, signed };
}

/** Row t's colour scale (normalised by its own max |score| over the cells it saw). */
export function rowScale(grid: Grid, t: number): Scale {
  return scaleFor(grid.rows[t] ?? new Float32Array(0), grid.signed);
}

/** Fill and text colour of a cell; null for a cell the step never saw. */
export function cellColor(value: number, scale: Scale): { fill: string; text: string } | null {
  if (!Number.isFinite(value)) return null;
  const rgb = scale.color(value);
  return { fill: css(rgb), text: css(textColorFor(rgb)) };
}

/** The step a pointer target names (data-step), or null. */
export function stepOf(dataset: DOMStringMap): number | null {
  if (dataset.step === undefined) return null;
  const step = Number(dataset.step);
  return Number.isInteger(step) && step >= 0 ? step : null;
}

/** What a click on `step` selects: that step, or none when it is already selected. */
export function clickStep(step: number, selected: number): number {
  return step === selected ? -1 : step;
}

/** One line of the flow diagram: column → the generated token. */
export interface FlowLine {
  index: number;
  width: number;
  alpha: number;
  negative: boolean;
}

/** Below this share of the row's largest |score| no line is drawn. */
export const LINE_THRESHOLD = 0.02;

/** The flow diagram's lines for a row: FlowView's widths and opacities (flow_lines.ts) by |score| / max. */
export function flowLines(row: ArrayLike<number>): FlowLine[] {
  let max = 0;
  for (let j = 0; j < row.length; j++) {
    const v = Math.abs(row[j] as number);
    if (Number.isFinite(v) && v > max) max = v;
  }
  const lines: FlowLine[] = [];
  if (max === 0) return lines;
  for (let j = 0; j < row.length; j++) {
    const value = row[j] as number;
    if (!Number.isFinite(value)) continue;
    const level = levelOf(Math.abs(value) / max, LINE_THRESHOLD);
    if (level === 0) continue;
    const style = lineStyle(level, "path");
    lines.push({ index: j, width: style.width, alpha: style.alpha, negative: value < 0 });
  }
  return lines;
}
