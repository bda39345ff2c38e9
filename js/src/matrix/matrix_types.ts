/**
 * AttentionMatrixView's traits and messages (Python:
 * attnwidget/views/matrix/matrix_view.py, whose module docstring is the
 * message schema; tiles and levels: attnwidget/views/matrix/_tiles.py).
 * MATRIX_TRAITS is checked against Python's trait names by
 * test/matrix.test.ts (through the fixture Python writes).
 */
import type { WireMeta } from "../core/buffers";
import type { BaseTraits, Binary } from "../core/types";


export interface MatrixTraits extends BaseTraits {
  _view: "matrix";
  /** n tokens: rows are queries, columns keys (text, never HTML). */
  tokens: string[];
  /** [L, H, n]; H = 0 when only the head mean is kept. */
  shape: number[];
  /** "attentions" or "fused_attentions". */
  kept: string;
  /** Cells per tile side. */
  tile_size: number;
  /** [rows, cols] of each level, level 0 (every token) first. */
  levels: number[][];
  /** Bumps when the drawn matrix changes; tile requests and replies carry it. */
  version: number;
  /** The coarsest level as float16 (overview_meta). */
  overview: Binary | null;
  overview_meta: WireMeta;
  /** [lo, hi] of the drawn weights (0 … the largest). */
  value_range: number[];
  /** The colour scale in use, fitted by Python to the drawn matrix. */
  color_map: ColorMap;
  caption: string;
  /** Why another view shows this one instead ("" for none). */
  notice: string;
  /** Synced both ways. */
  layer: number;
  /** A head id, or -1 for the mean over the layer's heads. Synced both ways. */
  head: number;
  /** "max" or "mean": how coarse levels pool. */
  pool: string;
  /** "auto", "linear" or "log": what the user asked for (synced). */
  color_scale: string;
  /** The pinned query row (a token index), -1 for none (synced). */
  selected_token: number;
}

/** Every trait of MatrixTraits (the JS tests compare them with Python's). */
export const MATRIX_TRAITS: readonly (keyof MatrixTraits)[] = [
  "_view", "tokens", "shape", "kept", "tile_size", "levels", "version", "overview", "overview_meta",
  "value_range", "color_map", "caption", "notice", "layer", "head", "pool", "color_scale", "selected_token",
];

/**
 * The colour scale (attnwidget/views/matrix/_colors.py ColorMap.to_json):
 * `scale` from `lo` to `hi`; `clipped`: linear topped at the 99.9th
 * percentile, `above` cells beyond it; `label`: the legend's line.
 */
export interface ColorMap {
  asked: string;
  scale: "linear" | "log";
  lo: number;
  hi: number;
  clipped: boolean;
  above: number;
  label: string;
}

/** page -> kernel: the tiles of one level the page lacks. */
export interface TileRequest {
  type: "tiles";
  version: number;
  level: number;
  tiles: [number, number][];
}

/** One tile of a reply: its place and its buffer's wire meta. */
export interface TileInfo extends WireMeta {
  i: number;
  j: number;
}

/** kernel -> page: tiles, one buffer each, in order. */
export interface TileReply {
  type: "tiles";
  version: number;
  level: number;
  tiles: TileInfo[];
}
