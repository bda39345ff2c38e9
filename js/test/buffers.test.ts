import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { asBytes, decodeFloat32, decodeMatrix } from "../src/buffers";

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
