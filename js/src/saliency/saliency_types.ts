import type { BaseTraits, Binary } from "../core/types";

/**
 * SaliencyView (Python: attnwidget/views/saliency/saliency_view.py).
 *
 * Rows are methods, columns are input tokens; m = shape[0], n = shape[1].
 */
export interface SaliencyTraits extends BaseTraits {
  _view: "saliency";
  /** n token strings, shown as text (never parsed as HTML). */
  tokens: string[];
  /** The tokenizer's own strings of `tokens` ("##ing"), shown on hover; [] if unknown. */
  raw_tokens: string[];
  /** m method names, one row each. */
  methods: string[];
  /** m one-line descriptions of the methods ("" when unknown). */
  summaries: string[];
  /** m flags: true -> scores may be negative: diverging colours centred at 0. */
  signed: boolean[];
  /** float32 little-endian, C order, shape (m, n): scores[i, j] = method i, token j. */
  scores: Binary | null;
  /** [m, n]. */
  shape: number[];
  /** The explained query position (marked in the view); -1 for none. */
  query_index: number;
  /**
   * What sets each row's colour range: "words" (special tokens and the query
   * drawn but left out) or "all". Synced both ways.
   */
  scale: "words" | "all";
  /** The selected token column, -1 for none. Synced both ways. */
  selected_token: number;
  /** p tokens of the second text of a similarity explanation ([] otherwise). */
  pair_tokens: string[];
  /** float32 (m, p): the second text's scores, same method rows. */
  pair_scores: Binary | null;
  /** [m, p] ([0, 0] without a pair). */
  pair_shape: number[];
  /** The explained scalar: the similarity of the pair, or the target logit; null if unknown. */
  target_score: number | null;
  /** "mean" or "cls" for a bare encoder's embeddings, else "". */
  pooling: string;
}
