/**
 * Trait and message schema of FlowView (Python: attnwidget/views/flow/flow_view.py,
 * whose docstring has the same tables). The trait names are
 * checked against Python's by test/core/fixtures.test.ts (see trait_names.ts).
 *
 * L attention layers, n tokens, both of the shown stack; node layers 0
 * (input tokens) … L (top). Edge layer l (1 … L) links node (l, i) to node
 * (l − 1, j).
 */
import type { NotesState } from "../core/notes";
import type { BaseTraits, Binary } from "../core/types";

// The custom messages (compute, layer, paths, ...) are typed in flow_messages.ts.

/** A self-attention stack: "decoder" exists for encoder–decoder models only. */
export type FlowStack = "encoder" | "decoder";

export interface FlowTraits extends BaseTraits {
  _view: "flow";
  /**
   * The explanation's self-attention stacks: ["encoder", "decoder"] for
   * encoder–decoder models (the page shows a picker), else ["encoder"] (the
   * model's only stack).
   */
  stacks: FlowStack[];
  /**
   * The shown stack, synced both ways; the kernel answers a change with the
   * stack's data (tokens, shape, fused, … and a new version). Cross-attention
   * links two token sets, so it is drawn on neither stack.
   */
  stack: FlowStack;
  /** n token strings, shown as text (never parsed as HTML). */
  tokens: string[];
  /** The tokenizer's own strings of `tokens` ("##ing"), shown on hover; [] if unknown. */
  raw_tokens: string[];
  /** [L, n]. */
  shape: number[];
  /**
   * float32 LE, C order, (fused_layers, n, n): head-fused attention W_l (no
   * residual), layers 1 … fused_layers. float32 (not float16) so that what the
   * page computes from it matches the kernel's numbers to float32 precision.
   */
  fused: Binary | null;
  /** How many layers `fused` holds; the page requests the others. */
  fused_layers: number;
  head_fusion: string;
  /** The explained query position, -1 for none (an encoder–decoder model's encoder: its query is a decoder position). */
  query_index: number;
  /** What is explained (plain text). */
  caption: string;
  /** Path methods available for this input, with one-line summaries and signedness. */
  methods: string[];
  summaries: string[];
  signed: boolean[];
  /** Methods the page computes itself from `fused` ("raw", "rollout"). */
  local_methods: string[];
  /** Bumps with every new explanation and stack; requests and replies carry it. */
  version: number;
  /** The method whose paths are drawn. Synced both ways. */
  selected_method: string;
  selected_layer: number;
  selected_token: number;
  threshold: number;
  /** What sets the label colours' range: "words" (specials and the selected token left out) or "all". */
  scale: "words" | "all";
  /** The edge notes panel (core/notes.ts; kind "" = no store, hidden). */
  notes: NotesState;
}
