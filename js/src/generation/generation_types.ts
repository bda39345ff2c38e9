/**
 * GenerationView's traits (Python: attnwidget/views/generation/generation_view.py, whose
 * module docstring is the message schema).
 *
 * `scores` is float32 little-endian, C order, of shape `shape` = [M, T, N]:
 * M methods, T generated tokens (steps, rows), N context tokens (columns);
 * NaN where a step has no such position (its future).
 */
import type { BaseTraits, Binary } from "../core/types";

export interface GenerationTraits extends BaseTraits {
  _view: "generation";
  /** N context tokens (text, never HTML). */
  columns: string[];
  /** The first prompt_length columns are the prompt (source). */
  prompt_length: number;
  /** T generated tokens (text, never HTML). */
  generated_tokens: string[];
  /** T: the columns step t sees. */
  prefix_lengths: number[];
  /** N: the word of each column. */
  words: number[];
  /** The text of each word. */
  word_labels: string[];
  /** M method names. */
  methods: string[];
  /** M: true when the method's scores may be negative. */
  signed: boolean[];
  /** (M, T, N) float32. */
  scores: Binary | null;
  /** [M, T, N]. */
  shape: number[];
  /** One line above the map (text). */
  caption: string;
  /** Synced both ways: the method shown. */
  selected_method: string;
  /** Synced both ways: the selected step, -1 for none. */
  selected_step: number;
  /** Synced both ways: "tokens" or "words". */
  aggregate: "tokens" | "words";
}
