/** Decode binary traits (see types.ts) into typed arrays. */
import type { Binary } from "./types";

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

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
 * Float32 values (little-endian) of a binary trait.
 *
 * No copy when the bytes are 4-byte aligned on a little-endian machine (the
 * usual case); otherwise the values are copied.
 */
export function decodeFloat32(value: Binary, name = "buffer"): Float32Array {
  const bytes = asBytes(value);
  if (bytes.byteLength % 4 !== 0) {
    throw new RangeError(
      `${name}: ${bytes.byteLength} bytes is not a whole number of float32 values`,
    );
  }
  const length = bytes.byteLength / 4;
  if (LITTLE_ENDIAN) {
    if (bytes.byteOffset % 4 === 0) {
      return new Float32Array(bytes.buffer, bytes.byteOffset, length);
    }
    return new Float32Array(bytes.slice().buffer);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

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
    throw new RangeError(
      `${name}: ${data.length} float32 values do not fill shape [${rows}, ${cols}] (${rows * cols} expected)`,
    );
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
