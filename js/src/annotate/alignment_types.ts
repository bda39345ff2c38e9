/**
 * AlignmentView's traits (Python: attnwidget/views/annotate/alignment_view.py, whose
 * module docstring is the message schema). Trait names are checked against
 * Python's by test/core/fixtures.test.ts (trait_names.ts).
 *
 * `alignment` is float32 little-endian, C order, of shape `shape` = [m, n]:
 * m output steps (rows) by n input tokens (columns).
 */
import type { BaseTraits, Binary } from "../core/types";

export interface AlignmentTraits extends BaseTraits {
  _view: "alignment";
  /** n input tokens (text, never HTML). */
  input_tokens: string[];
  /** m output tokens (text, never HTML). */
  output_tokens: string[];
  /** One line above the matrix (text). */
  caption: string;
  /** [m, n]. */
  shape: number[];
  /** (m, n) attention of each output step over the input. */
  alignment: Binary | null;
  /** Synced both ways; -1: none. */
  selected_output: number;
  /** Synced both ways; -1: none. */
  selected_input: number;
}
