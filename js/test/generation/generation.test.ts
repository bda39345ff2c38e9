import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { LEVELS } from "../../src/flow/flow_lines";
import { cellColor, clickStep, flowLines, gridOf, methodIndex, readGeneration, rowScale, stepOf } from "../../src/generation/generation_state";

const bytes = (values: number[]): Uint8Array => new Uint8Array(Float32Array.from(values).buffer);
const N = Number.NaN;

// Two methods, three steps, four columns: prompt "Ġthe Ġca" + "b" (one word with "Ġca"), then "Ġis".
const traits = {
  scores: bytes([
    0.5, 0.5, N, N, /**/ 0.2, 0.3, 0.5, N, /**/ 0.1, 0.1, 0.2, 0.6,
    -1, 2, N, N, /**/ 1, -3, 1, N, /**/ 0, 0, 0, 4,
  ]),
  shape: [2, 3, 4],
  methods: ["raw", "input_x_gradient"],
  signed: [false, true],
  columns: ["the", "ca", "b", "is"],
  generated_tokens: ["b", "is", "."],
  prompt_length: 2,
  prefix_lengths: [2, 3, 4],
  words: [0, 1, 1, 2],
  word_labels: ["the", "cab", "is"],
};

describe("generation state", () => {
  test("reads the (methods, steps, columns) scores and refuses a shape that does not fit", () => {
    const data = readGeneration(traits);
    assert.equal(data.steps, 3);
    assert.equal(data.cols, 4);
    assert.equal(methodIndex(data, "input_x_gradient"), 1);
    assert.equal(methodIndex(data, "unknown"), 0);
    assert.throws(() => readGeneration({ ...traits, shape: [2, 3, 5] }), /do not fill shape/);
    assert.throws(() => readGeneration({ ...traits, columns: ["a"] }), /does not match/);
  });

  test("a method's grid keeps NaN for the future; words sum their subwords' finite scores", () => {
    const data = readGeneration(traits);
    const tokens = gridOf(data, 1, "tokens");
    assert.deepEqual(Array.from(tokens.rows[1] as Float32Array).slice(0, 3), [1, -3, 1]);
    assert.ok(Number.isNaN((tokens.rows[0] as Float32Array)[2] as number));
    assert.deepEqual(tokens.prompt, [true, true, false, false]);
    const words = gridOf(data, 0, "words");
    assert.deepEqual(words.labels, ["the", "cab", "is"]);
    assert.deepEqual(words.prompt, [true, true, false]);
    const round = (row: Float32Array) => Array.from(row).map((v) => (Number.isNaN(v) ? "nan" : Math.round(v * 10) / 10));
    assert.deepEqual(round(words.rows[0] as Float32Array), [0.5, 0.5, "nan"]);
    assert.deepEqual(round(words.rows[1] as Float32Array), [0.2, 0.8, "nan"]);
    assert.deepEqual(round(words.rows[2] as Float32Array), [0.1, 0.3, 0.6]);
  });

  test("rows have their own scale, unseen cells no colour; signed rows diverge", () => {
    const grid = gridOf(readGeneration(traits), 1, "tokens");
    const scale = rowScale(grid, 1);
    assert.equal(scale.max, 3);
    assert.equal(scale.signed, true);
    assert.equal(cellColor(Number.NaN, scale), null);
    assert.notEqual(cellColor(-3, scale)?.fill, cellColor(1, scale)?.fill);
  });

  test("flow lines: width and opacity grow with |score| / max, negatives marked, tiny shares dropped", () => {
    const lines = flowLines([0.5, -1, 0.001, Number.NaN]);
    assert.deepEqual(lines.map((l) => l.index), [0, 1]);
    assert.equal(lines[1]?.negative, true);
    assert.ok((lines[1]?.width ?? 0) > (lines[0]?.width ?? 0));
    assert.ok((lines[1]?.alpha ?? 0) > (lines[0]?.alpha ?? 0));
    assert.deepEqual(flowLines([0, 0]), []);
    assert.equal(LEVELS > 1, true);
  });

  test("clicks: a step selects it, the selected one clears", () => {
    assert.equal(stepOf({ step: "2" }), 2);
    assert.equal(stepOf({ col: "1" }), null);
    assert.equal(stepOf({ step: "x" }), null);
    assert.equal(clickStep(2, -1), 2);
    assert.equal(clickStep(2, 2), -1);
  });
});
