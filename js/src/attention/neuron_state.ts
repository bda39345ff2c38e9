/**
 * NeuronView's data, pure (testable in node): one layer's decoded arrays and
 * what the page draws for one head and one query token.
 */
import { asBytes, decodeFloat32 } from "../core/buffers";
import type { Binary } from "../core/types";
import type { NeuronTraits } from "./neuron_types";

/** One layer's arrays, decoded. */
export interface LayerData {
  layer: number;
  heads: number;
  n: number;
  d: number;
  q: Float32Array;
  k: Float32Array;
  /** The rotated q/k (the same arrays as q/k when the model has no rotary embeddings). */
  qRotated: Float32Array;
  kRotated: Float32Array;
  scores: Float32Array;
  weights: Float32Array;
  rotary: boolean;
  causal: boolean;
}

/** What is drawn for one head and query token. */
export interface QueryRows {
  q: Float32Array;
  qRotated: Float32Array;
  /** n key vectors (before and after rotation). */
  keys: Float32Array[];
  keysRotated: Float32Array[];
  /** n element-wise products q_rotated ∘ k_rotated,j. */
  products: Float32Array[];
  scores: Float32Array;
  weights: Float32Array;
  /** n flags: true where the query may attend to the key. */
  allowed: boolean[];
}

function hasBytes(value: Binary | null | undefined): value is Binary {
  return value !== null && value !== undefined && asBytes(value).byteLength > 0;
}

function floats(value: Binary | null | undefined, size: number, name: string): Float32Array {
  if (!hasBytes(value)) throw new RangeError(`${name}: no data`);
  const out = decodeFloat32(value, name);
  if (out.length !== size) throw new RangeError(`${name}: ${out.length} values, ${size} expected`);
  return out;
}

/** Decode the layer the traits hold; throws on a size that does not fit the shape. */
export function readLayer(t: Pick<NeuronTraits, "shape" | "q" | "k" | "q_rotated" | "k_rotated" | "scores" | "weights" | "rotary" | "causal" | "data_layer">): LayerData {
  const [heads, n, d] = t.shape as [number, number, number];
  const q = floats(t.q, heads * n * d, "q");
  const k = floats(t.k, heads * n * d, "k");
  const qRotated = t.rotary ? floats(t.q_rotated, heads * n * d, "q_rotated") : q;
  const kRotated = t.rotary ? floats(t.k_rotated, heads * n * d, "k_rotated") : k;
  return {
    layer: t.data_layer, heads, n, d, q, k, qRotated, kRotated,
    scores: floats(t.scores, heads * n * n, "scores"),
    weights: floats(t.weights, heads * n * n, "weights"),
    rotary: t.rotary, causal: t.causal,
  };
}

/** Element-wise product of two vectors. */
export function product(a: ArrayLike<number>, b: ArrayLike<number>): Float32Array {
  if (a.length !== b.length) throw new RangeError(`product: lengths ${a.length} and ${b.length}`);
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = (a[i] as number) * (b[i] as number);
  return out;
}

/** Sum of a vector (float64 accumulation): q·k = Σ (q ∘ k). */
export function sum(values: ArrayLike<number>): number {
  let total = 0;
  for (let i = 0; i < values.length; i++) total += values[i] as number;
  return total;
}

/** The rows drawn for `head` and query `token`. */
export function queryRows(data: LayerData, head: number, token: number): QueryRows {
  const { n, d } = data;
  if (!(head >= 0 && head < data.heads)) throw new RangeError(`head ${head} out of range 0..${data.heads - 1}`);
  if (!(token >= 0 && token < n)) throw new RangeError(`token ${token} out of range 0..${n - 1}`);
  const vec = (a: Float32Array, j: number): Float32Array => a.subarray((head * n + j) * d, (head * n + j + 1) * d);
  const qRotated = vec(data.qRotated, token);
  const keys: Float32Array[] = [];
  const keysRotated: Float32Array[] = [];
  const products: Float32Array[] = [];
  const allowed: boolean[] = [];
  for (let j = 0; j < n; j++) {
    keys.push(vec(data.k, j));
    keysRotated.push(vec(data.kRotated, j));
    products.push(product(qRotated, vec(data.kRotated, j)));
    allowed.push(!data.causal || j <= token);
  }
  const row = (a: Float32Array): Float32Array => a.subarray((head * n + token) * n, (head * n + token + 1) * n);
  return { q: vec(data.q, token), qRotated, keys, keysRotated, products, scores: row(data.scores), weights: row(data.weights), allowed };
}

/** Largest |value| over several vectors (0 when all are zero): one colour range for them. */
export function maxAbs(vectors: readonly ArrayLike<number>[]): number {
  let max = 0;
  for (const v of vectors) {
    for (let i = 0; i < v.length; i++) {
      const a = Math.abs(v[i] as number);
      if (Number.isFinite(a) && a > max) max = a;
    }
  }
  return max;
}

/** The line shown while the layer picked is not the one the arrays hold. */
export function waitingText(layer: number, dataLayer: number): string {
  return `Layer ${layer}: waiting for its vectors from the kernel (this page holds layer ${dataLayer}; a saved page keeps only the layer it was saved with).`;
}

/** Pixel width of one vector entry: vectors stay about 200 px wide, 2..10 px a cell. */
export function cellWidth(d: number): number {
  return Math.max(2, Math.min(10, Math.floor(200 / Math.max(1, d))));
}
