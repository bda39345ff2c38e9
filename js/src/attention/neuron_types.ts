/**
 * NeuronView's traits (Python: attnwidget/views/attention/neuron_view.py, whose module
 * docstring is the message schema). Trait names are checked against
 * Python's by test/core/fixtures.test.ts (trait_names.ts).
 *
 * The arrays are one layer's (`data_layer`), float32 little-endian C order:
 * q, k, q_rotated, k_rotated (H, n, d) and scores, weights (H, n, n).
 */
import type { BaseTraits, Binary } from "../core/types";

export interface NeuronTraits extends BaseTraits {
  _view: "neuron";
  /** n tokens (text, never HTML). */
  tokens: string[];
  /** The tokenizer's own strings of `tokens` ("##ing"), shown on hover. */
  raw_tokens: string[];
  num_layers: number;
  num_heads: number;
  /** Key heads (fewer than num_heads: grouped-query attention). */
  num_kv_heads: number;
  head_dim: number;
  /** Key j is masked for query i < j. */
  causal: boolean;
  /** q_rotated / k_rotated hold the rotated vectors the scores use. */
  rotary: boolean;
  /** The layer the arrays hold. */
  data_layer: number;
  /** The layer's score scale (1/√d). */
  scale: number;
  /** [H, n, d]. */
  shape: number[];
  q: Binary | null;
  k: Binary | null;
  /** Empty when not rotary. */
  q_rotated: Binary | null;
  k_rotated: Binary | null;
  /** (H, n, n) scale · q·k, unmasked. */
  scores: Binary | null;
  /** (H, n, n) softmax over the unmasked keys. */
  weights: Binary | null;
  /** Synced both ways. */
  layer: number;
  head: number;
  selected_token: number;
}
