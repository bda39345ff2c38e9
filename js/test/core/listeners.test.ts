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

  test("a list of names reaches a model that keeps each name as given (marimo's)", () => {
    // marimo's model: listeners by the exact name, and a change callback gets
    // one argument (the new value), where Backbone passes the model first.
    const handlers = new Map<string, Set<(value: unknown) => void>>();
    const model = {
      on(name: string, fn: (value: unknown) => void): void {
        if (!handlers.has(name)) handlers.set(name, new Set());
        handlers.get(name)!.add(fn);
      },
      off(name: string, fn: (value: unknown) => void): void {
        handlers.get(name)?.delete(fn);
      },
    };
    const emit = (name: string, value: unknown): void => {
      for (const fn of handlers.get(name) ?? []) fn(value);
    };
    let calls = 0;
    const listeners = new Listeners().model(model, "change:image  change:image_size", () => (calls += 1));
    emit("change:image", "png");
    emit("change:image_size", [4, 4]);
    assert.equal(calls, 2);
    assert.equal(handlers.get("change:image change:image_size"), undefined);
    listeners.dispose();
    emit("change:image", "png");
    assert.equal(calls, 2);
    assert.equal([...handlers.values()].reduce((n, set) => n + set.size, 0), 0);
  });

  test("a clean-up added after dispose runs at once", () => {
    const listeners = new Listeners();
    listeners.dispose();
    let ran = false;
    listeners.add(() => (ran = true));
    assert.ok(ran);
  });
});
