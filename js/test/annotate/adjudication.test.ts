import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { disputedChars, keyAction, OneRequest, readFilters, segments, type Outcome, type Timers } from "../../src/annotate/adjudication_state";
import type { AnnotatorRow, CharSpan } from "../../src/annotate/adjudication_types";

const row = (status: AnnotatorRow["status"], spans: CharSpan[] = []): Pick<AnnotatorRow, "status" | "char_spans"> => ({ status, char_spans: spans });

describe("adjudication segments", () => {
  const text = "the keys to the cabinet"; // "keys" 4..8, "to" 9..11

  test("runs are cut at every row's span ends; each row says whether it marks a run", () => {
    const runs = segments(text, [row("saved", [[4, 8]]), row("saved", [[4, 11]])]);
    assert.deepEqual(
      runs.map((r) => [text.slice(r.start, r.end), r.marked, r.count, r.disputed]),
      [
        ["the ", [false, false], 0, false],
        ["keys", [true, true], 2, false],
        [" to", [false, true], 1, true],
        [" the cabinet", [false, false], 0, false],
      ],
    );
    assert.equal(disputedChars(text, runs), 2); // "to": the space is not counted
  });

  test("no evidence marks nothing and counts as an annotation; missing does not count", () => {
    let runs = segments(text, [row("saved", [[4, 8]]), row("no_evidence")]);
    assert.ok(runs.find((r) => r.start === 4)?.disputed);
    runs = segments(text, [row("saved", [[4, 8]]), row("missing")]);
    assert.equal(runs.find((r) => r.start === 4)?.disputed, false);
  });

  test("rows after `compared` (the gold row) are drawn but do not decide what is disputed", () => {
    const runs = segments(text, [row("saved", [[0, 3]]), row("saved", [[0, 3]]), row("saved", [[4, 8]])], 2);
    assert.ok(runs.every((r) => !r.disputed));
    assert.deepEqual(runs.find((r) => r.start === 4)?.marked, [false, false, true]);
  });

  test("characters: a span inside a word is its own run", () => {
    const runs = segments("great", [row("saved", [[0, 3]]), row("saved", [[0, 5]])]);
    assert.deepEqual(runs.map((r) => [r.start, r.end, r.disputed]), [[0, 3, false], [3, 5, true]]);
  });
});

describe("adjudication filter bar and keys", () => {
  const empty = { text: "", label: "", annotator: "", maxF1: "", noEvidence: "" };

  test("reads only what is set", () => {
    assert.deepEqual(readFilters(empty), { filters: {} });
    assert.deepEqual(readFilters({ ...empty, text: "keys", maxF1: "0.5", noEvidence: "yes", annotator: "ana" }), {
      filters: { text: "keys", max_token_f1: 0.5, no_evidence: true, annotator: "ana" },
    });
    assert.deepEqual(readFilters({ ...empty, noEvidence: "no" }), { filters: { no_evidence: false } });
  });

  test("a token F1 outside 0..1 is refused with what to type", () => {
    const read = readFilters({ ...empty, maxF1: "2" });
    assert.ok("error" in read && /from 0 to 1/.test(read.error));
  });

  test("arrows move, not from a text field or with a modifier", () => {
    assert.equal(keyAction("ArrowRight", false, false), "next");
    assert.equal(keyAction("ArrowLeft", false, false), "previous");
    assert.equal(keyAction("ArrowLeft", false, true), null);
    assert.equal(keyAction("ArrowLeft", true, false), null);
    assert.equal(keyAction("a", false, false), null);
  });
});

describe("adjudication requests", () => {
  const manual = (): Timers & { fire(): void } => {
    let fn: (() => void) | null = null;
    return { set: (f) => ((fn = f), 1), clear: () => (fn = null), fire: () => fn?.() };
  };

  test("one at a time, settled by the reply with its number", () => {
    const sent: unknown[] = [];
    const outcomes: Outcome[] = [];
    const timers = manual();
    const r = new OneRequest<{ type: string; index: number }>((m) => sent.push(m), (o) => outcomes.push(o), 1000, timers);
    assert.ok(r.start({ type: "go", index: 2 }));
    assert.equal(r.start({ type: "go", index: 3 }), false);
    assert.equal(r.reply({ type: "shown", request: 99 }), false);
    assert.ok(r.reply({ type: "shown", request: 1 }));
    assert.deepEqual(outcomes, [{ type: "shown", message: "" }]);
    assert.ok(!r.busy);
    r.start({ type: "go", index: 1 });
    timers.fire();
    assert.equal(outcomes[1]?.type, "refused");
    assert.equal(sent.length, 2);
  });

  test("a saved page's refusal echoes the request", () => {
    const outcomes: Outcome[] = [];
    const r = new OneRequest<{ type: string }>(() => undefined, (o) => outcomes.push(o), 1000, manual());
    r.start({ type: "filter" });
    assert.ok(r.reply({ type: "refused", request: { type: "filter", request: 1 }, message: "saved page" }));
    assert.deepEqual(outcomes, [{ type: "refused", message: "saved page" }]);
  });
});
