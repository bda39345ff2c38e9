/**
 * FlowView's state and messages without a DOM: what the store holds after
 * traits and replies, and how the one request in flight is tracked.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { receive, type PathsReply } from "../../src/flow/flow_messages";
import { CACHE_SIZE, FlowStore, pathKey, type DataTraits } from "../../src/flow/flow_state";
import { flowGeometry, nodeX, nodeY } from "../../src/flow/flow_paths";
import { describeStatus } from "../../src/flow/flow_status";
import { describeSelection, HINT, hoverText } from "../../src/flow/flow_text";
import paths from "../fixtures/paths.json";

const n = 3;
const W1 = new Float32Array([0.5, 0.25, 0.25, 0.1, 0.8, 0.1, 0.0, 0.3, 0.7]);
const W2 = new Float32Array([0.2, 0.2, 0.6, 0.9, 0.05, 0.05, 0.3, 0.3, 0.4]);

function traits(overrides: Partial<DataTraits> = {}): DataTraits {
  return { shape: [2, n], tokens: ["a", "b", "c"], version: 5, stack: "encoder", fused: W1.slice(), fused_layers: 1, ...overrides };
}

/** A store whose every layer has arrived. */
function loaded(): FlowStore {
  const store = new FlowStore();
  const both = new Float32Array([...W1, ...W2]);
  assert.deepEqual(store.load(traits({ fused: both, fused_layers: 2 })), []);
  return store;
}

describe("FlowStore data", () => {
  test("load keeps the layers it got and asks for the rest", () => {
    const store = new FlowStore();
    const requests = store.load(traits());
    assert.deepEqual(requests, [{ type: "request", version: 5, layer: 1 }]);
    assert.equal(store.data?.stack, "encoder");
    assert.equal(store.loadedLayers(), 1);
    assert.equal(store.complete(), false);
    // Â = 0.5·W + 0.5·I (rows of W sum to 1).
    assert.ok(Math.abs(store.data!.adjusted[0]![0]! - 0.75) < 1e-7);
    store.putLayer(1, W2.slice());
    assert.equal(store.complete(), true);
  });

  test("contradicting traits and bad layers are refused", () => {
    const store = new FlowStore();
    assert.throws(() => store.load(traits({ tokens: ["a", "b"] })), /shape says 3 tokens but there are 2/);
    assert.throws(() => store.load(traits({ fused_layers: 2 })), /fused holds 9 values, expected 18/);
    store.load(traits());
    assert.throws(() => store.putLayer(2, W2.slice()), /layer 2 out of range/);
    assert.throws(() => store.putLayer(1, new Float32Array(4)), /4 values, expected 9/);
  });

  test("inRange bounds the node layers 0 … L and tokens 0 … n − 1", () => {
    const store = loaded();
    assert.equal(store.inRange({ layer: 2, token: 2 }), true);
    assert.equal(store.inRange({ layer: 3, token: 0 }), false);
    assert.equal(store.inRange({ layer: 0, token: -1 }), false);
  });
});

describe("FlowStore paths and cache", () => {
  test("computeLocal shows and caches rollout; a reload forgets it", () => {
    const store = loaded();
    const key = pathKey("rollout", 2, 0, 5);
    const result = store.computeLocal("rollout", { layer: 2, token: 0 }, false, key);
    assert.equal(store.paths, result);
    assert.equal(store.shows(key), true);
    assert.equal(store.shows(pathKey("rollout", 2, 1, 5)), false);
    // Rollout keeps each layer's mass: the input nodes sum to 1.
    const input = Array.from(result.nodes.subarray(0, n));
    assert.ok(Math.abs(input.reduce((a, b) => a + b, 0) - 1) < 1e-6);
    store.load(traits({ version: 6 }));
    assert.equal(store.cached(key), undefined);
    assert.equal(store.paths, null);
  });

  test("computeLocal refuses before the data is complete and for kernel methods", () => {
    const store = new FlowStore();
    store.load(traits());
    assert.throws(() => store.computeLocal("raw", { layer: 1, token: 0 }, false, "k"), /not arrived/);
    assert.throws(() => loaded().computeLocal("flow", { layer: 1, token: 0 }, false, "k"), /not computed in the page/);
  });

  test("the cache keeps the most recent CACHE_SIZE results", () => {
    const store = loaded();
    const result = store.computeLocal("raw", { layer: 1, token: 0 }, false, "first");
    for (let k = 0; k < CACHE_SIZE; k++) store.remember(`other ${k}`, result);
    assert.equal(store.cached("first"), undefined);
    assert.equal(store.cached("other 0"), result);
    store.remember("other 0", result); // stored again: now the newest
    store.remember("one more", result);
    assert.equal(store.cached("other 0"), result);
    assert.equal(store.cached("other 1"), undefined);
  });

  test("request makes the compute message and tracks it, ids increasing", () => {
    const store = loaded();
    const first = store.request("flow", { layer: 2, token: 1 }, "k1");
    assert.deepEqual(first, { type: "compute", id: first.id, version: 5, method: "flow", layer: 2, token: 1 });
    const second = store.request("flow", { layer: 2, token: 2 }, "k2");
    assert.ok(second.id > first.id);
    assert.deepEqual(store.inflight, { id: second.id, key: "k2", method: "flow", heard: 0 });
  });
});

describe("receive: kernel replies applied to the store", () => {
  // A real reply, as FlowView sends it (see tests/test_fixtures_js.py): 2 layers, 5 tokens.
  const entry = paths.find((p) => p.method === "flow")!;
  const content = entry.reply.content as unknown as PathsReply;
  const buffers = entry.reply.buffers.map((b) => Uint8Array.from(Buffer.from(b, "base64")));
  const fiveTokens = (): FlowStore => {
    const store = new FlowStore();
    store.load({ shape: [2, 5], tokens: ["a", "b", "c", "d", "e"], version: content.version, stack: "encoder", fused: null, fused_layers: 0 });
    return store;
  };

  test("a paths reply is cached under the request's key and ends it", () => {
    const store = fiveTokens();
    const request = store.request("flow", { layer: entry.layer, token: entry.token }, "key");
    assert.deepEqual(receive(store, { ...content, id: request.id + 1 }, buffers, 1), { kind: "ignored" });
    assert.deepEqual(receive(store, { ...content, id: request.id }, buffers, 1), { kind: "done" });
    assert.equal(store.inflight, null);
    assert.equal(store.cached("key")?.method, "flow");
    assert.equal(store.cached("key")?.source, "kernel");
  });

  test("a reply for another data version is dropped, but the request still ends", () => {
    const store = fiveTokens();
    const request = store.request("flow", { layer: 1, token: 0 }, "key");
    assert.deepEqual(receive(store, { ...content, id: request.id, version: content.version - 1 }, buffers, 1), { kind: "done" });
    assert.equal(store.cached("key"), undefined);
  });

  test("progress marks the request heard; stale ends it", () => {
    const store = fiveTokens();
    const { id } = store.request("flow", { layer: 1, token: 0 }, "key");
    assert.deepEqual(receive(store, { type: "progress", id, done: 2, total: 9 }, [], 42), { kind: "progress", done: 2, total: 9 });
    assert.equal(store.inflight?.heard, 42);
    assert.deepEqual(receive(store, { type: "stale", id, version: 1 }, [], 43), { kind: "done" });
    assert.deepEqual(receive(store, { type: "progress", id, done: 3, total: 9 }, [], 44), { kind: "ignored" });
  });

  test("errors: the kernel's, and a reply that does not decode, end the request", () => {
    const store = fiveTokens();
    let { id } = store.request("flow", { layer: 1, token: 0 }, "key");
    assert.deepEqual(receive(store, { type: "error", id: id + 7, message: "other" }, [], 1), { kind: "ignored" });
    const failed = receive(store, { type: "error", id, message: "boom" }, [], 1);
    assert.equal(failed.kind, "failed");
    assert.equal(failed.kind === "failed" && failed.error.message, "boom");
    assert.equal(store.inflight, null);
    ({ id } = store.request("flow", { layer: 1, token: 0 }, "key"));
    const broken = receive(store, { ...content, id }, buffers.slice(0, 3), 1);
    assert.equal(broken.kind === "failed" && broken.request, true);
    assert.equal(store.inflight, null);
    assert.equal(store.cached("key"), undefined);
  });

  test("layers: stored when of this version, refused when malformed", () => {
    const store = new FlowStore();
    store.load(traits());
    assert.deepEqual(receive(store, { type: "layer", version: 4, layer: 1 }, [W2.slice()], 0), { kind: "ignored" });
    const bad = receive(store, { type: "layer", version: 5, layer: 1 }, [new Float32Array(2)], 0);
    assert.equal(bad.kind === "failed" && bad.request, false);
    assert.deepEqual(receive(store, { type: "layer", version: 5, layer: 1 }, [W2.slice()], 0), { kind: "layer", complete: true });
  });

  test("other content, and replies with no request in flight, change nothing", () => {
    const store = loaded();
    for (const message of [null, "text", { type: "mystery" }, { type: "progress", id: 1, done: 1, total: 2 }]) {
      assert.deepEqual(receive(store, message, [], 0), { kind: "ignored" });
    }
  });
});

describe("flow_text", () => {
  test("the selection is described in words, the hint when there is none", () => {
    const store = loaded();
    assert.equal(describeSelection(store.data, { layer: 2, token: -1 }), HINT);
    const text = describeSelection(store.data, { layer: 1, token: 2 });
    assert.match(text, /^Selected layer 1 #2 "c"\. Down: .* Up: /);
    assert.doesNotMatch(describeSelection(store.data, { layer: 2, token: 0 }), /Up:/);
  });

  test("the status line agrees with paths that do not depend on the selection", () => {
    const store = loaded();
    const sel = { layer: 2, token: 1 };
    const paths = store.computeLocal("rollout", sel, false, "k");
    // Paths from the selection: described as such.
    assert.equal(describeStatus(store.data, sel, paths, 0), describeSelection(store.data, sel));
    // The same for every selection (lrp): says so, names the target's query, no "Down:"/"Up:".
    const fixed = { ...paths, method: "lrp", perSelection: false };
    const text = describeStatus(store.data, sel, fixed, 0);
    assert.match(text, /^lrp is the same for every selection: it explains the target at query #0 "a"/);
    assert.match(text, /Selected top layer #1 "b"\.$/);
    assert.doesNotMatch(text, /Down:|Up:/);
    assert.equal(describeStatus(store.data, { layer: 2, token: -1 }, fixed, 0), HINT);
  });
});

describe("hoverText", () => {
  test("names the node under the pointer, else the nearest drawn line with its Â", () => {
    const store = loaded();
    const data = store.data!;
    const g = flowGeometry(data.layers, n);
    const paths = store.computeLocal("rollout", { layer: 2, token: 0 }, false, "k");
    // Edge layer 2, line from (1, j=1) to (2, i=0): flat index 0·n + 1.
    const drawn = { edges: [new Uint32Array(0), new Uint32Array([1])], paths: [new Map(), new Map([[1, 0.4]])] };
    assert.match(hoverText(data, g, paths, drawn, nodeX(g, 2), nodeY(g, 0)), /^Node top layer #0 "a" · rollout 1 \(click to select\)$/);
    const x = (nodeX(g, 1) + nodeX(g, 2)) / 2;
    const y = (nodeY(g, 1) + nodeY(g, 0)) / 2;
    const text = hoverText(data, g, paths, drawn, x, y);
    assert.match(text, /^Layer 2: #0 "a" → #1 "b" \(node layers 2 → 1\): Â = 0\.1 · rollout 0\.4 /);
    assert.equal(hoverText(data, g, null, { edges: [], paths: [] }, x, y), "");
  });
});
