/**
 * The one decoder of arrays on the wire (Python: attnwidget/views/core/buffers.py,
 * the one encoder). Arrays never travel as JSON lists: each is a binary
 * buffer of little-endian, C-order values described by a WireMeta (dtype,
 * shape and, for rescaled float16, a scale). Front ends hand a buffer over as
 * a DataView (ipywidgets 8), an ArrayBuffer or a typed array; every decoder
 * here accepts all three.
 *
 * float16 stays as 16-bit patterns where memory matters (HeadView/ModelView
 * keep attention that way and widen a head through a lookup table when it is
 * drawn); `decodeArray` widens at once.
 */
import type { Binary } from "./types";

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The element types Python sends (numpy "<f4", "<f2", "<u4"). */
export type WireDtype = "float32" | "float16" | "uint32";

/**
 * How a buffer is laid out, as Python's `encode_array` describes it.
 * `scale` (float16 only, absent = 1): the sender divided the values by it to
 * fit float16's range; the decoder multiplies back.
 */
export interface WireMeta {
  dtype: WireDtype;
  shape: readonly number[];
  scale?: number;
}

/** A byte view over any binary trait value, without copying. */
export function asBytes(value: Binary): Uint8Array {
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) {
    return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  // Some front ends hand over an ArrayBuffer from another realm (iframe),
  // which fails `instanceof`; accept anything shaped like one.
  const maybe = value as unknown as { byteLength?: unknown };
  if (maybe && typeof maybe.byteLength === "number") {
    return new Uint8Array(value as unknown as ArrayBuffer);
  }
  throw new TypeError(`expected binary data (DataView or ArrayBuffer), got ${describe(value)}`);
}

/**
 * Decode one described buffer: float32 and float16 (widened, times `scale`)
 * as a Float32Array, uint32 as a Uint32Array. Throws when the bytes do not
 * fill the shape, or the dtype or scale is unknown or unusable.
 */
export function decodeArray(value: Binary, meta: WireMeta, name = "buffer"): Float32Array | Uint32Array {
  const expected = sizeOf(meta.shape, name);
  let out: Float32Array | Uint32Array;
  if (meta.dtype === "float32") out = decodeFloat32(value, name);
  else if (meta.dtype === "uint32") out = decodeUint32(value, name);
  else if (meta.dtype === "float16") out = widen(decodeFloat16Bits(value, name), undefined, scaleOf(meta, name));
  else throw new TypeError(`${name}: unknown dtype ${JSON.stringify((meta as { dtype: unknown }).dtype)}`);
  if (out.length !== expected) {
    throw new RangeError(`${name}: ${out.length} ${meta.dtype} values do not fill shape [${meta.shape.join(", ")}] (${expected} expected)`);
  }
  return out;
}

/** `decodeArray` for buffers that must be floats. */
export function decodeFloats(value: Binary, meta: WireMeta, name = "buffer"): Float32Array {
  if (meta.dtype === "uint32") throw new TypeError(`${name}: expected float values, got uint32`);
  return decodeArray(value, meta, name) as Float32Array;
}

function sizeOf(shape: readonly number[], name: string): number {
  if (!shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new RangeError(`${name}: shape must be non-negative integers, got [${shape.join(", ")}]`);
  }
  return shape.reduce((a, b) => a * b, 1);
}

function scaleOf(meta: WireMeta, name: string): number {
  const scale = meta.scale ?? 1;
  // A zero, negative or non-finite scale would silently turn every value into 0 or inf.
  if (!(typeof scale === "number" && Number.isFinite(scale) && scale > 0)) {
    throw new RangeError(`${name}: float16 scale must be a positive finite number, got ${JSON.stringify(meta.scale)}`);
  }
  return scale;
}

/**
 * Float32 values (little-endian) of a binary value.
 *
 * No copy when the bytes are 4-byte aligned on a little-endian machine (the
 * usual case); otherwise the values are copied.
 */
export function decodeFloat32(value: Binary, name = "buffer"): Float32Array {
  const bytes = asBytes(value);
  if (bytes.byteLength % 4 !== 0) {
    throw new RangeError(`${name}: ${bytes.byteLength} bytes is not a whole number of float32 values`);
  }
  const length = bytes.byteLength / 4;
  if (LITTLE_ENDIAN) {
    if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, length);
    return new Float32Array(bytes.slice().buffer);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/** Little-endian uint32 values of a binary value (a copy). */
export function decodeUint32(value: Binary, name = "buffer"): Uint32Array {
  const bytes = asBytes(value);
  if (bytes.byteLength % 4 !== 0) throw new RangeError(`${name}: ${bytes.byteLength} bytes is not a whole number of uint32 values`);
  const length = bytes.byteLength / 4;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint32Array(length);
  for (let i = 0; i < length; i++) out[i] = view.getUint32(i * 4, true);
  return out;
}

// -- float16 ------------------------------------------------------------------

/** The float value of one float16 bit pattern (0..65535). */
export function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24; // zero and subnormals
  if (exponent === 0x1f) return fraction ? Number.NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

let table: Float32Array | null = null;

/** float32 value of every float16 bit pattern (built on first use, 256 KiB). */
export function halfTable(): Float32Array {
  if (!table) {
    table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) table[i] = halfToFloat(i);
  }
  return table;
}

/**
 * The 16-bit patterns of a little-endian float16 buffer (a copy, so it is
 * aligned and owns its memory; the message buffer can then be released).
 */
export function decodeFloat16Bits(value: Binary | Uint8Array, name = "buffer"): Uint16Array {
  const bytes = value instanceof Uint8Array ? value : asBytes(value);
  if (bytes.byteLength % 2 !== 0) {
    throw new RangeError(`${name}: ${bytes.byteLength} bytes is not a whole number of float16 values`);
  }
  const length = bytes.byteLength / 2;
  if (LITTLE_ENDIAN) return new Uint16Array(bytes.slice().buffer, 0, length);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint16Array(length);
  for (let i = 0; i < length; i++) out[i] = view.getUint16(i * 2, true);
  return out;
}

/** Widen float16 bit patterns to float32 values, times `scale` (see WireMeta). */
export function widen(bits: Uint16Array, out: Float32Array = new Float32Array(bits.length), scale = 1): Float32Array {
  const t = halfTable();
  if (scale === 1) for (let i = 0; i < bits.length; i++) out[i] = t[bits[i] as number] as number;
  else for (let i = 0; i < bits.length; i++) out[i] = (t[bits[i] as number] as number) * scale;
  return out;
}

// -- matrices -------------------------------------------------------------------

/** A row-major (C order) float32 matrix. */
export interface Matrix {
  rows: number;
  cols: number;
  data: Float32Array;
  /** Row i as a view (no copy). */
  row(i: number): Float32Array;
}

/** Decode a float32 matrix and check it against its declared shape. */
export function decodeMatrix(value: Binary | null | undefined, shape: readonly number[], name = "scores"): Matrix {
  if (shape.length !== 2 || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new RangeError(`${name}: shape must be two non-negative integers, got [${shape.join(", ")}]`);
  }
  const [rows, cols] = shape as [number, number];
  const data = value == null ? new Float32Array(0) : decodeFloat32(value, name);
  if (data.length !== rows * cols) {
    throw new RangeError(`${name}: ${data.length} float32 values do not fill shape [${rows}, ${cols}] (${rows * cols} expected)`);
  }
  return {
    rows,
    cols,
    data,
    row: (i: number) => {
      if (!(i >= 0 && i < rows)) throw new RangeError(`${name}: row ${i} out of range [0, ${rows})`);
      return data.subarray(i * cols, (i + 1) * cols);
    },
  };
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return (value as object).constructor?.name ?? "object";
}
