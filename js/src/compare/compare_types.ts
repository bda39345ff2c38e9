/**
 * CompareView's traits (Python: attnwidget/views/compare/compare_view.py). Trait
 * names are checked against Python's by test/core/fixtures.test.ts (trait_names.ts).
 *
 * m methods (rows), n tokens, A agreement metrics, K faithfulness and
 * plausibility figures. Arrays are float32 binary buffers, never JSON lists.
 */
import type { BaseTraits, Binary } from "../core/types";

export interface CompareTraits extends BaseTraits {
  _view: "compare";
  /** n token strings (text, never HTML). */
  tokens: string[];
  /** The tokenizer's own strings of `tokens`, shown on hover; [] if unknown. */
  raw_tokens: string[];
  /** m method names, one row each. */
  methods: string[];
  /** m one-line method descriptions ("" when unknown). */
  summaries: string[];
  /** m flags: true -> diverging colours centred at 0. */
  signed: boolean[];
  /** float32 (m, n): scores[i, j] = method i, token j. */
  scores: Binary | null;
  /** [m, n]. */
  shape: number[];
  /** The explained query position (marked), -1 for none. */
  query_index: number;
  /** n flags: the tokens the rank comparisons run over (they set each row's colour range). */
  compared: boolean[];
  /** float32 (n,): the spread of each token's rank over the methods; NaN where not compared. */
  disagreement: Binary | null;
  /** A agreement metric names. */
  agreement_metrics: string[];
  /** A flags: true -> a correlation in [-1, 1]; false -> a share in [0, 1]. */
  agreement_signed: boolean[];
  /** float32 (A, m, m): one method × method table per metric (NaN: undefined). */
  agreement: Binary | null;
  /** [A, m, m]. */
  agreement_shape: number[];
  /** K kinds: "faithfulness" or "plausibility". */
  figure_kinds: string[];
  /** K metric names. */
  figure_metrics: string[];
  /** K one-line metric descriptions ("" when unknown). */
  figure_summaries: string[];
  /** K flags: true -> higher is better. */
  figure_higher_is_better: boolean[];
  /** float32 (m, K): each method's figures (NaN: undefined). */
  figures: Binary | null;
  /** [m, K]. */
  figure_shape: number[];
  /** n flags of the human rationale, [] without one. */
  rationale: boolean[];
  /** What is compared, in a sentence. */
  caption: string;
  /** Why a part is missing (no model to re-run, no rationale). */
  notes: string[];
  /** The selected token, -1 for none. Synced both ways. */
  selected_token: number;
  /** [method, other]: the heat-map cell whose scatter is drawn, [] for none. Synced both ways. */
  selected_pair: string[];
  /** The agreement metric the heat map shows. Synced both ways. */
  agreement_metric: string;
}
