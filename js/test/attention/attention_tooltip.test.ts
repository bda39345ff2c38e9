import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { bucketLines, linearCurve } from "../../src/attention/attention_layout";
import { binLabel, nearestLine, panelHit, thumbHit, thumbText, tokenLabel, weightText } from "../../src/attention/attention_tooltip";

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

describe("panelHit", () => {
  // 3 x 3 block of a 3 x 4 matrix (stride 4), two heads in slots 0 and 2.
  const a = Float32Array.from([0.9, 0.1, 0, 0, 0, 0.2, 0.8, 0, 0.5, 0.5, 0, 0]);
  const b = Float32Array.from([0, 0, 1, 0, 1, 0, 0, 0, 0, 0.3, 0.7, 0]);
  const data = { stride: 4, rows: [0, 3] as const, cols: [0, 3] as const, heads: [{ slot: 0, weights: a }, { slot: 2, weights: b }] };
  const g = { stripWidth: 30, perHead: 10, width: 100, row: 20 };
  const drawnFor = (focus: { side: "query" | "key"; index: number } | null) => ({
    buckets: data.heads.map((head) => bucketLines(head.weights, 4, [0, 3], [0, 3], linearCurve(1), focus)),
    cutoff: 1,
  });

  test("a line: query row to key row across the lines' width", () => {
    // Head a's line 0 -> 0 is flat at y = 10; head b's 1 -> 0 runs 30 -> 10.
    assert.deepEqual(panelHit(data, drawnFor(null), null, g, 40, 10), { head: 0, i: 0, j: 0, kind: "line" });
    assert.deepEqual(panelHit(data, drawnFor(null), null, g, 130, 11), { head: 1, i: 1, j: 0, kind: "line" });
    assert.equal(panelHit(data, drawnFor(null), null, g, 15, 10), null); // a strip, but no focus
  });

  test("a strip block: the head in that slot, the token in that row", () => {
    const focus = { side: "query" as const, index: 1 };
    // Query strip (beside the keys) starts at x = 130; slot 2 = head b.
    assert.deepEqual(panelHit(data, drawnFor(focus), focus, g, 155, 45), { head: 1, i: 1, j: 2, kind: "strip" });
    assert.equal(panelHit(data, drawnFor(focus), focus, g, 145, 45), null); // slot 1: no head there
    assert.equal(panelHit(data, drawnFor(focus), focus, g, 155, 65), null); // below the last token
    const key = { side: "key" as const, index: 0 };
    assert.deepEqual(panelHit(data, drawnFor(key), key, g, 5, 25), { head: 0, i: 1, j: 0, kind: "strip" });
  });
});

describe("thumbHit", () => {
  // 2 x 2 bins over 4 tokens (edges 0, 2, 4); a 48 px cell with 4 px inset:
  // bin centres at y = 4 + 10 = 14 and 4 + 30 = 34.
  const values = Float32Array.from([0.7, 0.3, 0.1, 0.9]);
  const box = { x: 100, y: 50, size: 48, pad: 4 };
  const hit = (x: number, y: number, budget = 10) =>
    thumbHit(values, [0, 2, 4], [0, 2, 4], [0, 4], [0, 4], linearCurve(1), budget, box, x, y);

  test("the bin pair of the line under the pointer, with its pooled weight", () => {
    assert.deepEqual(hit(124, 50 + 14), { i: 0, j: 0, weight: values[0] });
    assert.deepEqual(hit(124, 50 + 34), { i: 1, j: 1, weight: values[3] });
    // Where 0 -> 1 and 1 -> 0 cross: the heavier of the two.
    assert.deepEqual(hit(124, 50 + 24), { i: 0, j: 1, weight: values[1] });
    assert.equal(hit(90, 64), null); // left of the cell
  });

  test("only lines the thumbnail draws (the budget's strongest) are hit", () => {
    assert.deepEqual(hit(124, 50 + 14, 2), { i: 0, j: 0, weight: values[0] });
    // With a budget of 1 only 0.9 (bins 1 -> 1) is drawn: the flat 0 -> 0 line is not there.
    assert.equal(hit(124, 50 + 14, 1), null);
  });
});
