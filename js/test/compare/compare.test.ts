/**
 * CompareView's numbers (compare_state.ts), against the fixture Python writes
 * (tests/test_compare_view.py: a real CompareView's state and what Python
 * computes of it: each row's colour range over the compared tokens, the
 * ranks, the most disputed tokens, the scatter's axes), and by hand for the
 * edge cases.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { VIRIDIS } from "../../src/core/colors";
import {
  agreementAt, agreementScale, axisDomain, barDomain, best, comparedCount, decodeCompare, directionText, disagreementRange,
  disputed, figureColumn, methodRanks, metricIndex, pairIndices, rankDomain, rowRanges, scatterPoints, tokenRank, toPixel, type CompareInput,
} from "../../src/compare/compare_state";
import fixture from "../fixtures/compare.json";

const buffer = (b64: string): DataView => {
  const bytes = Uint8Array.from(Buffer.from(b64, "base64"));
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
};
const near = (a: number, b: number, what: string, tol = 1e-6): void =>
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs Python ${b}`);

function traits(): CompareInput {
  const t = fixture.traits as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = { ...t };
  for (const name of ["scores", "disagreement", "agreement", "figures"]) out[name] = buffer(t[name] as string);
  return out as unknown as CompareInput;
}

describe("decodeCompare reads Python's CompareView", () => {
  const data = decodeCompare(traits());
  const want = fixture.expected;

  test("names, shapes and the compared tokens", () => {
    assert.deepEqual(data.methods, ["raw", "rollout", "signed_demo"]);
    assert.equal(data.scores.rows, 3);
    assert.equal(data.scores.cols, data.tokens.length);
    assert.equal(comparedCount(data), want.compared_tokens.length);
    assert.deepEqual(data.compared.flatMap((c, j) => (c ? [j] : [])), want.compared_tokens);
    assert.ok(Number.isNaN(data.disagreement[0]!), "a token not compared has no spread");
    near(agreementAt(data, data.metrics.indexOf("kendall"), 0, 2), want.agreement_kendall_0_2, "kendall");
  });

  test("each row's colour range is set by the compared tokens only", () => {
    const ranges = rowRanges(data);
    ranges.forEach((range, i) => {
      near(range.scale.max, want.row_max[i]!, `row ${i} max`);
      assert.deepEqual(range.excluded, want.excluded);
    });
    // The signed row: [CLS] (3.0) is far above every word, drawn at the range's end.
    assert.ok(ranges[2]!.scale.signed && ranges[2]!.beyond(3));
    near(disagreementRange(data).scale.max, want.spread_max, "spread max");
  });

  test("ranks and the most disputed tokens are Python's", () => {
    want.compared_tokens.forEach((j, t) => {
      data.methods.forEach((_, i) => near(tokenRank(data, i, j), want.ranks[i]![t]!, `rank of ${j} in ${i}`));
    });
    assert.ok(Number.isNaN(tokenRank(data, 0, 0)));
    data.methods.forEach((_, i) => {
      const all = methodRanks(data, i); // the same ranks in one sort
      data.tokens.forEach((__, j) => assert.ok(Object.is(all[j], tokenRank(data, i, j)) || all[j] === tokenRank(data, i, j), `${i}, ${j}`));
    });
    const ties = decodeCompare({ ...traits(), scores: new DataView(new Float32Array([0, 1, 1, 2, 2, 2, 0, 9, ...new Array(16).fill(0)]).buffer) });
    assert.deepEqual(Array.from(methodRanks(ties, 0)).slice(1, 7), [4.5, 4.5, 2, 2, 2, 6]);
    assert.deepEqual(disputed(data, 3), want.disputed);
  });

  test("the scatter's axes and points", () => {
    const points = scatterPoints(data, 0, 2);
    assert.deepEqual(points.map((p) => p.index), want.compared_tokens);
    const [xlo, xhi] = axisDomain(points.map((p) => p.x));
    const [ylo, yhi] = axisDomain(points.map((p) => p.y));
    near(xlo, want.scatter_0_2.x[0]!, "x lo");
    near(xhi, want.scatter_0_2.x[1]!, "x hi");
    near(ylo, want.scatter_0_2.y[0]!, "y lo");
    near(yhi, want.scatter_0_2.y[1]!, "y hi");
    // Ranks: rank 1 lies at the top right.
    const ranked = scatterPoints(data, 0, 2, "ranks");
    const top = ranked.find((p) => tokenRank(data, 0, p.index) === 1)!;
    assert.equal(top.x, comparedCount(data));
    assert.deepEqual(rankDomain(comparedCount(data)), [0.5, comparedCount(data) + 0.5]);
  });

  test("figures: the best method by each metric's direction", () => {
    data.figureMetrics.forEach((metric, k) => {
      const expected = (want.best as Record<string, number>)[metric];
      if (expected !== undefined) assert.equal(best(figureColumn(data, k), data.figureHigher[k]!), expected, metric);
    });
    assert.deepEqual(data.figureHigher, [true, false, true, true, true]);
  });

  test("the selections' lookups", () => {
    assert.deepEqual(pairIndices(data, ["rollout", "raw"]), [1, 0]);
    assert.equal(pairIndices(data, ["raw", "raw"]), null);
    assert.equal(pairIndices(data, ["raw", "nope"]), null);
    assert.equal(pairIndices(data, []), null);
    assert.equal(metricIndex(data, "top3"), data.metrics.indexOf("top3"));
    assert.equal(metricIndex(data, "nope"), 0);
  });

  test("shapes that do not match the names are refused", () => {
    assert.throws(() => decodeCompare({ ...traits(), shape: [2, 8] }), /scores has shape/);
    assert.throws(() => decodeCompare({ ...traits(), agreement_shape: [6, 3, 2] }), /agreement has shape/);
    assert.throws(() => decodeCompare({ ...traits(), compared: [true] }), /compared has 1 flags/);
    assert.throws(() => decodeCompare({ ...traits(), rationale: [true] }), /rationale has 1 flags/);
  });
});

describe("axes and scales", () => {
  test("a scatter axis pads its range; one value or none still gives one", () => {
    assert.deepEqual(axisDomain([0, 10]), [-0.5, 10.5]);
    assert.deepEqual(axisDomain([2, 2]), [1.9, 2.1]);
    assert.deepEqual(axisDomain([0]), [-1, 1]);
    assert.deepEqual(axisDomain([Number.NaN]), [0, 1]);
    assert.equal(toPixel(5, [0, 10], 200), 100);
    assert.equal(toPixel(20, [0, 10], 200), 200);
    assert.equal(toPixel(Number.NaN, [0, 10], 200), 0);
  });

  test("bars start at 0; the best ignores NaN and keeps the first of equals", () => {
    assert.deepEqual(barDomain([0.5, -0.25]), [-0.25, 0.5]);
    assert.deepEqual(barDomain([2, 3]), [0, 3]);
    assert.deepEqual(barDomain([Number.NaN]), [0, 1]);
    assert.equal(best([1, Number.NaN, 3, 3], true), 2);
    assert.equal(best([1, Number.NaN, 0.5, 0.5], false), 2);
    assert.equal(best([Number.NaN], true), -1);
    assert.equal(directionText(false), "lower is better");
  });

  test("the heat map's scales are fixed: −1 … 1 for correlations, 0 … 1 for shares", () => {
    assert.equal(agreementScale(true).max, 1);
    assert.equal(agreementScale(true).position(0), 0.5);
    assert.deepEqual(agreementScale(false).color(1), VIRIDIS[VIRIDIS.length - 1]);
  });

  test("disputed: ties by position, never a token with no spread", () => {
    const data = decodeCompare({
      ...traits(),
      disagreement: new DataView(new Float32Array([Number.NaN, 0.2, 0, 0.2, 0.1, 0, 0, Number.NaN]).buffer),
    });
    assert.deepEqual(disputed(data, 5), [1, 3, 4]);
  });
});
