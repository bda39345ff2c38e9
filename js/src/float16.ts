/**
 * IEEE half-precision (float16) decoding: the wire format of attention
 * weights (attnwidget/views/_attention.py). Values stay as their 16-bit
 * patterns (half the memory of float32) and are widened through a 65536-entry
 * lookup table when a head is drawn.
 */
import { asBytes } from "./buffers";
import type { Binary } from "./types";

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

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

/** Widen float16 bit patterns to float32 values. */
export function widen(bits: Uint16Array, out: Float32Array = new Float32Array(bits.length)): Float32Array {
  const t = halfTable();
  for (let i = 0; i < bits.length; i++) out[i] = t[bits[i] as number] as number;
  return out;
}
