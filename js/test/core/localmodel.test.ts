import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { LocalModel, PAYLOAD_FORMAT, base64ToBytes, decodePayload, deepEqual } from "../../src/core/localmodel";
import { pseudoText } from "../../src/core/snapshot";
import { exportFileName } from "../../src/core/toolbar";

describe("LocalModel", () => {
  test("set fires change:<key> with the model and the new value, then change", () => {
    const model = new LocalModel<{ a: number; b: string }>({ a: 1, b: "x" });
    const seen: string[] = [];
    model.on("change:a", (m: unknown, value: unknown) => {
      assert.equal(m, model);
      seen.push(`a=${String(value)} b=${model.get("b")}`);
    });
    model.on("change", () => seen.push("change"));
    model.set("a", 2);
    assert.equal(model.get("a"), 2);
    assert.deepEqual(seen, ["a=2 b=x", "change"]);
  });

  test("setting an equal value fires nothing (deep equality, as Backbone)", () => {
    const model = new LocalModel<{ xs: number[] }>({ xs: [1, 2] });
    let calls = 0;
    model.on("change:xs", () => calls++);
    model.set("xs", [1, 2]);
    assert.equal(calls, 0);
    model.set("xs", [1, 3]);
    assert.equal(calls, 1);
  });

  test("an object set stores every key before any listener runs", () => {
    const model = new LocalModel<{ a: number; b: number }>({ a: 0, b: 0 });
    let seenB = -1;
    model.on("change:a", () => {
      seenB = model.get("b");
    });
    model.set({ a: 1, b: 5 });
    assert.equal(seenB, 5);
  });

  test("on takes space-separated events; off removes by callback, by event, or all", () => {
    const model = new LocalModel<{ a: number; b: number }>({ a: 0, b: 0 });
    let n = 0;
    const f = () => n++;
    const g = () => n++;
    model.on("change:a change:b", f);
    model.on("change:a", g);
    model.set("b", 1);
    assert.equal(n, 1);
    model.off("change:a", f);
    model.set("a", 1);
    assert.equal(n, 2); // only g
    model.off("change:a");
    model.set("a", 2);
    assert.equal(n, 2);
    assert.equal(model.listenerCount(), 1); // f on change:b
    model.off();
    assert.equal(model.listenerCount(), 0);
  });

  test("listeners run with the context they were registered with", () => {
    const model = new LocalModel<{ a: number }>({ a: 0 });
    const context = { hit: false };
    model.on(
      "change:a",
      function (this: { hit: boolean }) {
        this.hit = true;
      },
      context,
    );
    model.set("a", 1);
    assert.ok(context.hit);
  });

  test("save_changes and send do nothing; the widget manager has no models", async () => {
    const model = new LocalModel<{ a: number }>({ a: 3 });
    model.save_changes();
    model.send({ hello: 1 });
    assert.equal(model.get("a"), 3);
    await assert.rejects(model.widget_manager.get_model("x"), /standalone/);
  });
});

describe("deepEqual", () => {
  test("compares JSON structurally and binary values by identity", () => {
    assert.ok(deepEqual({ a: [1, { b: "c" }] }, { a: [1, { b: "c" }] }));
    assert.ok(!deepEqual({ a: 1 }, { a: 1, b: 2 }));
    assert.ok(!deepEqual([1], { 0: 1 }));
    assert.ok(deepEqual(Number.NaN, Number.NaN));
    const view = new DataView(new ArrayBuffer(4));
    assert.ok(deepEqual(view, view));
    assert.ok(!deepEqual(view, new DataView(new ArrayBuffer(4))));
  });
});

function b64(bytes: number[]): string {
  return Buffer.from(Uint8Array.from(bytes)).toString("base64");
}

describe("decodePayload", () => {
  test("puts each buffer back at its path as a DataView", () => {
    const floats = new Float32Array([1.5, -2, 0.25]);
    const payload = {
      format: PAYLOAD_FORMAT,
      state: { _view: "saliency", tokens: ["a", "</script>"], nested: { list: [null, 7] } },
      buffers: [
        { path: ["scores"], data: Buffer.from(floats.buffer).toString("base64") },
        { path: ["nested", "list", 0], data: b64([1, 2, 3]) },
      ],
    };
    const state = decodePayload(payload);
    assert.deepEqual(state.tokens, ["a", "</script>"]);
    const scores = state.scores as DataView;
    assert.ok(scores instanceof DataView);
    assert.deepEqual(
      Array.from({ length: 3 }, (_, i) => scores.getFloat32(i * 4, true)),
      [1.5, -2, 0.25],
    );
    const inner = (state.nested as { list: unknown[] }).list;
    assert.deepEqual(Array.from(new Uint8Array((inner[0] as DataView).buffer)), [1, 2, 3]);
    assert.equal(inner[1], 7);
    assert.equal("scores" in payload.state, false, "the parsed payload is not modified");
  });

  test("refuses other formats, missing state and prototype paths", () => {
    assert.throws(() => decodePayload({ format: "other/9", state: {}, buffers: [] }), /format/);
    assert.throws(() => decodePayload({ format: PAYLOAD_FORMAT, buffers: [] }), /state/);
    assert.throws(() => decodePayload("nope"), /JSON object/);
    assert.throws(
      () => decodePayload({ format: PAYLOAD_FORMAT, state: {}, buffers: [{ path: ["__proto__", "x"], data: "" }] }),
      /bad buffer path/,
    );
    assert.equal(({} as Record<string, unknown>).x, undefined);
  });

  test("base64 decodes every byte value", () => {
    const all = Array.from({ length: 256 }, (_, i) => i);
    assert.deepEqual(Array.from(base64ToBytes(b64(all))), all);
    assert.equal(base64ToBytes("").length, 0);
  });
});

describe("export helpers", () => {
  test("pseudo-element text: plain strings only, CSS escapes decoded", () => {
    assert.equal(pseudoText('"\\2192  x"'), "\u2192 x");
    assert.equal(pseudoText('"a\\"b"'), 'a"b');
    assert.equal(pseudoText("none"), null);
    assert.equal(pseudoText("counter(item)"), null);
  });

  test("file names are safe whatever the view name", () => {
    assert.equal(exportFileName("saliency", "png"), "attnwidget-saliency.png");
    assert.equal(exportFileName("../../etc/Head View", "svg"), "attnwidget-etc-head-view.svg");
    assert.equal(exportFileName("", "svg"), "attnwidget-view.svg");
  });
});
