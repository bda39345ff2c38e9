import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  bucketByLevel,
  contextBudget,
  contextFade,
  CONTEXT_LINES_PER_TOKEN,
  edgesAbove,
  levelOf,
  LEVELS,
  lineStyle,
} from "../../src/flow/flow_lines";
import {
  decodePathsReply,
  edgeLayerAt,
  flowGeometry,
  MIN_ROW_HEIGHT,
  nearestEdge,
  nodeAt,
  nodeX,
  nodeY,
  productPaths,
  rawPaths,
  residualAdjust,
  rowHeightFor,
  sparsify,
  toPathData,
} from "../../src/flow/flow_paths";
import { decodeUint32 } from "../../src/core/buffers";
import type { PathsReply } from "../../src/flow/flow_messages";

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol = 1e-6): void => {
  assert.equal(a.length, b.length);
  for (let k = 0; k < a.length; k++) assert.ok(Math.abs((a[k] as number) - (b[k] as number)) <= tol, `at ${k}: ${a[k]} vs ${b[k]}`);
};

/** (n × n) matrix product a·b, row-major. */
function matmul(a: ArrayLike<number>, b: ArrayLike<number>, n: number): Float64Array {
  const out = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let k = 0; k < n; k++) for (let j = 0; j < n; j++) out[i * n + j]! += (a[i * n + k] as number) * (b[k * n + j] as number);
  return out;
}

// Two layers of head-fused attention over three tokens (rows sum to 1).
const W1 = [0.5, 0.25, 0.25, 0.1, 0.8, 0.1, 0.0, 0.3, 0.7];
const W2 = [0.2, 0.2, 0.6, 0.9, 0.05, 0.05, 0.3, 0.3, 0.4];
const n = 3;

describe("residualAdjust", () => {
  test("0.5·W + 0.5·I for row-stochastic W", () => {
    close(residualAdjust([0.2, 0.8, 1, 0], 2), [0.6, 0.4, 0.5, 0.5]);
  });
  test("re-normalises rows that do not sum to 1; a zero row stays zero", () => {
    // Row 0 sums to 2 before the residual: (0.5·[1, 1] + [0.5, 0]) / 1.5.
    close(residualAdjust([1, 1, 0, 0], 2), [1 / 1.5, 0.5 / 1.5, 0, 0.5 / 0.5]);
    const zero = residualAdjust([0, 0, 0, 0], 2);
    close(zero, [1, 0, 0, 1]); // the residual alone
  });
});

describe("productPaths (rollout)", () => {
  const maps = [residualAdjust(W1, n), residualAdjust(W2, n)];
  const rollout = matmul(maps[1]!, maps[0]!, n); // R_2 = Â_2 · Â_1

  test("down from a top node: input values are the rollout row, every layer sums to 1", () => {
    const paths = productPaths(maps, n, 2, 1);
    close(paths.nodes.subarray(0, n), rollout.subarray(n, 2 * n));
    for (const layer of paths.edges) close([layer.reduce((a, b) => a + b, 0)], [1]);
    // Edge (2, 1) → (1, 0) carries mass(2, 1) = 1 times Â_2[1, 0].
    close([paths.edges[1]![1 * n + 0]!], [maps[1]![1 * n + 0]!]);
    // Edge (1, 0) → (0, 2) carries mass(1, 0) · Â_1[0, 2], mass(1, 0) = Â_2[1, 0].
    close([paths.edges[0]![0 * n + 2]!], [maps[1]![1 * n + 0]! * maps[0]![0 * n + 2]!]);
  });

  test("up from an input token: top values are the rollout column", () => {
    const paths = productPaths(maps, n, 0, 2);
    const column = [0, 1, 2].map((i) => rollout[i * n + 2]!);
    close(paths.nodes.subarray(2 * n, 3 * n), column);
    // What enters top node i sums its in-edges.
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (let j = 0; j < n; j++) sum += paths.edges[1]![i * n + j]!;
      close([sum], [column[i]!]);
    }
  });

  test("a middle node goes both ways", () => {
    const paths = productPaths(maps, n, 1, 0);
    close(paths.nodes.subarray(0, n), maps[0]!.subarray(0, n)); // down one layer: row 0 of Â_1
    close(paths.nodes.subarray(2 * n, 3 * n), [0, 1, 2].map((i) => maps[1]![i * n]!)); // up: column 0 of Â_2
    assert.equal(paths.nodes[1 * n + 0], 1);
  });

  test("rejects nodes out of range", () => {
    assert.throws(() => productPaths(maps, n, 3, 0), RangeError);
    assert.throws(() => productPaths(maps, n, 0, 3), RangeError);
  });
});

describe("rawPaths", () => {
  test("down: the layer's attention row, then straight lanes", () => {
    const paths = rawPaths([W1, W2], n, 2, 0);
    close(paths.nodes.subarray(0, n), W2.slice(0, 3));
    close(paths.edges[1]!.subarray(0, n), W2.slice(0, 3));
    for (let j = 0; j < n; j++) assert.equal(paths.edges[0]![j * n + j], W2[j]);
  });
  test("up from an input token: a lane, then the top layer's column", () => {
    const paths = rawPaths([W1, W2], n, 0, 1);
    assert.equal(paths.edges[0]![1 * n + 1], 1);
    close(paths.nodes.subarray(2 * n), [W2[1]!, W2[4]!, W2[7]!]);
  });
});

describe("sparse edges and kernel replies", () => {
  test("sparsify keeps what is above the floor share and the full total", () => {
    const layer = sparsify([0.5, 0, -0.25, 1e-9], 1e-6);
    assert.deepEqual(Array.from(layer.index), [0, 2]);
    close(layer.value, [0.5, -0.25]);
    close([layer.total], [0.75 + 1e-9], 1e-12);
  });

  test("decodePathsReply splits edges by layer", () => {
    const nodes = new Float32Array([1, 0, 0.5, 0.5, 0.25, 0.75]); // (L+1=3, n=2)
    const index = new Uint32Array([1, 0, 3]);
    const values = new Float32Array([0.5, 0.25, 0.75]);
    const totals = new Float32Array([0.5, 1]);
    const meta: PathsReply = {
      type: "paths", id: 1, version: 1, method: "flow", layer: 2, token: 0, shape: [2, 2],
      counts: [1, 2], signed: false, note: "n", floor: 1e-6, dropped: 0, dtype: "float32", per_selection: true,
    };
    const data = decodePathsReply(meta, [new DataView(nodes.buffer), new DataView(index.buffer), new DataView(values.buffer), new DataView(totals.buffer)]);
    assert.equal(data.layers, 2);
    assert.deepEqual(Array.from(data.edges[0]!.index), [1]);
    assert.deepEqual(Array.from(data.edges[1]!.index), [0, 3]);
    close(data.edges[1]!.value, [0.25, 0.75]);
    assert.equal(data.edges[1]!.total, 1);
    assert.equal(data.perSelection, true);
    assert.equal(decodePathsReply({ ...meta, per_selection: false }, [nodes, index, values, totals]).perSelection, false);
    assert.throws(() => decodePathsReply({ ...meta, counts: [1, 1] }, [nodes, index, values, totals]), RangeError);
    assert.throws(() => decodePathsReply(meta, [nodes, new Uint32Array([9, 0, 3]), values, totals]), RangeError);
  });

  test("decodeUint32 is little-endian and checks the length", () => {
    const bytes = new Uint8Array([1, 0, 0, 0, 0, 1, 0, 0]);
    assert.deepEqual(Array.from(decodeUint32(bytes)), [1, 256]);
    assert.throws(() => decodeUint32(new Uint8Array(3)), RangeError);
  });

  test("toPathData keeps page paths", () => {
    const dense = productPaths([residualAdjust(W1, n)], n, 1, 0);
    const data = toPathData(dense, { method: "rollout", layer: 1, token: 0, n, note: "" });
    assert.equal(data.source, "page");
    assert.equal(data.edges[0]!.index.length, 3);
  });
});

describe("geometry and hit testing", () => {
  const g = flowGeometry(4, 10);

  test("row height shrinks with long inputs down to a readable minimum, width with layers", () => {
    assert.equal(rowHeightFor(30), 20);
    assert.equal(rowHeightFor(128), 16);
    // Long inputs keep readable rows and scroll: never below 16 px (12 px labels, 1 px gaps).
    assert.equal(MIN_ROW_HEIGHT, 16);
    for (const n of [41, 300, 1024]) assert.equal(rowHeightFor(n), MIN_ROW_HEIGHT);
    assert.equal(flowGeometry(6, 300).height, 18 + 300 * 16);
    assert.equal(g.height, g.header + 10 * g.rowHeight);
    assert.equal(g.width, 2 * g.pad + 4 * g.colGap);
    assert.ok(flowGeometry(12, 128).colGap >= 44);
  });

  test("nodeAt finds the node under the pointer, only near its column", () => {
    assert.deepEqual(nodeAt(g, nodeX(g, 2) + 3, nodeY(g, 7)), { layer: 2, token: 7 });
    assert.equal(nodeAt(g, nodeX(g, 2) + g.colGap / 2, nodeY(g, 7)), null);
    assert.equal(nodeAt(g, nodeX(g, 0), g.header - 1), null);
  });

  test("edgeLayerAt and nearestEdge pick the line under the pointer", () => {
    const x = nodeX(g, 1) + g.colGap / 2; // halfway between node layers 1 and 2
    assert.deepEqual(edgeLayerAt(g, x), { layer: 2, f: 0.5 });
    // Edge (2, i=6) → (1, j=2): halfway its y is the mean of rows 2 and 6.
    const flat = 6 * 10 + 2;
    const y = (nodeY(g, 2) + nodeY(g, 6)) / 2;
    assert.equal(nearestEdge(g, [flat, 0], x, y)?.flat, flat);
    assert.equal(nearestEdge(g, [0], x, y), null);
    assert.equal(edgeLayerAt(g, nodeX(g, 4) + 5), null);
  });
});

describe("context lines of long inputs", () => {
  test("weak context lines fade with the input's length, strong ones stay", () => {
    assert.equal(contextFade(10), 1);
    assert.equal(contextFade(40), 1);
    assert.ok(Math.abs(contextFade(160) - 0.5) < 1e-12);
    assert.ok(contextFade(300) < contextFade(100));
    const weak = (fade: number) => lineStyle(1, "edge", fade).alpha;
    const strong = (fade: number) => lineStyle(LEVELS, "edge", fade).alpha;
    // The weakest line loses most of its opacity at 300 tokens, the strongest little.
    assert.ok(weak(contextFade(300)) < 0.55 * weak(1));
    assert.ok(strong(contextFade(300)) > 0.85 * strong(1));
    assert.deepEqual(lineStyle(3, "edge"), lineStyle(3, "edge", 1));
    // Widths, and path lines, do not change.
    assert.equal(lineStyle(5, "edge", 0.2).width, lineStyle(5, "edge").width);
    assert.deepEqual(lineStyle(5, "path", 0.2), lineStyle(5, "path"));
  });

  test("the line budget is per token and layer above the roomy size", () => {
    assert.equal(contextBudget(40, 12, 24000), 24000);
    assert.equal(contextBudget(300, 6, 24000), CONTEXT_LINES_PER_TOKEN * 300 * 6);
    assert.equal(contextBudget(1024, 24, 24000), 24000); // the canvas limit still holds
  });
});

describe("lines grouped by strength", () => {
  test("levelOf respects the threshold", () => {
    assert.equal(levelOf(0.01, 0.02), 0);
    assert.equal(levelOf(0.02, 0.02), 1);
    assert.equal(levelOf(1, 0), LEVELS);
    assert.equal(levelOf(Number.NaN, 0), 0);
  });

  test("bucketByLevel groups by level and marks negative values", () => {
    const flat = [10, 11, 12, 13];
    const strength = [1, 0.5, 0.01, 0.51];
    const values = [1, -0.5, 0.01, 0.51];
    const b = bucketByLevel(flat, (k) => strength[k]!, 0.1, (k) => values[k]! < 0);
    assert.equal(b.count, 3);
    const level = (s: number) => Math.ceil(s * LEVELS);
    assert.deepEqual(Array.from(b.items.subarray(b.starts[level(0.5)]!, b.starts[level(0.5) + 1]!)), [11]);
    assert.deepEqual(Array.from(b.items.subarray(b.starts[LEVELS]!, b.starts[LEVELS + 1]!)), [10]);
    assert.equal(b.negative[b.starts[level(0.5)]!], 1);
  });

  test("edgesAbove lists weights at or above the threshold", () => {
    assert.deepEqual(Array.from(edgesAbove([0.5, 0.01, 0.02, 0], 0.02)), [0, 2]);
  });
});
