/**
 * AttentionCalculator's data in the page, free of DOM use (node tests it):
 * decoding and encoding WireArrays, the inputs and steps read from the
 * model, and the edits a learner makes (a new array with one cell changed).
 */
import { asBytes } from "../core/buffers";
import type { Binary } from "../core/types";
import type { ArrayName, CalculatorTraits, StepsInfo, WireArray } from "./calculator_types";

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A float64 array with its shape (1-D arrays have one axis). */
export interface Mat {
  shape: number[];
  data: Float64Array;
}

/** Rows and columns of a 1-D (one row) or 2-D array; null for other shapes. */
export function dims(mat: Mat | null): [number, number] | null {
  if (!mat) return null;
  if (mat.shape.length === 1) return [1, mat.shape[0] as number];
  if (mat.shape.length === 2) return [mat.shape[0] as number, mat.shape[1] as number];
  return null;
}

/** Entry (i, j) of a 2-D array, or entry j of a 1-D one (i ignored). */
export function at(mat: Mat, i: number, j: number): number {
  const cols = mat.shape.length === 1 ? (mat.shape[0] as number) : (mat.shape[1] as number);
  return mat.data[(mat.shape.length === 1 ? 0 : i) * cols + j] as number;
}

/** Row i of a 2-D array (a view). */
export function rowOf(mat: Mat, i: number): Float64Array {
  const cols = mat.shape[1] as number;
  return mat.data.subarray(i * cols, (i + 1) * cols);
}

/** Decode a WireArray (null stays null); throws on a malformed one. */
export function decodeWire(value: WireArray | null | undefined, name = "array"): Mat | null {
  if (value == null) return null;
  if (value.dtype !== "float64") throw new TypeError(`${name}: expected float64, got ${JSON.stringify(value.dtype)}`);
  const shape = value.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new RangeError(`${name}: bad shape ${JSON.stringify(shape)}`);
  }
  const size = shape.reduce((a, b) => a * b, 1);
  const bytes = asBytes(value.data as Binary);
  if (bytes.byteLength !== size * 8) throw new RangeError(`${name}: ${bytes.byteLength} bytes do not fill float64 shape [${shape.join(", ")}]`);
  let data: Float64Array;
  if (LITTLE_ENDIAN && bytes.byteOffset % 8 === 0) data = new Float64Array(bytes.buffer, bytes.byteOffset, size).slice();
  else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    data = new Float64Array(size);
    for (let i = 0; i < size; i++) data[i] = view.getFloat64(i * 8, true);
  }
  return { shape: [...shape], data };
}

/** A WireArray of a Mat (a fresh buffer). */
export function encodeWire(mat: Mat): WireArray {
  const out = new DataView(new ArrayBuffer(mat.data.length * 8));
  for (let i = 0; i < mat.data.length; i++) out.setFloat64(i * 8, mat.data[i] as number, true);
  return { dtype: "float64", shape: [...mat.shape], data: out };
}

/** A copy of `mat` with flat entry `index` set to `value` (NaN kept: Python explains it). */
export function withEntry(mat: Mat, index: number, value: number): Mat {
  if (!(index >= 0 && index < mat.data.length)) throw new RangeError(`entry ${index} is outside [0, ${mat.data.length})`);
  const data = mat.data.slice();
  data[index] = value;
  return { shape: [...mat.shape], data };
}

/** The number a learner typed: NaN for anything that is not one (Python then says so). */
export function parseNumber(text: string): number {
  const t = text.trim().replace(/\u2212/g, "-");
  if (t === "" || !/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) return Number.NaN;
  return Number(t);
}

/** How a value sits in a number input: plain digits ("-0.5", "1.235"), ≤ 4 significant. */
export function inputText(value: number): string {
  if (!Number.isFinite(value)) return "";
  return String(Number(value.toPrecision(4)));
}

/** The inputs the page reads from the model. */
export interface Inputs {
  arrays: Record<ArrayName, Mat | null>;
  queryTokens: string[];
  keyTokens: string[];
  scoreKind: string;
  maskKind: string;
  beta: number;
  temperature: number;
  window: number;
  lengths: number | null;
}

export const ARRAY_NAMES: readonly ArrayName[] = ["q", "k", "v", "W", "W1", "W2", "v_a", "W_p", "v_p"];

interface Getter {
  get<K extends keyof CalculatorTraits>(key: K): CalculatorTraits[K];
}

export function readInputs(model: Getter): Inputs {
  const arrays = {} as Record<ArrayName, Mat | null>;
  for (const name of ARRAY_NAMES) arrays[name] = decodeWire(model.get(name), name);
  return {
    arrays,
    queryTokens: (model.get("query_tokens") ?? []).map(String),
    keyTokens: (model.get("key_tokens") ?? []).map(String),
    scoreKind: model.get("score_kind"),
    maskKind: model.get("mask_kind"),
    beta: model.get("beta"),
    temperature: model.get("temperature"),
    window: model.get("window"),
    lengths: model.get("lengths") ?? null,
  };
}

/** The last good steps, as Python sent them. */
export interface Steps {
  scores: Mat;
  masked: Mat;
  weights: Mat;
  gaussian: Mat | null;
  local: Mat | null;
  positions: Mat | null;
  output: Mat;
  info: StepsInfo;
}

export function readSteps(model: Getter): Steps | null {
  const scores = decodeWire(model.get("scores"), "scores");
  const masked = decodeWire(model.get("masked_scores"), "masked_scores");
  const weights = decodeWire(model.get("weights"), "weights");
  const output = decodeWire(model.get("output"), "output");
  const info = model.get("steps_info");
  if (!scores || !masked || !weights || !output || !info || typeof info.version !== "number") return null;
  return {
    scores,
    masked,
    weights,
    gaussian: decodeWire(model.get("gaussian"), "gaussian"),
    local: decodeWire(model.get("local_weights"), "local_weights"),
    positions: decodeWire(model.get("positions"), "positions"),
    output,
    info,
  };
}

/** Row labels: "0 the", "1 cat" … (names missing from the list get the index only). */
export function labels(tokens: readonly string[], count: number): string[] {
  return Array.from({ length: count }, (_, i) => (i < tokens.length ? `${i} ${tokens[i]}` : String(i)));
}
