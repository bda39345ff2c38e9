import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { decodeWire, encodeWire, inputText, labels, parseNumber, withEntry, type Inputs, type Mat, type Steps } from "../../src/teach/calculator_state";
import { cellArithmetic, maskReason, sumOfProducts } from "../../src/teach/calculator_text";
import { KIND_PARAMS, MASK_KINDS, SCORE_KINDS } from "../../src/teach/calculator_types";

const mat = (rows: number[][]): Mat => ({ shape: [rows.length, rows[0]!.length], data: Float64Array.from(rows.flat()) });
const vec = (values: number[]): Mat => ({ shape: [values.length], data: Float64Array.from(values) });

describe("WireArray: float64 bytes + shape", () => {
  test("encode then decode gives the same values, -inf and NaN included", () => {
    const original = mat([[1.25, -Infinity], [Number.NaN, 1e-300]]);
    const wire = encodeWire(original);
    assert.equal(wire.dtype, "float64");
    assert.deepEqual(wire.shape, [2, 2]);
    const back = decodeWire(wire)!;
    assert.deepEqual(back.shape, [2, 2]);
    assert.deepEqual(Array.from(back.data), [1.25, -Infinity, Number.NaN, 1e-300]);
  });

  test("unaligned bytes, ArrayBuffer and DataView all decode", () => {
    const bytes = new Uint8Array(8 * 3 + 1);
    const view = new DataView(bytes.buffer, 1, 24);
    [0.5, -2, 3].forEach((v, i) => view.setFloat64(i * 8, v, true));
    assert.deepEqual(Array.from(decodeWire({ dtype: "float64", shape: [3], data: view })!.data), [0.5, -2, 3]);
    const copy = bytes.slice(1).buffer;
    assert.deepEqual(Array.from(decodeWire({ dtype: "float64", shape: [1, 3], data: copy })!.data), [0.5, -2, 3]);
  });

  test("bytes that do not fill the shape, or another dtype, are refused", () => {
    const data = new DataView(new ArrayBuffer(16));
    assert.throws(() => decodeWire({ dtype: "float64", shape: [3], data }), /do not fill/);
    assert.throws(() => decodeWire({ dtype: "float32" as "float64", shape: [4], data }), /float64/);
    assert.equal(decodeWire(null), null);
  });

  test("an edit is a copy with one entry changed", () => {
    const a = mat([[1, 2], [3, 4]]);
    const b = withEntry(a, 2, Number.NaN);
    assert.deepEqual(Array.from(a.data), [1, 2, 3, 4]);
    assert.ok(Number.isNaN(b.data[2]!));
    assert.throws(() => withEntry(a, 4, 0), RangeError);
  });
});

describe("what a learner types", () => {
  test("numbers parse, anything else is NaN (Python then explains it)", () => {
    assert.equal(parseNumber(" 0.5 "), 0.5);
    assert.equal(parseNumber("\u22121.5"), -1.5);
    assert.equal(parseNumber("2e-3"), 0.002);
    assert.equal(parseNumber(".5"), 0.5);
    for (const bad of ["", "-", "1e", "abc", "1,5", "NaN", "Infinity", "0x10"]) assert.ok(Number.isNaN(parseNumber(bad)), bad);
  });

  test("inputs show at most 4 significant digits in plain digits", () => {
    assert.equal(inputText(0.123456), "0.1235");
    assert.equal(inputText(-2), "-2");
    assert.equal(inputText(12345.6), "12350");
    assert.equal(inputText(Number.NaN), "");
  });

  test("row labels: index and token", () => {
    assert.deepEqual(labels(["the", "cat"], 3), ["0 the", "1 cat", "2"]);
  });
});

function inputs(overrides: Partial<Inputs["arrays"]> = {}, scoreKind = "dot", beta = 1): Inputs {
  return {
    arrays: {
      q: mat([[1, 0, 1], [0, 2, 0]]),
      k: mat([[1, 0, 0], [0, 1, 1], [0.5, -1, 2]]),
      v: mat([[1, 0], [0, 1], [2, 2]]),
      W: null,
      W1: null,
      W2: null,
      v_a: null,
      W_p: null,
      v_p: null,
      ...overrides,
    },
    queryTokens: ["a", "b"],
    keyTokens: ["x", "y", "z"],
    scoreKind,
    maskKind: "none",
    beta,
    temperature: 1,
    window: 1,
    lengths: null,
  };
}

function steps(info: Partial<Steps["info"]>, scores: number[][], masked = scores): Steps {
  const s = mat(scores);
  const m = mat(masked);
  const weights = mat(
    masked.map((row) => {
      const e = row.map((x) => Math.exp(x));
      const total = e.reduce((a, b) => a + b, 0);
      return e.map((x) => x / total);
    }),
  );
  return {
    scores: s,
    masked: m,
    weights,
    gaussian: null,
    local: null,
    positions: null,
    output: mat([[9, 9], [9, 9]]),
    info: { version: 1, score_kind: "dot", mask_kind: "none", temperature: 1, window: 1, lengths: null, sigma: null, d: 3, ...info },
  };
}

describe("a cell's arithmetic, written out", () => {
  test("dot: every product, then Python's value", () => {
    const lines = cellArithmetic("scores", inputs(), steps({}, [[1, 2, 2.5], [0, 2, -2]]), 0, 2);
    assert.deepEqual(lines, ["s[0,2] = q0·k2 = 1×0.5 + 0×(\u22121) + 1×2 = 2.5"]);
  });

  test("scaled dot shows the dot product and √d", () => {
    const lines = cellArithmetic("scores", inputs(), steps({ score_kind: "scaled_dot" }, [[0.5774, 1.155, 1.443], [0, 1.155, -1.155]]), 0, 1);
    assert.deepEqual(lines, ["s[0,1] = q0·k1 / √3 = (1×0 + 0×1 + 1×1) / 1.732", "= 1 / 1.732 = 1.155"]);
  });

  test("general: q·(W k)", () => {
    const W = mat([[2, 0, 0], [0, 1, 0], [0, 0, 1]]);
    const lines = cellArithmetic("scores", inputs({ W }), steps({ score_kind: "general" }, [[2, 1, 3], [0, 2, -2]]), 0, 0);
    assert.deepEqual(lines, ["s[0,0] = q0ᵀ W k0 = q0·(W k0)", "= 1×2 + 0×0 + 1×0 = 2"]);
  });

  test("additive: v_a · tanh(W1 q + W2 k)", () => {
    const I = mat([[1, 0, 0], [0, 1, 0], [0, 0, 1]]);
    const lines = cellArithmetic("scores", inputs({ W1: I, W2: I, v_a: vec([1, 1, -1]) }), steps({ score_kind: "additive" }, [[0.1, 0, 0], [0, 0, 0]]), 0, 0);
    assert.equal(lines[1], "= 1×tanh(2) + 1×tanh(0) + (\u22121)×tanh(1) = 0.1");
  });

  test("cosine: β, the dot product and both norms", () => {
    const lines = cellArithmetic("scores", inputs({}, "cosine", 2), steps({ score_kind: "cosine" }, [[1.414, 0, 0], [0, 0, 0]]), 0, 0);
    assert.deepEqual(lines, ["s[0,0] = β·(q0·k0) / (‖q0‖ ‖k0‖)", "= 2 × 1 / (1.414 × 1) = 1.414"]);
  });

  test("long vectors are cut after a few terms", () => {
    const a = Array.from({ length: 64 }, (_, i) => i);
    const text = sumOfProducts(a, a);
    assert.ok(text.endsWith("… (60 more terms)"), text);
  });

  test("masked cells say why, by the mask kind", () => {
    const data = steps({ mask_kind: "causal" }, [[1, 2, 3], [4, 5, 6]], [[1, 2, -Infinity], [4, 5, 6]]);
    assert.deepEqual(cellArithmetic("masked_scores", inputs(), data, 0, 2), ["s̃[0,2] = −∞", "key 2 comes after query 0 (position 1)"]);
    assert.equal(maskReason(data, 1, 2), "key 2 ≤ position 2: visible");
    assert.deepEqual(cellArithmetic("weights", inputs(), data, 0, 2), ["a[0,2] = 0: s̃[0,2] = −∞ and exp(−∞) = 0", "key 2 comes after query 0 (position 1)"]);
  });

  test("softmax: exp over the sum of exps, then Python's weight", () => {
    const data = steps({}, [[0, 0, Math.log(2)], [0, 0, 0]]);
    const lines = cellArithmetic("weights", inputs(), data, 0, 2);
    assert.deepEqual(lines, ["a[0,2] = exp(0.6931) / (exp(0) + exp(0) + exp(0.6931))", "= 2 / 4 = 0.5"]);
  });

  test("output: weights times a column of v", () => {
    const data = steps({}, [[0, 0, 0], [0, 0, 0]]);
    const lines = cellArithmetic("output", inputs(), data, 1, 0);
    assert.deepEqual(lines, ["o[1,0] = Σₖ a[1,k] v[k,0]", "= 0.3333×1 + 0.3333×0 + 0.3333×2 = 9"]);
  });
});

describe("kind lists match attnwidget.teach", () => {
  test("score and mask kinds, and what each reads", () => {
    assert.deepEqual(SCORE_KINDS.map(([k]) => k), ["dot", "scaled_dot", "general", "additive", "concat", "cosine", "location"]);
    assert.deepEqual(MASK_KINDS.map(([k]) => k), ["none", "causal", "padding", "local", "local-m", "local-p"]);
    assert.deepEqual(KIND_PARAMS.additive, ["W1", "W2", "v_a"]);
  });
});
