import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { binLabel, nearestLine, thumbText, tokenLabel, weightText } from "../src/attention_tooltip";

describe("nearestLine", () => {
  // Three lines from x=0 to x=100: flat at y=10, flat at y=30, rising 10 -> 90.
  const ya = [10, 30, 10];
  const yb = [10, 30, 90];
  const w = [0.2, 0.5, 0.9];
  const find = (x: number, y: number, tolerance?: number) =>
    nearestLine(x, y, 0, 100, 3, (k) => ya[k]!, (k) => yb[k]!, (k) => w[k]!, tolerance);

  test("the nearest line within the tolerance", () => {
    assert.equal(find(50, 30), 1);
    assert.equal(find(50, 31.5), 1);
    assert.equal(find(50, 50), 2); // the rising line is at y=50 mid-way
    assert.equal(find(50, 20), -1); // 10 px from both flat lines, the rising one far
  });

  test("lines that cross: the heaviest of the (nearly) equally near", () => {
    assert.equal(find(0.5, 10), 2); // lines 0 and 2 start together; 2 is heavier
  });

  test("perpendicular distance: a steep line is hit nearer than its vertical offset", () => {
    // Line 2 rises 0.8 px per px: 4.5 px below it vertically is 3.5 px away.
    assert.equal(find(50, 54.5, 4), 2);
    assert.equal(find(50, 54.5, 3), -1);
  });

  test("outside the lines' x range or no lines: none", () => {
    assert.equal(find(-1, 10), -1);
    assert.equal(find(101, 10), -1);
    assert.equal(nearestLine(5, 5, 0, 10, 0, () => 0, () => 0, () => 0), -1);
  });
});

describe("tooltip text", () => {
  test("a weight: query → key, the weight to 3 significant digits, the head", () => {
    assert.equal(weightText(2, "cat", 3, "[SEP]", 0.41894618, 5), '#2 "cat" → #3 "[SEP]": 0.419 (head 5)');
    assert.equal(weightText(0, " ", 1, undefined, 1, 0), '#0 " " → #1 "": 1 (head 0)');
    assert.equal(tokenLabel(7, 'say "hi"'), '#7 "say \\"hi\\""');
  });

  test("a thumbnail: exact bins name tokens, pooled ones say they are pooled", () => {
    const tokens = ["[CLS]", "a", "b", "c"];
    assert.equal(thumbText(1, 2, [0, 1], [3, 4], tokens, tokens, 0.5), 'Layer 1, head 2: #0 "[CLS]" → #3 "c": 0.5');
    const pooled = thumbText(0, 0, [0, 2], [2, 4], tokens, tokens, 0.123456);
    assert.match(pooled, /^Layer 0, head 0: #0–#1 → #2–#3: 0\.123 \(pooled/);
    assert.equal(binLabel(4, 5, ["a", "b", "c", "d", "e"]), '#4 "e"');
  });
});
