/**
 * Trait and message schema of FlowView (Python: attnwidget/views/flow_view.py,
 * whose docstring has the same tables). Keep both in sync.
 *
 * L attention layers, n tokens, both of the shown stack; node layers 0
 * (input tokens) … L (top). Edge layer l (1 … L) links node (l, i) to node
 * (l − 1, j).
 */
import type { BaseTraits, Binary } from "./types";

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
  /** Synced both ways. */
  method: string;
  selected_layer: number;
  selected_token: number;
  threshold: number;
}

/** page -> kernel: the paths of `method` for node (layer, token). */
export interface ComputeRequest {
  type: "compute";
  id: number;
  version: number;
  method: string;
  layer: number;
  token: number;
}

/** page -> kernel: one attention layer (0-based) that `fused` lacks. */
export interface LayerRequest {
  type: "request";
  version: number;
  layer: number;
}

/** kernel -> page while a computation runs. */
export interface ProgressReply {
  type: "progress";
  id: number;
  done: number;
  total: number;
}

/**
 * kernel -> page: paths. Buffers: nodes float32 (L+1, n); edge index uint32
 * (E) = i·n + j grouped by edge layer (counts); edge value float32 (E);
 * totals float32 (L) = Σ |contribution| of each edge layer.
 */
export interface PathsReply {
  type: "paths";
  id: number;
  version: number;
  method: string;
  layer: number;
  token: number;
  shape: [number, number];
  counts: number[];
  signed: boolean;
  note: string;
  floor: number;
  dropped: number;
}

/** kernel -> page: one layer's float32 (n, n) W as the single buffer. */
export interface LayerReply {
  type: "layer";
  version: number;
  layer: number;
}

/**
 * kernel -> page: the compute request `id` was for an older version (the
 * explanation or stack changed meanwhile); the page drops it and asks again.
 */
export interface StaleReply {
  type: "stale";
  id: number;
  version: number;
}

export interface ErrorReply {
  type: "error";
  id?: number | null;
  message: string;
}
