import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { axisRange, cellOrder, cellText, decodeEvaluation, directionText, toX, valueAt } from "../../src/evaluate/evaluation_data";

/** 3 examples × 2 methods × 2 metrics; metric 0 higher-is-better, metric 1 lower. */
function data() {
  const values = new Float32Array([
    // example 0: (m0,k0) (m0,k1) (m1,k0) (m1,k1)
    0.5, 10, 0.2, 30,
    // example 1
    Number.NaN, 20, 0.9, 10,
    // example 2
    0.1, 20, 0.2, 20,
  ]);
  const summary = new Float32Array([0.3, 0.1, 0.5, 2, 16, 10, 20, 3, 0.43, 0.2, 0.9, 3, 20, 10, 30, 3]);
  return decodeEvaluation({
    methods: ["m0", "m1"],
    metrics: ["k0", "k1"],
    higher_is_better: [true, false],
    summary: new DataView(summary.buffer),
    summary_shape: [2, 2, 4],
    example_ids: ["a", "b", "c"],
    example_texts: ["one", "two", "three"],
    values: new DataView(values.buffer),
    values_shape: [3, 2, 2],
  });
}

describe("decodeEvaluation", () => {
  test("reads cells and per-example values by (example, method, metric)", () => {
    const d = data();
    assert.deepEqual(d.cells[1]![0], { mean: Math.fround(0.43), low: Math.fround(0.2), high: Math.fround(0.9), count: 3 });
    assert.equal(valueAt(d, 1, 1, 0), Math.fround(0.9));
    assert.equal(valueAt(d, 2, 0, 1), 20);
    assert.ok(Number.isNaN(valueAt(d, 1, 0, 0)));
  });

  test("refuses shapes that do not match the names", () => {
    assert.throws(() => decodeEvaluation({ ...rawTraits(), summary_shape: [2, 2, 3] }), /summary has shape/);
    assert.throws(() => decodeEvaluation({ ...rawTraits(), values_shape: [2, 2, 2] }), /values has shape/);
  });
});

function rawTraits() {
  return {
    methods: ["m0", "m1"],
    metrics: ["k0", "k1"],
    higher_is_better: [true, false],
    summary: new DataView(new Float32Array(16).buffer),
    summary_shape: [2, 2, 4],
    example_ids: ["a", "b", "c"],
    example_texts: ["", "", ""],
    values: new DataView(new Float32Array(12).buffer),
    values_shape: [3, 2, 2],
  };
}

describe("cellOrder: a cell's examples, worst first", () => {
  test("higher is better: lowest first, NaN last; reversed: highest first, NaN still last", () => {
    const d = data();
    assert.deepEqual(cellOrder(d, 0, 0), [2, 0, 1]);
    assert.deepEqual(cellOrder(d, 0, 0, false), [0, 2, 1]);
  });

  test("lower is better: highest first; ties keep the data order", () => {
    const d = data();
    assert.deepEqual(cellOrder(d, 0, 1), [1, 2, 0]);
    assert.deepEqual(cellOrder(d, 1, 0), [0, 2, 1]); // 0.2, 0.2 (data order), 0.9
  });
});

describe("chart axis and texts", () => {
  test("the axis covers every interval, padded; a single value gets a range", () => {
    const [lo, hi] = axisRange([{ mean: 1, low: 0, high: 2, count: 1 }, { mean: 3, low: 2.5, high: 4, count: 1 }]);
    assert.ok(lo < 0 && hi > 4);
    assert.deepEqual(axisRange([{ mean: 0, low: 0, high: 0, count: 1 }]), [-1, 1]);
    assert.deepEqual(axisRange([{ mean: Number.NaN, low: Number.NaN, high: Number.NaN, count: 0 }]), [0, 1]);
    assert.equal(toX(5, 0, 10, 100), 50);
    assert.equal(toX(20, 0, 10, 100), 100);
  });

  test("cell text uses the views' number format", () => {
    assert.equal(cellText({ mean: 0.41894618, low: -0.5, high: 1234.5, count: 3 }), "0.419 [−0.5, 1,235]");
    assert.equal(directionText(false), "lower is better");
  });
});
