import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { asBytes, decodeArray, decodeFloat32, decodeFloats, decodeMatrix } from "../../src/core/buffers";

const values = [0, 1.5, -2.25, 3.4028234663852886e38, Number.NaN, 1e-45];

/** float32 little-endian bytes of `values`, at `offset` inside a larger buffer. */
function encode(xs: number[], offset = 0): DataView {
  const buffer = new ArrayBuffer(offset + xs.length * 4 + 3);
  const view = new DataView(buffer, offset, xs.length * 4);
  xs.forEach((x, i) => view.setFloat32(i * 4, x, true));
  return view;
}

function same(actual: Float32Array, expected: number[]): void {
  assert.equal(actual.length, expected.length);
  expected.forEach((x, i) => {
    if (Number.isNaN(x)) assert.ok(Number.isNaN(actual[i]));
    else assert.equal(actual[i], Math.fround(x));
  });
}

describe("decodeFloat32", () => {
  test("reads a DataView (what ipywidgets delivers)", () => {
    same(decodeFloat32(encode(values)), values);
  });

  test("reads a DataView at an unaligned offset (copies)", () => {
    same(decodeFloat32(encode(values, 1)), values);
    same(decodeFloat32(encode(values, 6)), values);
  });

  test("reads a plain ArrayBuffer", () => {
    const view = encode(values);
    const buffer = (view.buffer as ArrayBuffer).slice(view.byteOffset, view.byteOffset + view.byteLength);
    same(decodeFloat32(buffer), values);
  });

  test("reads a typed array over the bytes", () => {
    const view = encode(values, 4);
    same(decodeFloat32(new Uint8Array(view.buffer, view.byteOffset, view.byteLength)), values);
  });

  test("does not copy aligned data", () => {
    const view = encode(values, 8);
    const decoded = decodeFloat32(view);
    assert.equal(decoded.buffer, view.buffer);
  });

  test("empty input gives an empty array", () => {
    assert.equal(decodeFloat32(new ArrayBuffer(0)).length, 0);
  });

  test("rejects a byte length that is not a multiple of 4", () => {
    assert.throws(() => decodeFloat32(new ArrayBuffer(7), "scores"), /scores: 7 bytes/);
  });

  test("rejects non-binary values", () => {
    assert.throws(() => asBytes([1, 2, 3] as unknown as ArrayBuffer), /expected binary data/);
    assert.throws(() => asBytes(null as unknown as ArrayBuffer), /expected binary data/);
  });
});

describe("decodeMatrix", () => {
  test("rows are C-order slices", () => {
    const m = decodeMatrix(encode([1, 2, 3, 4, 5, 6]), [2, 3]);
    assert.equal(m.rows, 2);
    assert.equal(m.cols, 3);
    assert.deepEqual(Array.from(m.row(0)), [1, 2, 3]);
    assert.deepEqual(Array.from(m.row(1)), [4, 5, 6]);
    assert.throws(() => m.row(2), /row 2 out of range/);
  });

  test("null with an empty shape is an empty matrix", () => {
    assert.equal(decodeMatrix(null, [0, 5]).data.length, 0);
  });

  test("size must match the shape", () => {
    assert.throws(() => decodeMatrix(encode([1, 2, 3]), [2, 2]), /3 float32 values do not fill shape \[2, 2\]/);
  });

  test("shape must be two non-negative integers", () => {
    assert.throws(() => decodeMatrix(encode([1]), [1]), /shape must be two/);
    assert.throws(() => decodeMatrix(encode([1]), [1, -1]), /shape must be two/);
  });
});

describe("decodeArray: the one wire decoder", () => {
  test("uint32 and float32 by their meta, checked against the shape", () => {
    const values = new Uint32Array([1, 2, 3, 4]);
    assert.deepEqual(Array.from(decodeArray(values, { dtype: "uint32", shape: [2, 2] })), [1, 2, 3, 4]);
    assert.throws(() => decodeArray(values, { dtype: "uint32", shape: [3] }), /4 uint32 values do not fill shape \[3\]/);
    assert.throws(() => decodeArray(values, { dtype: "float64" as never, shape: [2] }), /unknown dtype "float64"/);
  });

  test("float16 is widened and multiplied back by its scale", () => {
    // 0x3c00 = 1.0, 0xc000 = -2.0 in float16.
    const bits = new Uint16Array([0x3c00, 0xc000]);
    assert.deepEqual(Array.from(decodeArray(bits, { dtype: "float16", shape: [2] })), [1, -2]);
    assert.deepEqual(Array.from(decodeArray(bits, { dtype: "float16", shape: [2], scale: 1024 })), [1024, -2048]);
    for (const scale of [0, -1, Number.POSITIVE_INFINITY, Number.NaN]) {
      assert.throws(() => decodeArray(bits, { dtype: "float16", shape: [2], scale }), /scale must be a positive finite number/);
    }
  });

  test("decodeFloats refuses integer buffers", () => {
    assert.throws(() => decodeFloats(new Uint32Array(1), { dtype: "uint32", shape: [1] }), /expected float values/);
  });
});
