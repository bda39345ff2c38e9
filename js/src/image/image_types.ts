/**
 * ImageView's traits and messages (Python: attnwidget/views/image/image_view.py and
 * _image_wire.py). Trait names are checked against Python's by
 * test/core/fixtures.test.ts (trait_names.ts).
 *
 * Query maps: row 0 is the explanation's query token (CLS), rows 1..P the
 * patches in row-major order; the P columns are the patches. "attention"
 * holds every head of a layer, "rollout" one (fused) map per layer.
 */
import type { BaseTraits, Binary } from "../core/types";

/** The two query modes `method` may name besides the score methods. */
export const QUERY_ATTENTION = "query_attention";
export const QUERY_ROLLOUT = "query_rollout";
export type QueryMode = typeof QUERY_ATTENTION | typeof QUERY_ROLLOUT;

/** Which wire map a query mode draws. */
export type MapName = "attention" | "rollout";

/** A block of one map's layer: heads [h0, h1) × query rows [r0, r1) × P columns. */
export interface ChunkInfo {
  map: MapName;
  layer: number;
  heads: [number, number];
  rows: [number, number];
}

/** A chunk inside the `preload` bytes. */
export interface PreloadEntry extends ChunkInfo {
  offset: number;
  nbytes: number;
}

export interface ImageTraits extends BaseTraits {
  _view: "image";
  /** The image as PNG bytes. */
  image: Binary | null;
  /** [height, width] of the PNG. */
  image_size: number[];
  /** [rows, cols] of the patch grid. */
  grid: number[];
  /** Patch side in pixels of the model's input. */
  patch_size: number;
  /** P patch token names, row-major (text, never HTML). */
  labels: string[];
  /** Names of the special tokens (text, never HTML). */
  special_tokens: string[];
  /** The keys ignore_keys left out of every attention row ("#0 '[CLS]'"); [] for none. */
  ignored_keys: string[];
  /** Name of the explanation's query token: the query while no patch is selected. */
  query_token: string;
  /** The explained target ("" if none). */
  target: string;
  /** m score methods. */
  methods: string[];
  summaries: string[];
  signed: boolean[];
  /** float32 (m, rows, cols). */
  scores: Binary | null;
  /** [m, rows, cols]. */
  shape: number[];
  num_layers: number;
  num_heads: number;
  /** float16 chunks of the query maps, described by `preload_index`. */
  preload: Binary | null;
  preload_index: PreloadEntry[];
  /** The map drawn: a score method or a query mode. Synced both ways. */
  selected_method: string;
  /** Layer of the query maps. Synced both ways. */
  layer: number;
  /** Head of query_attention, -1: mean over heads. Synced both ways. */
  head: number;
  /** The selected patch's row-major index (row * cols + col), -1 for none. Synced both ways. */
  selected_patch: number;
  /** Opacity of the map over the image, 0..1. Synced both ways. */
  opacity: number;
}

/** page -> kernel: every chunk of `map` at `layer`. */
export interface MapRequest {
  type: "request";
  map: MapName;
  layer: number;
}

/** kernel -> page: one chunk, its float16 values as the single buffer. */
export interface ChunkReply extends ChunkInfo {
  type: "chunk";
  dtype: "float16";
  /** [h1 - h0, r1 - r0, P]. */
  shape: number[];
}

/** kernel -> page: a request that cannot be served. */
export interface MapError {
  type: "error";
  message: string;
  request?: unknown;
}
