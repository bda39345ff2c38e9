/**
 * AttentionCalculator's traits (Python: attnwidget/views/teach/calculator.py,
 * which documents each one). Trait names are checked against Python's by
 * test/core/fixtures.test.ts (trait_names.ts).
 *
 * Arrays travel as one object with their bytes beside the shape: a
 * WireArray, float64 little-endian C order (Python: _calculator_traits.py).
 * The page decodes them (calculator_state.ts) and sends its edits back the
 * same way. Every step is computed by Python; the page only draws it.
 */
import type { BaseTraits, Binary } from "../core/types";

/** An array on the wire. */
export interface WireArray {
  dtype: "float64";
  shape: number[];
  data: Binary;
}

/** What the last good steps were computed with. */
export interface StepsInfo {
  version: number;
  score_kind: string;
  mask_kind: string;
  temperature: number;
  window: number;
  lengths: number | null;
  /** local-p's σ = D / 2; null for the other masks. */
  sigma: number | null;
  d: number | null;
}

export interface CalculatorTraits extends BaseTraits {
  _view: "calculator";
  /** A line above the inputs (text, never HTML). */
  caption: string;
  query_tokens: string[];
  key_tokens: string[];
  /** (m, d) queries. Synced both ways. */
  q: WireArray | null;
  /** (n, d) keys. Synced both ways. */
  k: WireArray | null;
  /** (n, d_v) values. Synced both ways. */
  v: WireArray | null;
  score_kind: string;
  /** general (d, d) / location (n, d). */
  W: WireArray | null;
  W1: WireArray | null;
  W2: WireArray | null;
  v_a: WireArray | null;
  beta: number;
  mask_kind: string;
  window: number;
  lengths: number | null;
  W_p: WireArray | null;
  v_p: WireArray | null;
  temperature: number;
  /** The steps (Python writes them; read-only here). */
  scores: WireArray | null;
  masked_scores: WireArray | null;
  weights: WireArray | null;
  gaussian: WireArray | null;
  local_weights: WireArray | null;
  positions: WireArray | null;
  output: WireArray | null;
  steps_info: StepsInfo;
  /** Why the current inputs were refused ("" if they were not). */
  error: string;
  /** +1 at every computation Python ran (good or refused). */
  revision: number;
}

/** attnwidget.teach.SCORE_KINDS, with what each computes. */
export const SCORE_KINDS: readonly [string, string][] = [
  ["dot", "dot: qᵀk (Luong 2015)"],
  ["scaled_dot", "scaled dot: qᵀk / √d (Vaswani 2017)"],
  ["general", "general: qᵀWk (Luong 2015)"],
  ["additive", "additive: vₐᵀ tanh(W₁q + W₂k) (Bahdanau 2015)"],
  ["concat", "concat: the same as additive (Luong 2015)"],
  ["cosine", "cosine: β·cos(q, k) (Graves 2014)"],
  ["location", "location: (Wq)ⱼ, from q alone (Luong 2015)"],
];

/** attnwidget.teach.MASK_KINDS, with what each hides. */
export const MASK_KINDS: readonly [string, string][] = [
  ["none", "none (global)"],
  ["causal", "causal: no later keys"],
  ["padding", "padding: keys ≥ L hidden"],
  ["local", "local window [p − D, p + D]"],
  ["local-m", "local-m: p = t (Luong 2015)"],
  ["local-p", "local-p: predicted p, Gaussian (Luong 2015)"],
];

/** The parameter arrays each score kind (and local-p) reads. */
export const KIND_PARAMS: Record<string, readonly ArrayName[]> = {
  dot: [],
  scaled_dot: [],
  general: ["W"],
  additive: ["W1", "W2", "v_a"],
  concat: ["W1", "W2", "v_a"],
  cosine: [],
  location: ["W"],
  "local-p": ["W_p", "v_p"],
};

/** The editable arrays. */
export type ArrayName = "q" | "k" | "v" | "W" | "W1" | "W2" | "v_a" | "W_p" | "v_p";
/** The drawn steps. */
export type StepName = "scores" | "masked_scores" | "weights" | "gaussian" | "local_weights" | "output";
