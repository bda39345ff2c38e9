/**
 * The arithmetic behind each cell of the calculator's steps, written out for
 * a person ("s[0,1] = q0·k1 = 1×0 + 0×1 = 0"). Pure functions of the inputs
 * the steps were computed from and the steps Python sent: the terms are
 * formed here, the result shown is always Python's value. Numbers have at
 * most 4 significant digits (format.ts); indices count from 0, as in Python.
 */
import { formatNumber, MINUS } from "../core/format";
import { at, dims, rowOf, type Inputs, type Mat, type Steps } from "./calculator_state";
import type { StepName } from "./calculator_types";

/** A number for a person, 4 significant digits. */
export function num(value: number): string {
  return formatNumber(value, { digits: 4 });
}

/** A factor in a product: negative numbers in parentheses ("0.5×(−1)"). */
function factor(value: number): string {
  const text = num(value);
  return text.startsWith(MINUS) ? `(${text})` : text;
}

/** At most this many terms are written out; the rest are counted. */
export const MAX_TERMS = 6;

/** "a×b + c×d + …" for paired values, cut after MAX_TERMS terms. */
export function sumOfProducts(a: ArrayLike<number>, b: ArrayLike<number>): string {
  const terms: string[] = [];
  const shown = a.length > MAX_TERMS ? MAX_TERMS - 2 : a.length;
  for (let t = 0; t < shown; t++) terms.push(`${factor(a[t] as number)}×${factor(b[t] as number)}`);
  if (shown < a.length) terms.push(`… (${a.length - shown} more terms)`);
  return terms.join(" + ");
}

function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let t = 0; t < a.length; t++) s += (a[t] as number) * (b[t] as number);
  return s;
}

function norm(a: ArrayLike<number>): number {
  return Math.sqrt(dot(a, a));
}

/** W · x for a 2-D W and a vector x. */
function matVec(w: Mat, x: ArrayLike<number>): Float64Array {
  const [rows] = dims(w) as [number, number];
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) out[r] = dot(rowOf(w, r), x);
  return out;
}

/** The lines for a score cell (query i, key j). */
function scoreLines(inputs: Inputs, steps: Steps, i: number, j: number): string[] {
  const { q, k, W, W1, W2, v_a } = inputs.arrays;
  const result = num(at(steps.scores, i, j));
  const head = `s[${i},${j}]`;
  if (!q || !k) return [`${head} = ${result}`];
  const qi = rowOf(q, i);
  const kj = rowOf(k, j);
  switch (steps.info.score_kind) {
    case "dot":
      return [`${head} = q${i}·k${j} = ${sumOfProducts(qi, kj)} = ${result}`];
    case "scaled_dot": {
      const d = qi.length;
      return [`${head} = q${i}·k${j} / √${d} = (${sumOfProducts(qi, kj)}) / ${num(Math.sqrt(d))}`, `= ${num(dot(qi, kj))} / ${num(Math.sqrt(d))} = ${result}`];
    }
    case "general": {
      if (!W) break;
      const wk = matVec(W, kj);
      return [`${head} = q${i}ᵀ W k${j} = q${i}·(W k${j})`, `= ${sumOfProducts(qi, wk)} = ${result}`];
    }
    case "additive":
    case "concat": {
      if (!W1 || !W2 || !v_a) break;
      const a = matVec(W1, qi);
      const b = matVec(W2, kj);
      const inner = Array.from(a, (x, t) => x + (b[t] as number));
      const shown = inner.length > MAX_TERMS ? MAX_TERMS - 2 : inner.length;
      const terms = inner.slice(0, shown).map((x, t) => `${factor(v_a.data[t] as number)}×tanh(${num(x)})`);
      if (shown < inner.length) terms.push(`… (${inner.length - shown} more terms)`);
      return [`${head} = vₐᵀ tanh(W₁q${i} + W₂k${j})`, `= ${terms.join(" + ")} = ${result}`];
    }
    case "cosine": {
      const beta = num(inputs.beta);
      return [
        `${head} = β·(q${i}·k${j}) / (‖q${i}‖ ‖k${j}‖)`,
        `= ${beta} × ${num(dot(qi, kj))} / (${num(norm(qi))} × ${num(norm(kj))}) = ${result}`,
      ];
    }
    case "location": {
      if (!W || !(j < (dims(W)?.[0] ?? 0))) break;
      return [`${head} = (W q${i})_${j} = W[${j}]·q${i} = ${sumOfProducts(rowOf(W, j), qi)} = ${result}`];
    }
  }
  return [`${head} = ${result}`];
}

/** Where query i's window is centred (the mask kinds with a window). */
function centre(steps: Steps, i: number, m: number, n: number): number {
  if (steps.info.mask_kind === "local-p" && steps.positions) return steps.positions.data[i] as number;
  if (steps.info.mask_kind === "local-m") return i;
  return i + (n - m);
}

/** Why key j is hidden from query i (or visible), by the mask kind. */
export function maskReason(steps: Steps, i: number, j: number): string {
  const [m, n] = dims(steps.scores) as [number, number];
  const hidden = steps.masked.data[i * n + j] === -Infinity;
  const info = steps.info;
  switch (info.mask_kind) {
    case "causal": {
      const p = i + (n - m);
      return hidden ? `key ${j} comes after query ${i} (position ${p})` : `key ${j} ≤ position ${p}: visible`;
    }
    case "padding": {
      const length = info.lengths ?? n;
      return hidden ? `key ${j} is padding (keys 0..${length - 1} are real)` : `key ${j} is a real token (L = ${length})`;
    }
    case "local":
    case "local-m":
    case "local-p": {
      const p = centre(steps, i, m, n);
      const d = info.window;
      const where = `[p − D, p + D] = [${num(p - d)}, ${num(p + d)}]`;
      return hidden ? `key ${j} is outside the window ${where}` : `key ${j} is inside the window ${where}`;
    }
  }
  return "no mask: every key is visible";
}

function expTerm(s: number, t: number): string {
  return t === 1 ? `exp(${num(s)})` : `exp(${num(s)}/${num(t)})`;
}

/** The lines for softmax weight (i, j). */
function weightLines(steps: Steps, i: number, j: number): string[] {
  const [, n] = dims(steps.scores) as [number, number];
  const t = steps.info.temperature;
  const row = rowOf(steps.masked, i);
  const head = `a[${i},${j}]`;
  const result = num(at(steps.weights, i, j));
  if (row[j] === -Infinity) return [`${head} = 0: s̃[${i},${j}] = −∞ and exp(−∞) = 0`, maskReason(steps, i, j)];
  const max = Math.max(...Array.from(row).filter(Number.isFinite));
  // exp(s/T) written as the learner reads it; computed shifted by the row's max so that it cannot overflow.
  let total = 0;
  for (let c = 0; c < n; c++) if (row[c] !== -Infinity) total += Math.exp(((row[c] as number) - max) / t);
  const visible = Array.from(row).map((s, c) => [s, c] as const).filter(([s]) => s !== -Infinity);
  const shown = visible.length > MAX_TERMS ? MAX_TERMS - 2 : visible.length;
  const terms = visible.slice(0, shown).map(([s]) => expTerm(s, t));
  if (shown < visible.length) terms.push(`… (${visible.length - shown} more)`);
  const top = Math.exp(((row[j] as number) - max) / t);
  const lines = [`${head} = ${expTerm(row[j] as number, t)} / (${terms.join(" + ")})`];
  if (Math.abs(max / t) < 600) lines.push(`= ${num(top * Math.exp(max / t))} / ${num(total * Math.exp(max / t))} = ${result}`);
  else lines.push(`= ${num(top)} / ${num(total)} = ${result} (numerator and sum × exp(−${num(max)}/T))`);
  return lines;
}

/** Every line of arithmetic for one cell of a step. */
export function cellArithmetic(step: StepName, inputs: Inputs, steps: Steps, i: number, j: number): string[] {
  switch (step) {
    case "scores":
      return scoreLines(inputs, steps, i, j);
    case "masked_scores": {
      const value = at(steps.masked, i, j);
      const reason = maskReason(steps, i, j);
      return value === -Infinity ? [`s̃[${i},${j}] = −∞`, reason] : [`s̃[${i},${j}] = s[${i},${j}] = ${num(value)}`, reason];
    }
    case "weights":
      return weightLines(steps, i, j);
    case "gaussian": {
      if (!steps.gaussian || !steps.positions) return [];
      const p = steps.positions.data[i] as number;
      const sigma = steps.info.sigma ?? steps.info.window / 2;
      return [
        `g[${i},${j}] = exp(−(j − p${i})² / (2σ²)), σ = D/2 = ${num(sigma)}`,
        `= exp(−(${j} − ${num(p)})² / ${num(2 * sigma * sigma)}) = ${num(at(steps.gaussian, i, j))}`,
      ];
    }
    case "local_weights": {
      if (!steps.local || !steps.gaussian) return [];
      return [`ã[${i},${j}] = a[${i},${j}] × g[${i},${j}] = ${factor(at(steps.weights, i, j))}×${factor(at(steps.gaussian, i, j))} = ${num(at(steps.local, i, j))}`];
    }
    case "output": {
      const v = inputs.arrays.v;
      const weights = steps.local ?? steps.weights;
      const a = steps.local ? "ã" : "a";
      const result = num(at(steps.output, i, j));
      if (!v || dims(v)?.[0] !== dims(weights)?.[1]) return [`o[${i},${j}] = ${result}`];
      const column = Array.from({ length: dims(v)![0] }, (_, r) => at(v, r, j));
      return [`o[${i},${j}] = Σₖ ${a}[${i},k] v[k,${j}]`, `= ${sumOfProducts(rowOf(weights, i), column)} = ${result}`];
    }
  }
  return [];
}
