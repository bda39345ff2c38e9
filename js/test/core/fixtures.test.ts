/**
 * Golden fixtures written by Python (tests/test_fixtures_js.py, which fails
 * when they drift from what Python computes): the TypeScript maths, the wire
 * decoder and the trait interfaces must reproduce them.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { decodeArray, type WireMeta } from "../../src/core/buffers";
import { decodePathsReply, productPaths, rawPaths, residualAdjust, type PathData } from "../../src/flow/flow_paths";
import type { PathsReply } from "../../src/flow/flow_messages";
import { formatNumber } from "../../src/core/format";
import { FLOW_MESSAGE_KEYS, SELECTION_TRAITS, TRAIT_NAMES } from "../../src/core/trait_names";
import { NONE } from "../../src/core/types";
import { MATRIX_TRAITS } from "../../src/matrix/matrix_types";
import messages from "../fixtures/messages.json";
import attention from "../fixtures/attention.json";
import formatCases from "../fixtures/format.json";
import paths from "../fixtures/paths.json";
import selection from "../fixtures/selection.json";
import traits from "../fixtures/traits.json";
import wire from "../fixtures/wire.json";

type Encoded = WireMeta & { base64: string };

const bytes = (b64: string): Uint8Array => Uint8Array.from(Buffer.from(b64, "base64"));
const decode = (b: Encoded): Float32Array | Uint32Array => decodeArray(bytes(b.base64), b as WireMeta, "fixture");
const flat = (value: unknown): number[] => (Array.isArray(value) ? value.flatMap(flat) : [value as number]);

function close(got: ArrayLike<number>, want: ArrayLike<number>, tol: (want: number) => number, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let k = 0; k < want.length; k++) {
    const g = got[k] as number;
    const w = want[k] as number;
    assert.ok(Math.abs(g - w) <= tol(w), `${what} at ${k}: ${g} vs Python ${w}`);
  }
}

describe("wire decoder reproduces Python's decode_array", () => {
  for (const example of wire) {
    test(example.name, () => {
      const buffer = example.buffer as Encoded;
      const values = decode(buffer);
      assert.deepEqual(Array.from(values), example.decoded);
      assert.ok(Array.from(values).every(Number.isFinite), "nothing became infinite");
      if (buffer.dtype !== "float16") return;
      // float16 keeps 11 significant bits: within 2^-11 relative of the original,
      // never 0 for a nonzero value (attention may underflow below 6e-8 by design).
      const original = example.original;
      const floor = example.name.startsWith("attention") ? 2 ** -25 : 0;
      close(values, original, (w) => Math.abs(w) * 2 ** -11 + floor, example.name);
      if (example.name.includes("rescaled")) assert.ok(buffer.scale !== undefined && buffer.scale !== 1, "rescaled arrays carry a scale");
    });
  }
});

describe("flow maths reproduce Python's compute_paths", () => {
  const fusedAll = decode(attention.fused as Encoded) as Float32Array;
  const [layers, n] = [attention.fused.shape[0]!, attention.fused.shape[1]!];
  const fused = Array.from({ length: layers }, (_, l) => fusedAll.slice(l * n * n, (l + 1) * n * n));
  const adjusted = fused.map((w) => residualAdjust(w, n));

  test("residualAdjust matches add_residual", () => {
    adjusted.forEach((a, l) => close(a, flat(attention.adjusted[l]), () => 1e-6, `Â_${l + 1}`));
  });

  for (const entry of paths.filter((p) => p.method === "raw" || p.method === "rollout")) {
    test(`${entry.method} at node (${entry.layer}, ${entry.token}) computed in the page`, () => {
      const dense =
        entry.method === "raw" ? rawPaths(fused, n, entry.layer, entry.token) : productPaths(adjusted, n, entry.layer, entry.token);
      close(dense.nodes, flat(entry.nodes), () => 1e-5, "nodes");
      close(dense.edges.flatMap((e) => Array.from(e)), flat(entry.edges), () => 1e-5, "edges");
    });
  }
});

describe("kernel paths replies decode to Python's paths", () => {
  /** Dense (L, n, n) edges of decoded paths. */
  const denseEdges = (data: PathData): number[] => {
    const out = new Array<number>(data.layers * data.n * data.n).fill(0);
    data.edges.forEach((layer, l) => layer.index.forEach((flatIndex, k) => (out[l * data.n * data.n + flatIndex] = layer.value[k] as number)));
    return out;
  };

  for (const entry of paths) {
    test(`${entry.method} at node (${entry.layer}, ${entry.token})`, () => {
      const reply = entry.reply.content as unknown as PathsReply;
      const data = decodePathsReply(reply, entry.reply.buffers.map(bytes));
      assert.equal(data.method, entry.method);
      assert.equal(data.signed, entry.signed);
      assert.equal(data.source, "kernel");
      const nodes = flat(entry.nodes);
      const edges = flat(entry.edges);
      close(data.nodes, nodes, (w) => Math.abs(w) * 1e-6 + 1e-9, "nodes");
      // Edges at most 1e-6 of their layer's total are not sent (EDGE_FLOOR).
      const per = data.n * data.n;
      const totals = data.edges.map((layer) => layer.total);
      close(denseEdges(data), edges, (w) => Math.abs(w) * 1e-6 + 1e-6 * Math.max(...totals) + 1e-9, "edges");
      for (let l = 0; l < data.layers; l++) {
        const sum = edges.slice(l * per, (l + 1) * per).reduce((a, b) => a + Math.abs(b), 0);
        close([totals[l]!], [sum], (w) => Math.abs(w) * 1e-6, `total of edge layer ${l + 1}`);
      }
    });
  }
});

describe("trait interfaces name exactly the Python traits", () => {
  test("the same views", () => {
    assert.deepEqual(Object.keys(TRAIT_NAMES).sort(), Object.keys(traits).sort());
  });
  for (const [view, names] of Object.entries(traits)) {
    test(view, () => assert.deepEqual(TRAIT_NAMES[view], names));
  }
});

describe("selection traits: the same in every view, and NONE means nothing selected", () => {
  test("NONE is Python's", () => assert.equal(NONE, selection.none));
  test("the same views and traits as Python's SELECTION_TRAITS", () => {
    assert.deepEqual(SELECTION_TRAITS, selection.traits);
  });
  test("each is a synced trait of its view", () => {
    const names: Record<string, readonly string[]> = { ...TRAIT_NAMES, matrix: [...MATRIX_TRAITS] };
    for (const [view, list] of Object.entries(SELECTION_TRAITS)) {
      for (const name of list) assert.ok(names[view]?.includes(name), `${view}.${name}`);
    }
  });
});

describe("FlowView message schemas name exactly the Python TypedDicts' keys", () => {
  test("the same message types", () => {
    assert.deepEqual(Object.keys(FLOW_MESSAGE_KEYS).sort(), Object.keys(messages).sort());
  });
  for (const [type, keys] of Object.entries(messages)) {
    test(type, () => assert.deepEqual(FLOW_MESSAGE_KEYS[type], keys));
  }
});

describe("formatNumber writes what Python's format_number writes", () => {
  test(`${formatCases.length} numbers`, () => {
    for (const { value, digits, text } of formatCases) {
      // Non-finite values travel as the strings Number() reads ("NaN", "-Infinity").
      const x = typeof value === "string" ? Number(value) : value;
      assert.equal(formatNumber(x, { digits }), text, `formatNumber(${String(value)}, {digits: ${digits}})`);
    }
  });
});
