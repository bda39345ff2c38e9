import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { cellClasses, cellColor, clickSelection, NONE, readAlignment, spotOf } from "../../src/annotate/alignment_state";

const bytes = (values: number[]): Uint8Array => new Uint8Array(Float32Array.from(values).buffer);

describe("alignment state", () => {
  test("reads the matrix with its tokens, rows are output steps", () => {
    const data = readAlignment({
      alignment: bytes([0.1, 0.9, 0.8, 0.2, 0.5, 0.5]),
      shape: [3, 2],
      input_tokens: ["a", "b"],
      output_tokens: ["b", "a", "</s>"],
    });
    assert.equal(data.matrix.rows, 3);
    assert.equal(data.matrix.cols, 2);
    assert.deepEqual(Array.from(data.matrix.row(1)).map((v) => Math.round(v * 10)), [8, 2]);
  });

  test("a shape that does not match the tokens is refused", () => {
    assert.throws(
      () => readAlignment({ alignment: bytes([1, 0]), shape: [1, 2], input_tokens: ["a"], output_tokens: ["a"] }),
      /does not match 1 output and 1 input tokens/,
    );
    assert.throws(
      () => readAlignment({ alignment: bytes([1, 0, 0]), shape: [1, 2], input_tokens: ["a", "b"], output_tokens: ["a"] }),
      /do not fill shape/,
    );
  });

  test("cells, output tokens and input tokens point at a row, a column or both", () => {
    assert.deepEqual(spotOf({ row: "2", col: "1" }), { row: 2, col: 1 });
    assert.deepEqual(spotOf({ row: "0" }), { row: 0, col: -1 });
    assert.deepEqual(spotOf({ col: "3" }), { row: -1, col: 3 });
    assert.equal(spotOf({}), null);
    assert.equal(spotOf({ row: "x" }), null);
    assert.deepEqual(clickSelection({ row: 2, col: -1 }), { selected_output: 2, selected_input: -1 });
  });

  test("hover and selection light the row and the column both ways", () => {
    assert.deepEqual(cellClasses(1, 0, { row: 1, col: -1 }, NONE), ["attnw-align-hover"]);
    assert.deepEqual(cellClasses(0, 2, { row: -1, col: 2 }, NONE), ["attnw-align-hover"]);
    assert.deepEqual(cellClasses(0, 0, { row: 1, col: 1 }, NONE), []);
    assert.deepEqual(cellClasses(1, 1, NONE, { row: 1, col: 1 }), ["attnw-align-lit", "attnw-align-selected"]);
    assert.deepEqual(cellClasses(1, 0, NONE, { row: 1, col: 1 }), ["attnw-align-lit"]);
  });

  test("weights are coloured on viridis with readable text", () => {
    assert.equal(cellColor(0).text, "#fff");
    assert.equal(cellColor(1).text, "#000");
    assert.equal(cellColor(Number.NaN).fill, cellColor(0).fill);
    assert.equal(cellColor(2).fill, cellColor(1).fill);
  });
});
