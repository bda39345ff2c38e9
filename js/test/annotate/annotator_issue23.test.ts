import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { progressText, revisionText } from "../../src/annotate/annotator_draw";
import { parseInline, parseMarkdown } from "../../src/annotate/annotator_markdown";
import { keyAction, unionSpans } from "../../src/annotate/annotator_state";
import { ItemTimer } from "../../src/annotate/annotator_timer";
import type { SavedAnnotation } from "../../src/annotate/annotator_types";

describe("undo, redo, no evidence and accept keys", () => {
  test("Ctrl+Z undoes, Ctrl+Shift+Z and Ctrl+Y redo; Cmd too; never in the note", () => {
    assert.deepEqual(keyAction({ key: "z", ctrlKey: true }, 2), { kind: "undo" });
    assert.deepEqual(keyAction({ key: "Z", ctrlKey: true, shiftKey: true }, 2), { kind: "redo" });
    assert.deepEqual(keyAction({ key: "y", ctrlKey: true }, 2), { kind: "redo" });
    assert.deepEqual(keyAction({ key: "z", metaKey: true }, 2), { kind: "undo" });
    assert.equal(keyAction({ key: "z", ctrlKey: true }, 2, "note"), null); // the text field's own undo
    assert.equal(keyAction({ key: "z", ctrlKey: true, altKey: true }, 2), null);
    assert.equal(keyAction({ key: "c", ctrlKey: true }, 2), null); // copy stays the browser's
  });
  test("N saves no evidence, A accepts; not while typing a note", () => {
    assert.deepEqual(keyAction({ key: "n" }, 2), { kind: "no-evidence" });
    assert.deepEqual(keyAction({ key: "a" }, 2), { kind: "accept" });
    assert.equal(keyAction({ key: "n" }, 2, "note"), null);
  });
  test("accepting suggestions marks them too, merged with the marks", () => {
    assert.deepEqual(unionSpans([[0, 1]], [[1, 3], [5, 6]], 6), [[0, 3], [5, 6]]);
    assert.deepEqual(unionSpans([], [[4, 9]], 6), [[4, 6]]);
  });
});

describe("progress and revision lines", () => {
  test("no evidence is counted apart", () => {
    assert.equal(progressText([12, 20, 3]), "12 / 20 done, 3 no evidence");
    assert.equal(progressText([12, 20, 0]), "12 / 20 done");
    assert.equal(progressText([1, 2]), "1 / 2 done");
  });
  test("the revision shown, and what an undo restored", () => {
    const saved = { spans: [], label: "", note: "", confidence: null, revision: 4, saved_at: "", reverted_from: 2 } as SavedAnnotation;
    assert.equal(revisionText(saved), "showing revision 4, restores revision 2");
    assert.equal(revisionText({ ...saved, reverted_from: null }), "showing revision 4");
    assert.equal(revisionText(null), "");
  });
});

describe("time on an item", () => {
  test("from drawn to saved, the hidden time left out", () => {
    let t = 1000;
    const timer = new ItemTimer(() => t);
    timer.start();
    t += 2000;
    timer.visibility(true);
    t += 60000; // another tab
    timer.visibility(false);
    t += 500;
    assert.equal(timer.seconds(), 2.5);
    timer.start(true); // drawn while hidden
    t += 1000;
    assert.equal(timer.seconds(), 0);
    timer.visibility(false);
    t += 1000;
    assert.equal(timer.seconds(), 1);
  });
});

describe("guidelines markdown (a safe subset, all text)", () => {
  test("headings, lists, paragraphs, code and emphasis", () => {
    const blocks = parseMarkdown("# Rules\n\nMark **only** the words.\nKeep it *short*.\n\n- one `x`\n- two\n\n1. first\n2. second\n\n```\n<b>code</b>\n```");
    assert.deepEqual(blocks.map((b) => b.kind), ["heading", "paragraph", "list", "list", "code"]);
    assert.deepEqual(blocks[1], {
      kind: "paragraph",
      inlines: [{ kind: "text", text: "Mark " }, { kind: "strong", text: "only" }, { kind: "text", text: " the words. Keep it " }, { kind: "em", text: "short" }, { kind: "text", text: "." }],
    });
    assert.equal(blocks[2]!.kind === "list" && blocks[2]!.ordered, false);
    assert.equal(blocks[3]!.kind === "list" && blocks[3]!.ordered, true);
    assert.deepEqual(blocks[4], { kind: "code", text: "<b>code</b>" });
  });
  test("HTML in the guidelines stays text; links keep their address as text", () => {
    const hostile = "<img src=x onerror=alert(1)> [click](https://x.test/a)";
    const runs = parseInline(hostile);
    assert.deepEqual(runs, [
      { kind: "text", text: "<img src=x onerror=alert(1)> " },
      { kind: "link", text: "click", href: "https://x.test/a" },
    ]);
  });
});
