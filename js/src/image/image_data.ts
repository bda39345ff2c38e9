/**
 * ImageView's data as the page holds it: the traits decoded once per change
 * (scores, names, the query-map store filled from `preload`), and each score
 * method's colour range and smooth colours, made on first use.
 */
import type { AnyModel } from "@anywidget/types";

import { decodeFloat32 } from "../core/buffers";
import { mapCanvas } from "./image_draw";
import { mapRange, type MapRange } from "./image_maths";
import { QueryMapStore } from "./image_state";
import type { ImageTraits } from "./image_types";
import type { Binary } from "../core/types";

/** A score method's map: its range and its colours on an offscreen canvas. */
export interface ScoreMap {
  range: MapRange;
  /** The map for the main image (made on first use: a first render shows one). */
  readonly canvas: HTMLCanvasElement;
  /** The same map upsampled only as far as a small multiple shows it (made on first use). */
  small?: HTMLCanvasElement;
}

export interface Data {
  rows: number;
  cols: number;
  labels: string[];
  methods: string[];
  signed: boolean[];
  summaries: string[];
  /** float32 (m, rows, cols). */
  scores: Float32Array;
  layers: number;
  heads: number;
  store: QueryMapStore;
  /** Per score method, made on first use. */
  maps: Map<string, ScoreMap>;
}

/** Decode the data traits; throws when they do not fit together. */
export function readData(model: AnyModel<ImageTraits>): Data {
  const [rows = 0, cols = 0] = model.get("grid") ?? [];
  const methods = (model.get("methods") ?? []).map(String);
  const shape = model.get("shape") ?? [0, rows, cols];
  const raw = model.get("scores");
  const scores = raw ? decodeFloat32(raw as Binary, "scores") : new Float32Array(0);
  if (shape[0] !== methods.length || shape[1] !== rows || shape[2] !== cols || scores.length !== methods.length * rows * cols) {
    throw new RangeError(`scores have shape [${shape.join(", ")}] but there are ${methods.length} methods on a ${rows}×${cols} grid`);
  }
  const heads = model.get("num_heads") ?? 0;
  const store = new QueryMapStore(heads, 1 + rows * cols, rows * cols);
  store.ingestPreload(model.get("preload"), model.get("preload_index") ?? []);
  return {
    rows,
    cols,
    methods,
    scores,
    heads,
    store,
    labels: (model.get("labels") ?? []).map(String),
    signed: (model.get("signed") ?? []).map(Boolean),
    summaries: (model.get("summaries") ?? []).map(String),
    layers: model.get("num_layers") ?? 0,
    maps: new Map(),
  };
}

/** A score method's values over the patches (a view of the scores), or null for another name. */
export function scoresOf(d: Data, method: string): Float32Array | null {
  const i = d.methods.indexOf(method);
  const size = d.rows * d.cols;
  return i < 0 ? null : d.scores.subarray(i * size, (i + 1) * size);
}

/** A score method's map, made once per data; its canvases are drawn when first read. */
export function scoreMapOf(doc: Document, d: Data, method: string): ScoreMap | null {
  const values = scoresOf(d, method);
  if (!values) return null;
  let made = d.maps.get(method);
  if (!made) {
    const range = mapRange(values, Boolean(d.signed[d.methods.indexOf(method)]));
    let canvas: HTMLCanvasElement | null = null;
    made = {
      range,
      get canvas() {
        canvas ??= mapCanvas(doc, values, d.rows, d.cols, range.scale);
        return canvas;
      },
    };
    d.maps.set(method, made);
  }
  return made;
}

/**
 * A score method's map for a small multiple `side` CSS px wide: upsampled to
 * about that many device pixels, not to the main map's 256 values a side. A
 * first render draws every method's small multiple; colouring each at the
 * main map's size was most of its pixel work.
 */
export function smallMapOf(doc: Document, d: Data, method: string, side: number): HTMLCanvasElement | null {
  const made = scoreMapOf(doc, d, method);
  if (!made) return null;
  if (!made.small) {
    const ratio = Math.min(2, Math.max(1, doc.defaultView?.devicePixelRatio ?? 1));
    made.small = mapCanvas(doc, scoresOf(d, method)!, d.rows, d.cols, made.range.scale, Math.round(side * ratio));
  }
  return made.small;
}
