import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { cellColor } from "../../src/attention/neuron_draw";
import { cellWidth, maxAbs, product, queryRows, readLayer, sum, waitingText } from "../../src/attention/neuron_state";

const bytes = (values: number[]): Uint8Array => new Uint8Array(Float32Array.from(values).buffer);

/** H = 2 heads, n = 3 tokens, d = 2: q[h, i] = [h + i, 1], k[h, j] = [1, j - h]. */
function traits(rotary: boolean, causal: boolean) {
  const H = 2, n = 3, d = 2;
  const q: number[] = [], k: number[] = [], scores: number[] = [], weights: number[] = [];
  for (let h = 0; h < H; h++) for (let i = 0; i < n; i++) q.push(h + i, 1);
  for (let h = 0; h < H; h++) for (let j = 0; j < n; j++) k.push(1, j - h);
  for (let h = 0; h < H; h++) for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
    scores.push(100 * h + 10 * i + j);
    weights.push(j / 10);
  }
  const negate = (a: number[]): number[] => a.map((x) => -x);
  return {
    shape: [H, n, d], data_layer: 4, rotary, causal,
    q: bytes(q), k: bytes(k), q_rotated: rotary ? bytes(negate(q)) : new Uint8Array(0),
    k_rotated: rotary ? bytes(k.map((x) => 2 * x)) : new Uint8Array(0),
    scores: bytes(scores), weights: bytes(weights),
  };
}

describe("neuron state: one layer's arrays and one head's rows", () => {
  test("without rotary the rotated arrays are q and k themselves", () => {
    const data = readLayer(traits(false, false));
    assert.equal(data.layer, 4);
    assert.equal(data.qRotated, data.q);
    const rows = queryRows(data, 1, 2);
    assert.deepEqual(Array.from(rows.q), [3, 1]);
    assert.deepEqual(rows.keys.map((k) => Array.from(k)), [[1, -1], [1, 0], [1, 1]]);
    assert.deepEqual(rows.products.map((p) => Array.from(p)), [[3, -1], [3, 0], [3, 1]]);
    assert.deepEqual(Array.from(rows.scores), [120, 121, 122]);
    assert.deepEqual(Array.from(rows.weights).map((w) => Math.round(w * 10)), [0, 1, 2]);
    assert.deepEqual(rows.allowed, [true, true, true]);
  });

  test("rotary: products are of the rotated vectors; causal masks later keys", () => {
    const data = readLayer(traits(true, true));
    const rows = queryRows(data, 0, 1);
    assert.deepEqual(Array.from(rows.q), [1, 1]);
    assert.deepEqual(Array.from(rows.qRotated), [-1, -1]);
    assert.deepEqual(Array.from(rows.keysRotated[2]!), [2, 4]);
    assert.deepEqual(Array.from(rows.products[2]!), [-2, -4]);
    assert.equal(sum(rows.products[2]!), -6);
    assert.deepEqual(rows.allowed, [true, true, false]);
  });

  test("wrong sizes, missing rotated arrays and bad indices are refused", () => {
    assert.throws(() => readLayer({ ...traits(false, false), shape: [2, 3, 3] }), /q: 12 values, 18 expected/);
    assert.throws(() => readLayer({ ...traits(false, false), rotary: true }), /q_rotated: no data/);
    const data = readLayer(traits(false, false));
    assert.throws(() => queryRows(data, 2, 0), /head 2 out of range/);
    assert.throws(() => queryRows(data, 0, 3), /token 3 out of range/);
  });
});

describe("neuron helpers", () => {
  test("product, sum, maxAbs", () => {
    assert.deepEqual(Array.from(product([1, -2, 3], [2, 2, -1])), [2, -4, -3]);
    assert.throws(() => product([1], [1, 2]), /lengths/);
    assert.equal(sum([0.5, 0.25, -1]), -0.25);
    assert.equal(maxAbs([[1, -5], [3, Number.NaN]]), 5);
    assert.equal(maxAbs([[0, 0]]), 0);
  });

  test("cell widths keep vectors about 200 px, 2..10 px a cell", () => {
    assert.equal(cellWidth(8), 10);
    assert.equal(cellWidth(64), 3);
    assert.equal(cellWidth(128), 2);
    assert.equal(cellWidth(0), 10);
  });

  test("colours: 0 is the middle of the diverging map, ends are clamped", () => {
    assert.equal(cellColor(0, 2), cellColor(0, 0));
    assert.equal(cellColor(5, 2), cellColor(2, 2));
    assert.notEqual(cellColor(-2, 2), cellColor(2, 2));
    assert.equal(cellColor(Number.NaN, 1), "rgb(160, 160, 160)");
  });

  test("the waiting line names both layers", () => {
    assert.match(waitingText(0, 3), /Layer 0: .*holds layer 3/);
  });
});
