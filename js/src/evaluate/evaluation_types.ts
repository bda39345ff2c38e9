/**
 * EvaluationView's traits (Python: attnwidget/views/evaluate/evaluation_view.py). Trait
 * names are checked against Python's by test/core/fixtures.test.ts (trait_names.ts).
 *
 * M methods (table rows), K metrics (table columns), N examples. Arrays are
 * float32 binary buffers, never JSON lists.
 */
import type { BaseTraits, Binary } from "../core/types";

export interface EvaluationTraits extends BaseTraits {
  _view: "evaluation";
  /** M method names (text, never HTML). */
  methods: string[];
  /** K metric names. */
  metrics: string[];
  /** K one-line descriptions of the metrics. */
  metric_summaries: string[];
  /** K flags: true -> higher values are better. */
  higher_is_better: boolean[];
  /** float32 (M, K, 4): mean, low, high (the bootstrap interval), count. */
  summary: Binary | null;
  /** [M, K, 4]. */
  summary_shape: number[];
  /** The intervals' confidence, e.g. 0.95. */
  confidence: number;
  /** N example ids (text, never HTML). */
  example_ids: string[];
  /** N example texts, cut short. */
  example_texts: string[];
  /** float32 (N, M, K): each example's value of each cell (NaN: undefined). */
  values: Binary | null;
  /** [N, M, K]. */
  values_shape: number[];
  /** [method, metric] of the selected cell, [] for none. Synced both ways. */
  selected: string[];
  /** The selected example's id, "" for none. Synced both ways. */
  selected_example: string;
}
