import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Listeners } from "../../src/core/listeners";

/** A model with anywidget's on/off: a space-separated list of names per call. */
class FakeModel {
  readonly handlers = new Map<string, Set<() => void>>();
  on(names: string, fn: () => void): void {
    for (const name of names.split(" ")) {
      if (!this.handlers.has(name)) this.handlers.set(name, new Set());
      this.handlers.get(name)!.add(fn);
    }
  }
  off(names: string, fn: () => void): void {
    for (const name of names.split(" ")) this.handlers.get(name)?.delete(fn);
  }
  emit(name: string): void {
    for (const fn of this.handlers.get(name) ?? []) fn();
  }
  count(): number {
    return [...this.handlers.values()].reduce((n, set) => n + set.size, 0);
  }
}

describe("Listeners", () => {
  test("DOM, trait and model listeners all go with one dispose, last first", () => {
    const model = new FakeModel();
    const target = new EventTarget();
    const seen: string[] = [];
    const order: string[] = [];
    const listeners = new Listeners()
      .add(() => order.push("first"))
      .on(target, "click", () => seen.push("click"))
      .traits(model, ["a", "b"], () => seen.push("trait"))
      .model(model, "msg:custom change:c", () => seen.push("model"))
      .add(() => order.push("last"));
    target.dispatchEvent(new Event("click"));
    model.emit("change:a");
    model.emit("change:b");
    model.emit("msg:custom");
    model.emit("change:c");
    assert.deepEqual(seen, ["click", "trait", "trait", "model", "model"]);
    assert.equal(model.count(), 4);

    listeners.dispose();
    assert.equal(model.count(), 0);
    target.dispatchEvent(new Event("click"));
    model.emit("change:a");
    assert.equal(seen.length, 5);
    assert.deepEqual(order, ["last", "first"]);
    listeners.dispose(); // a second dispose does nothing
    assert.deepEqual(order, ["last", "first"]);
  });

  test("a clean-up added after dispose runs at once", () => {
    const listeners = new Listeners();
    listeners.dispose();
    let ran = false;
    listeners.add(() => (ran = true));
    assert.ok(ran);
  });
});
