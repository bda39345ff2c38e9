import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { predictionText } from "../../src/annotate/annotator_draw";
import { NO_REPLY, Requests, type Outcome, type Timers } from "../../src/annotate/annotator_messages";
import {
  applyWordAction,
  dragResult,
  isDirty,
  isMarked,
  keyAction,
  markRange,
  maskToSpans,
  pickLabel,
  sameSpans,
  spansToMask,
  toggleWord,
  type Action,
  type WordState,
} from "../../src/annotate/annotator_state";
import type { AnnotatorRequest, Span } from "../../src/annotate/annotator_types";

describe("spans and masks", () => {
  test("a mask's runs are its spans, touching runs merged", () => {
    assert.deepEqual(maskToSpans([0, 1, 1, 0, 1]), [[1, 3], [4, 5]]);
    assert.deepEqual(maskToSpans([1, 1, 1]), [[0, 3]]);
    assert.deepEqual(maskToSpans([]), []);
    assert.deepEqual(Array.from(spansToMask([[1, 3], [3, 4]], 5)), [0, 1, 1, 1, 0]);
    assert.deepEqual(maskToSpans(spansToMask([[1, 3], [3, 4]], 5)), [[1, 4]]);
  });

  test("spans beyond the words are clipped", () => {
    assert.deepEqual(Array.from(spansToMask([[-2, 1], [3, 9]], 4)), [1, 0, 0, 1]);
  });

  test("isMarked and sameSpans", () => {
    assert.ok(isMarked([[2, 4]], 3));
    assert.ok(!isMarked([[2, 4]], 4)); // end exclusive
    assert.ok(sameSpans([[1, 2]], [[1, 2]]));
    assert.ok(!sameSpans([[1, 2]], [[1, 3]]));
    assert.ok(!sameSpans([[1, 2]], []));
  });
});

describe("clicking and dragging words", () => {
  const n = 8;

  test("a click marks a word, a second click unmarks it", () => {
    let spans: Span[] = [];
    spans = toggleWord(spans, n, 3);
    assert.deepEqual(spans, [[3, 4]]);
    spans = toggleWord(spans, n, 3);
    assert.deepEqual(spans, []);
  });

  test("marking next to a span extends it; unmarking inside one splits it", () => {
    let spans: Span[] = [[2, 4]];
    spans = toggleWord(spans, n, 4);
    assert.deepEqual(spans, [[2, 5]]);
    spans = toggleWord(spans, n, 1);
    assert.deepEqual(spans, [[1, 5]]);
    spans = toggleWord(spans, n, 3);
    assert.deepEqual(spans, [[1, 3], [4, 5]]);
  });

  test("a drag from an unmarked word marks the range, in either direction", () => {
    assert.deepEqual(dragResult([], n, 1, 4), [[1, 5]]);
    assert.deepEqual(dragResult([], n, 4, 1), [[1, 5]]);
    // Across an existing span: all one span now.
    assert.deepEqual(dragResult([[3, 4], [6, 7]], n, 2, 6), [[2, 7]]);
  });

  test("a drag from a marked word unmarks the range", () => {
    assert.deepEqual(dragResult([[1, 6]], n, 2, 3), [[1, 2], [4, 6]]);
    assert.deepEqual(dragResult([[1, 6]], n, 5, 0), []);
    assert.deepEqual(dragResult([[0, 2], [4, 6]], n, 5, 1), [[0, 1]]);
  });

  test("markRange clamps to the words", () => {
    assert.deepEqual(markRange([], 3, -4, 9, true), [[0, 3]]);
    assert.deepEqual(markRange([[0, 3]], 3, 1, 1, false), [[0, 1], [2, 3]]);
  });
});

describe("keys", () => {
  const act = (key: string, extra: Partial<KeyboardEvent> = {}, labels = 3) =>
    keyAction({ key, ...extra } as { key: string }, labels);

  test("the documented keys", () => {
    assert.deepEqual(act("ArrowLeft"), { kind: "previous" });
    assert.deepEqual(act("ArrowRight"), { kind: "next" });
    assert.deepEqual(act("ArrowLeft", { shiftKey: true }), { kind: "cursor", to: "left" });
    assert.deepEqual(act("ArrowRight", { shiftKey: true }), { kind: "cursor", to: "right" });
    assert.deepEqual(act("Home"), { kind: "cursor", to: "first" });
    assert.deepEqual(act("End"), { kind: "cursor", to: "last" });
    assert.deepEqual(act(" "), { kind: "toggle" });
    assert.deepEqual(act("1"), { kind: "label", index: 0 });
    assert.deepEqual(act("3"), { kind: "label", index: 2 });
    assert.deepEqual(act("Enter"), { kind: "save" });
    assert.deepEqual(act("Escape"), { kind: "clear" });
  });

  test("digits beyond the labels, other keys and modified keys do nothing", () => {
    assert.equal(act("4"), null);
    assert.equal(act("0"), null);
    assert.equal(act("1", {}, 0), null);
    assert.equal(act("q"), null); // (A accepts suggestions, N saves "no evidence")
    assert.equal(act("ArrowRight", { ctrlKey: true }), null);
    assert.equal(act("Enter", { metaKey: true }), null);
    assert.equal(act("1", { altKey: true }), null);
  });

  test("in the note only Enter and Esc act; the slider keeps its arrows; buttons their Space/Enter", () => {
    assert.deepEqual(keyAction({ key: "Enter" }, 3, "note"), { kind: "save" });
    assert.deepEqual(keyAction({ key: "Escape" }, 3, "note"), { kind: "leave-note" });
    for (const key of [" ", "1", "ArrowLeft", "a"]) assert.equal(keyAction({ key }, 3, "note"), null, key);
    assert.equal(keyAction({ key: "ArrowRight" }, 3, "slider"), null);
    assert.deepEqual(keyAction({ key: "ArrowRight", shiftKey: true }, 3, "slider"), { kind: "cursor", to: "right" });
    assert.deepEqual(keyAction({ key: "Enter" }, 3, "slider"), { kind: "save" });
    assert.equal(keyAction({ key: " " }, 3, "button"), null);
    assert.equal(keyAction({ key: "Enter" }, 3, "button"), null);
    assert.deepEqual(keyAction({ key: "2" }, 3, "button"), { kind: "label", index: 1 });
  });

  test("the word cursor: moves within the words, Space toggles under it, Esc clears", () => {
    let state: WordState = { n: 4, cursor: 0, spans: [] };
    const run = (...actions: Action[]) => {
      for (const action of actions) state = applyWordAction(state, action);
    };
    run({ kind: "cursor", to: "left" });
    assert.equal(state.cursor, 0); // stays at the first word
    run({ kind: "cursor", to: "right" }, { kind: "toggle" }, { kind: "cursor", to: "right" }, { kind: "toggle" });
    assert.deepEqual(state, { n: 4, cursor: 2, spans: [[1, 3]] });
    run({ kind: "cursor", to: "last" }, { kind: "cursor", to: "right" });
    assert.equal(state.cursor, 3);
    run({ kind: "cursor", to: "first" }, { kind: "cursor", to: "right" }, { kind: "toggle" });
    assert.deepEqual(state.spans, [[2, 3]]);
    run({ kind: "clear" });
    assert.deepEqual(state.spans, []);
    const same = applyWordAction(state, { kind: "save" });
    assert.equal(same, state); // not a word action
    const empty: WordState = { n: 0, cursor: 0, spans: [] };
    assert.equal(applyWordAction(empty, { kind: "toggle" }), empty);
  });

  test("a cursor past the words (a shorter next item) is brought back", () => {
    const state = applyWordAction({ n: 3, cursor: 9, spans: [] }, { kind: "toggle" });
    assert.deepEqual(state, { n: 3, cursor: 2, spans: [[2, 3]] });
  });

  test("labels: a digit sets one, a button click on the chosen one clears it", () => {
    const labels = ["pos", "neg"];
    assert.equal(pickLabel(labels, "", 1), "neg");
    assert.equal(pickLabel(labels, "neg", 1), "neg");
    assert.equal(pickLabel(labels, "neg", 1, true), "");
    assert.equal(pickLabel(labels, "neg", 0, true), "pos");
    assert.equal(pickLabel(labels, "neg", 5), "neg");
  });
});

describe("unsaved changes", () => {
  const base = { spans: [[1, 2]] as Span[], label: "pos", note: "", confidence: 0.5 };
  test("a draft equal to the saved one is not dirty; any change is", () => {
    assert.ok(!isDirty(base, { ...base, spans: [[1, 2]] }));
    assert.ok(isDirty({ ...base, spans: [[1, 3]] }, base));
    assert.ok(isDirty({ ...base, label: "neg" }, base));
    assert.ok(isDirty({ ...base, note: "x" }, base));
    assert.ok(isDirty({ ...base, confidence: null }, base));
  });
  test("with nothing saved, a draft is dirty once anything is set", () => {
    assert.ok(!isDirty({ spans: [], label: "", note: "", confidence: null }, null));
    assert.ok(isDirty(base, null));
  });
});

describe("requests to the kernel", () => {
  class FakeTimers implements Timers {
    pending: (() => void)[] = [];
    set(fn: () => void): unknown {
      this.pending.push(fn);
      return fn;
    }
    clear(handle: unknown): void {
      this.pending = this.pending.filter((f) => f !== handle);
    }
    fire(): void {
      for (const fn of this.pending.splice(0)) fn();
    }
  }
  const setup = () => {
    const sent: AnnotatorRequest[] = [];
    const outcomes: Outcome[] = [];
    const timers = new FakeTimers();
    const requests = new Requests((m) => sent.push(m), (o) => outcomes.push(o), 1000, timers);
    return { sent, outcomes, timers, requests };
  };
  const fields = { index: 2, item_id: "r2", spans: [[0, 1]] as Span[], label: "pos", note: "", confidence: null, no_evidence: false, seconds: 1.5, advance: true };

  test("one request at a time, numbered; its reply settles it", () => {
    const { sent, outcomes, requests } = setup();
    assert.ok(requests.save(fields));
    assert.ok(requests.busy);
    assert.ok(!requests.go(3), "a second request waits");
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0], { type: "save", request: 1, ...fields });
    assert.ok(!requests.reply({ type: "saved", request: 99, index: 2, item_id: "r2", revision: 1, progress: [1, 5] }));
    assert.ok(requests.busy, "a reply to another request is ignored");
    assert.ok(requests.reply({ type: "saved", request: 1, index: 2, item_id: "r2", revision: 1, progress: [1, 5] }));
    assert.ok(!requests.busy);
    assert.equal(outcomes[0]!.kind, "saved");
    assert.ok(requests.go(3));
    assert.deepEqual(sent[1], { type: "go", request: 2, index: 3 });
    assert.ok(requests.reply({ type: "shown", request: 2, index: 3 }));
    assert.ok(requests.first());
    assert.deepEqual(sent[2], { type: "first", request: 3 });
  });

  test("a refusal keeps the message; a saved page's answer (holding the request) refuses too", () => {
    const { outcomes, requests } = setup();
    requests.save(fields);
    requests.reply({ type: "refused", request: 1, index: 2, message: "label 'x' is not one of" });
    assert.deepEqual(outcomes[0], { kind: "refused", request: { type: "save", request: 1, ...fields }, message: "label 'x' is not one of" });
    requests.go(1);
    requests.reply({ type: "refused", message: "this is a saved page", request: { type: "go", request: 7, index: 1 } });
    assert.ok(requests.busy, "another request's answer");
    requests.reply({ type: "refused", message: "this is a saved page", request: { type: "go", request: 2, index: 1 } });
    assert.equal(outcomes[1]!.kind, "refused");
    assert.ok(!requests.busy);
    assert.ok(!requests.reply({ type: "saved", request: 1 }), "nothing is out: ignored");
    assert.ok(!requests.reply(null));
  });

  test("no answer: refused after the timeout, so the page never stays blocked", () => {
    const { outcomes, requests, timers } = setup();
    requests.save(fields);
    timers.fire();
    assert.deepEqual(outcomes.map((o) => o.kind), ["refused"]);
    assert.equal((outcomes[0] as { message: string }).message, NO_REPLY);
    assert.ok(!requests.busy);
    requests.go(1);
    requests.reply({ type: "shown", request: 2, index: 1 });
    timers.fire(); // cleared with the reply: no second outcome
    assert.equal(outcomes.length, 2);
  });

  test("a send that throws is a refusal, not a stuck page", () => {
    const outcomes: Outcome[] = [];
    const requests = new Requests(() => {
      throw new Error("comm closed");
    }, (o) => outcomes.push(o), 1000, new FakeTimers());
    requests.go(1);
    assert.equal(outcomes[0]!.kind, "refused");
    assert.ok(!requests.busy);
  });
});

test("the prediction hint reads as the views format numbers", () => {
  assert.equal(predictionText({}), "");
  assert.equal(predictionText({ label: "plural", probability: 0.93125 }), "model: plural (93.1%)");
  assert.equal(predictionText({ label: "pos", probability: 0.5, truncated: true }), "model: pos (50%), first tokens only");
});
