import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { VIRIDIS } from "../../src/core/colors";
import { coverageText, isSpecialToken, rangeText, scoreRange } from "../../src/core/score_range";

describe("isSpecialToken", () => {
  test("tokenizers' special tokens", () => {
    for (const t of ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "<s>", "</s>", "<pad>", "<|endoftext|>", "<|im_start|>", "<extra_id_0>", "[SEP2]"]) {
      assert.ok(isSpecialToken(t), t);
    }
  });
  test("words, placeholders of words and look-alikes are not", () => {
    for (const t of ["the", "[UNK]", "<unk>", "<id 7>", "[", "<", "a<b>", "[cls", "<|a b|>", "", "␣", "<0x0A>", "[unused0]"]) {
      assert.ok(!isSpecialToken(t), t);
    }
  });
});

describe("scoreRange", () => {
  const tokens = ["[CLS]", "the", "keys", "are", "[SEP]"];
  // A CLS-dominated row (grad_attention): the words' max sets the range.
  const row = [1, 0.001, 0.004, 0.002, 0.003];

  test("words: specials and the focus are left out, drawn clamped and beyond", () => {
    const range = scoreRange(row, tokens, { signed: false, mode: "words", focus: 3 });
    assert.equal(range.covers, "words");
    assert.deepEqual(range.excluded, [0, 3, 4]);
    assert.equal(range.scale.max, 0.004);
    assert.deepEqual(range.scale.color(0.004), VIRIDIS[VIRIDIS.length - 1]); // the best word: the top colour
    assert.deepEqual(range.scale.color(1), VIRIDIS[VIRIDIS.length - 1]); // CLS clamped to it
    assert.ok(range.beyond(1) && !range.beyond(0.004) && !range.beyond(0.003));
    assert.equal(rangeText(range.scale), "0 … 0.004");
    assert.equal(coverageText(range, tokens, 3, "the query"), "range over words; [CLS], [SEP] and the query excluded");
  });

  test("all: every token sets the range", () => {
    const range = scoreRange(row, tokens, { signed: false, mode: "all", focus: 0 });
    assert.equal(range.covers, "all");
    assert.deepEqual(range.excluded, []);
    assert.equal(range.scale.max, 1);
    assert.ok(!range.beyond(1));
    assert.equal(coverageText(range, tokens, 0, "the query"), "range over all tokens");
  });

  test("signed rows are symmetric over the words", () => {
    const range = scoreRange([-5, 0.2, -0.3, 0.1, 2], tokens, { signed: true, mode: "words", focus: -1 });
    assert.equal(range.scale.max, 0.3);
    assert.ok(range.beyond(-5) && range.beyond(2) && !range.beyond(-0.3));
    assert.equal(rangeText(range.scale), "\u22120.3 … 0 … 0.3");
  });

  test("words given by the caller replace the token-text rule", () => {
    // CompareView: the compared tokens (from the tokenizer) set the range.
    const words = [true, false, true, true, false];
    const range = scoreRange(row, tokens, { signed: false, mode: "words", focus: -1, words });
    assert.deepEqual(range.excluded, [1, 4]);
    assert.equal(range.scale.max, 1);
    const all = scoreRange(row, tokens, { signed: false, mode: "all", focus: -1, words });
    assert.deepEqual(all.excluded, []);
  });

  test("falls back to all tokens when no word has a score", () => {
    const range = scoreRange([0.9, 0, 0, 0, 0.1], tokens, { signed: false, mode: "words", focus: 0 });
    assert.equal(range.covers, "all");
    assert.equal(range.scale.max, 0.9);
    const specialsOnly = scoreRange([0.5, 0.5], ["[CLS]", "[SEP]"], { signed: false, mode: "words", focus: -1 });
    assert.equal(specialsOnly.covers, "all");
    assert.equal(specialsOnly.scale.max, 0.5);
  });

  test("NaN is never beyond, and a repeated special is named once", () => {
    const range = scoreRange([1, 0.5, Number.NaN, 0.2, 1], ["[SEP]", "a", "b", "c", "[SEP]"], { signed: false, mode: "words", focus: -1 });
    assert.ok(!range.beyond(Number.NaN));
    assert.equal(coverageText(range, ["[SEP]", "a", "b", "c", "[SEP]"], -1, "the query"), "range over words; [SEP] excluded");
  });
});
