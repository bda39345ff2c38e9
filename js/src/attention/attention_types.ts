/**
 * Trait and message schema of HeadView and ModelView (Python:
 * attnwidget/views/attention/head_view.py, model_view.py, _attention.py). The trait names are
 * checked against Python's by test/core/fixtures.test.ts (see trait_names.ts).
 *
 * Attention weights travel as float16 (little-endian, C order) in binary
 * buffers: in the `preload` / `thumbs` traits, and in custom messages the
 * page asks for as the user navigates (see AttentionRequest).
 */
import type { NotesState } from "../core/notes";
import type { BaseTraits, Binary } from "../core/types";

/** The token list labelling a matrix's rows or columns. */
export type TokenList = "tokens" | "decoder_tokens";

/** One attention kind of the model (an entry of the `matrices` trait). */
export interface MatrixInfo {
  /** "self", or "encoder" / "decoder" / "cross" for encoder–decoder models. */
  key: string;
  label: string;
  /** Which token list labels the queries (rows) and keys (columns). */
  rows: TokenList;
  cols: TokenList;
  /** [layers, heads, rows, cols]. */
  shape: [number, number, number, number];
  /** Model numbering of the layers / heads shown (e.g. after include_layers). */
  layer_ids: number[];
  head_ids: number[];
  /** No query attends to a later key: later keys are shown as masked. */
  causal: boolean;
  /**
   * Shown beside the matrix when present: which keys were left out of every
   * row, rows renormalised (explain(..., ignore_keys=...); Python's
   * AttentionMatrix.note).
   */
  note?: string;
}

/**
 * A block of one matrix: layer position `layer` (an index into layer_ids),
 * head positions [heads[0], heads[1]), query rows [rows[0], rows[1]), all
 * columns; float16 values, head-major.
 */
export interface ChunkDescriptor {
  matrix: string;
  layer: number;
  heads: [number, number];
  rows: [number, number];
}

/** A chunk inside a binary trait: its bytes are [offset, offset + nbytes). */
export interface IndexedChunk extends ChunkDescriptor {
  offset: number;
  nbytes: number;
}

/** Pooled thumbnails of one matrix inside the `thumbs` trait: (L, H, row bins, col bins). */
export interface ThumbIndex {
  matrix: string;
  /** Bin k covers tokens edges[k] .. edges[k + 1] - 1. */
  row_edges: number[];
  col_edges: number[];
  offset: number;
  nbytes: number;
}

export type PairFilter = "all" | "A->A" | "B->B" | "A->B" | "B->A";
export type Theme = "auto" | "light" | "dark";

/** Traits HeadView and ModelView share. */
export interface AttentionTraits extends BaseTraits {
  tokens: string[];
  /** The tokenizer's own strings of `tokens` ("##ing"), shown on hover; [] if unknown. */
  raw_tokens: string[];
  decoder_tokens: string[];
  matrices: MatrixInfo[];
  /** First token of sentence B, -1 for none. */
  sentence_b_start: number;
  preload: Binary | null;
  preload_index: IndexedChunk[];
  /** Bumped by `set_explanation`: the attention loaded so far belongs to the old one. */
  _generation?: number;
  theme: Theme;
  /** Shown matrix key (synced both ways). */
  matrix: string;
  pair_filter: PairFilter;
  /**
   * Pinned query row of the shown matrix, -1 for none (synced both ways).
   * Unpinned when the matrix switches to one with other query tokens.
   */
  selected_token: number;
}

/** HeadView (attnwidget/views/attention/head_view.py). */
export interface HeadTraits extends AttentionTraits {
  _view: "head";
  /** Shown layer id. */
  layer: number;
  /** Shown head ids, ascending. */
  heads: number[];
  /** The notes panel (core/notes.ts; kind "" = no store, hidden). */
  notes: NotesState;
}

/** ModelView (attnwidget/views/attention/model_view.py). */
export interface ModelTraits extends AttentionTraits {
  _view: "model";
  thumbs: Binary | null;
  thumb_index: ThumbIndex[];
  /** Enlarged head: layer id and head id, both -1 for none. */
  layer: number;
  head: number;
  /** The notes panel (core/notes.ts; kind "" = no store, hidden). */
  notes: NotesState;
  // selected_token (AttentionTraits): a query row of the enlarged head; always
  // -1 while none is enlarged (closing unpins).
}

/** page -> kernel: send the attention of layer position `layer` (one head if given). */
export interface AttentionRequest {
  type: "request";
  matrix: string;
  layer: number;
  head?: number;
}

/** kernel -> page: one chunk (its bytes are the message's single buffer). */
export interface AttentionReply extends ChunkDescriptor {
  type: "attention";
  dtype: "float16";
}

/** kernel -> page: a request could not be served. */
export interface AttentionError {
  type: "error";
  message: string;
}
