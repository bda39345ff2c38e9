import assert from "node:assert/strict";
import { test } from "node:test";

import { displayToken } from "../src/dom";

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
