import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { displayToken, microtaskScheduler, saveTraits, tokenName } from "../../src/core/dom";

test("tokens show as themselves; markup stays literal text", () => {
  assert.equal(displayToken("hello"), "hello");
  assert.equal(displayToken("<img src=x onerror=alert(1)>"), "<img src=x onerror=alert(1)>");
  assert.equal(displayToken(" world"), " world");
});

test("empty and whitespace-only tokens stay visible", () => {
  assert.equal(displayToken(""), "\u2205");
  assert.equal(displayToken(" "), "\u2423");
  assert.equal(displayToken("\n"), "\\n");
  assert.equal(displayToken("\t "), "\\t\u2423");
});

test("microtaskScheduler coalesces requests into one draw and reports errors", async () => {
  let draws = 0;
  const errors: unknown[] = [];
  const schedule = microtaskScheduler(() => {
    draws += 1;
    if (draws === 2) throw new Error("boom");
  }, (err) => errors.push(err));
  schedule();
  schedule();
  schedule();
  await Promise.resolve();
  assert.equal(draws, 1);
  schedule();
  await Promise.resolve();
  assert.equal(draws, 2);
  assert.equal(errors.length, 1);
});

test("saveTraits sets every key and saves once", () => {
  const set: [string, unknown][] = [];
  let saves = 0;
  const model = { set: (k: never, v: never) => set.push([k, v]), save_changes: () => (saves += 1) };
  saveTraits(model, { layer: 2, heads: [0, 1] });
  assert.deepEqual(set, [["layer", 2], ["heads", [0, 1]]]);
  assert.equal(saves, 1);
});

describe("tokenName", () => {
  test("names the tokenizer's string only where it differs from the shown one", () => {
    assert.equal(tokenName("ing", "##ing"), '"ing" (token "##ing")');
    assert.equal(tokenName("dog", "Ġdog"), '"dog" (token "Ġdog")');
    assert.equal(tokenName("the", "the"), '"the"');
    assert.equal(tokenName("the", undefined), '"the"');
    assert.equal(tokenName("the", ""), '"the"');
  });
});
