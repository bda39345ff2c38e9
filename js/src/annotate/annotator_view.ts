/**
 * Annotator (traits: AnnotatorTraits in annotator_types.ts): mark the words
 * of one item at a time that justify its label; every save goes to the
 * kernel's store at once.
 *
 * - Words are chips: click one to mark/unmark it, drag across words to mark
 *   (or, starting on a marked word, unmark) the range (annotator_state.ts).
 *   Every change is synced to `selection` at once, so Python always holds
 *   the page's marks.
 * - Label buttons (keys 1–9), the model's prediction as a hint, a note and
 *   a confidence slider; the score overlay (a coloured bar under each word)
 *   when the kernel sent scores, with a toggle and a method picker.
 * - Enter / Save sends a "save" message; arrows, Skip and "First
 *   unannotated" send "go"/"first" (annotator_messages.ts). While one is out
 *   the page takes no new marks; a refused save leaves the marks as they
 *   are and shows the kernel's message.
 * - Keys: see annotator_state.ts (and the help line in the view).
 *
 * - Save with nothing marked sends nothing: the page asks for an explicit
 *   "No evidence" (button or N), saved with no_evidence. Undo/redo
 *   (Ctrl+Z, Ctrl+Shift+Z / Ctrl+Y, buttons) send "undo"/"redo": the kernel
 *   restores a revision as a new one. Each save carries the seconds spent
 *   on the item (annotator_timer.ts). Guidelines are drawn from markdown as
 *   text nodes (annotator_markdown.ts); suggestions are dashed, A accepts.
 *
 * Test hooks on the root: data-state (ready | busy), data-index (the item
 * drawn), data-item (its id), data-dirty, data-error (the last refusal's
 * text, "" after a success), data-drawn (a counter of item draws),
 * data-asking ("true" while an empty save waits for "No evidence"),
 * data-revision (the saved revision shown), data-granularity.
 */
import type { AnyModel } from "@anywidget/types";

import { buildDom, drawExtras, drawItem, drawLabels, drawMarks, drawOverlay, drawProgress, drawSettings, type Dom } from "./annotator_draw";
import { renderMarkdown } from "./annotator_markdown";
import { ItemTimer } from "./annotator_timer";
import { Requests, type Outcome } from "./annotator_messages";
import {
  applyWordAction,
  dragResult,
  isDirty,
  isMarked,
  keyAction,
  pickLabel,
  spansToMask,
  unionSpans,
  type Draft,
  type KeyTarget,
} from "./annotator_state";
import type { AnnotatorRequest, AnnotatorTraits, ShownItem, Span } from "./annotator_types";
import { decodeMatrix } from "../core/buffers";
import { microtaskScheduler, saveTraits, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import styles from "./annotator.css";
import { useBaseStyles } from "../core/base_styles";

type Model = AnyModel<AnnotatorTraits>;

/** Traits whose change redraws everything but the word chips. */
const STATE_TRAITS = [
  "selection", "label", "note", "confidence", "labels", "saved", "progress", "prediction",
  "methods", "signed", "scores", "shape", "overlay", "selected_method", "status", "count",
  "history", "settings", "suggested",
] as const;

const ASK_NO_EVIDENCE =
  "Nothing is marked. If nothing in this text is evidence, press N (No evidence); otherwise mark the evidence first.";

interface Drag {
  anchor: number;
  to: number;
}

/** Tell the timer when the page is hidden or shown; returns the unlisten. */
function onVisibility(doc: Document, timer: ItemTimer): () => void {
  const listener = (): void => timer.visibility(doc.hidden);
  doc.addEventListener("visibilitychange", listener);
  return () => doc.removeEventListener("visibilitychange", listener);
}

export function renderAnnotator({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const dom: Dom = buildDom();
  const { root } = dom;
  useBaseStyles(root);
  root.prepend(styleElement(styles));
  el.appendChild(root);

  let item: ShownItem | null = null;
  let cursor = 0;
  let drag: Drag | null = null;
  let error = "";
  let asking = false;
  let drawn = 0;
  const timer = new ItemTimer();

  const currentItem = (): ShownItem | null => {
    const value = model.get("item") as ShownItem | Record<string, never>;
    return value && Array.isArray((value as ShownItem).words) ? (value as ShownItem) : null;
  };
  const spans = (): Span[] => (model.get("selection") ?? []).map((s) => [s[0], s[1]] as Span);
  const draft = (): Draft => ({
    spans: spans(),
    label: model.get("label") ?? "",
    note: model.get("note") ?? "",
    confidence: model.get("confidence") ?? null,
  });
  const savedDraft = (): Draft | null => {
    const saved = model.get("saved");
    return saved ? { spans: saved.spans, label: saved.label, note: saved.note, confidence: saved.confidence } : null;
  };

  const requests = new Requests(
    (message: AnnotatorRequest) => model.send(message),
    (outcome: Outcome) => settled(outcome),
  );

  const statusText = (): string => {
    if (requests.busy) return requests.pending?.type === "save" ? "Saving…" : "Loading…";
    if (error) return `Not done: ${error}`;
    if (asking) return ASK_NO_EVIDENCE;
    return model.get("status") ?? "";
  };

  const drawState = (newItem = false): void => {
    const n = item?.words.length ?? 0;
    const current = draft();
    let preview: { lo: number; hi: number; mark: boolean } | null = null;
    if (drag) preview = { lo: Math.min(drag.anchor, drag.to), hi: Math.max(drag.anchor, drag.to), mark: !isMarked(current.spans, drag.anchor) };
    const suggested = model.get("suggested") ?? [];
    drawMarks(dom, spansToMask(current.spans, n), cursor, preview, suggested.length ? spansToMask(suggested, n) : null);
    drawSettings(dom, model.get("settings") ?? {}, renderMarkdown);
    drawLabels(dom, model.get("labels") ?? [], current.label, model.get("prediction") ?? {});
    drawExtras(dom, current.note, current.confidence, newItem);
    drawProgress(dom, model.get("progress") ?? [0, 0], model.get("saved") ?? null, isDirty(current, savedDraft()), model.get("history") ?? {});
    let rows: Float32Array[] = [];
    try {
      const matrix = decodeMatrix(model.get("scores"), model.get("shape") ?? [0, 0]);
      if (matrix.cols === n) rows = Array.from({ length: matrix.rows }, (_, i) => matrix.row(i));
    } catch (err) {
      console.warn("attnwidget annotator: scores not drawn:", err);
    }
    drawOverlay(dom, model.get("methods") ?? [], model.get("signed") ?? [], rows, model.get("selected_method") ?? "", model.get("overlay") ?? true);
    root.dataset.state = requests.busy ? "busy" : "ready";
    root.dataset.error = error;
    root.dataset.asking = asking ? "true" : "false";
    dom.status.classList.toggle("attnw-ann-ask", asking && !error && !requests.busy);
    dom.note.readOnly = requests.busy;
    dom.status.textContent = statusText();
    dom.status.classList.toggle("attnw-ann-error", Boolean(error) && !requests.busy);
  };

  const drawAll = (): void => {
    const next = currentItem();
    const changed = next?.index !== item?.index || next?.id !== item?.id;
    item = next;
    if (changed) {
      cursor = 0;
      drag = null;
      asking = false;
      timer.start(root.ownerDocument.hidden);
    }
    drawItem(dom, item, model.get("count") ?? 0);
    drawn += 1;
    root.dataset.index = item ? String(item.index) : "";
    root.dataset.item = item?.id ?? "";
    root.dataset.drawn = String(drawn);
    drawState(changed);
  };

  const onFail = (err: unknown): void => {
    console.error("attnwidget annotator:", err);
    dom.status.textContent = `attnwidget: cannot draw this item: ${err instanceof Error ? err.message : String(err)}`;
  };
  const scheduleItem = microtaskScheduler(drawAll, onFail);
  const scheduleState = microtaskScheduler(() => drawState(), onFail);

  function settled(outcome: Outcome): void {
    error = outcome.kind === "refused" ? outcome.message : "";
    drawState();
  }

  /** Change the page's draft: synced to Python at once, drawn now. */
  const setDraft = (patch: Partial<Pick<AnnotatorTraits, "selection" | "label" | "note" | "confidence">>): void => {
    if (patch.selection && patch.selection.length) asking = false;
    saveTraits(model, patch);
    drawState();
  };

  const save = (advance: boolean, noEvidence = false): void => {
    if (!item || requests.busy) return;
    const d = draft();
    error = "";
    if (noEvidence && d.spans.length) {
      error = "words are marked: clear them (Esc) before saving “No evidence”";
      drawState();
      return;
    }
    if (!noEvidence && !d.spans.length) {
      asking = true; // an empty save stores nothing: ask for the explicit choice
      drawState();
      return;
    }
    asking = false;
    requests.save({
      index: item.index, item_id: item.id, spans: d.spans.map((s) => [s[0], s[1]] as Span), label: d.label,
      note: d.note, confidence: d.confidence, no_evidence: noEvidence, seconds: timer.seconds(), advance,
    });
    drawState();
  };
  const step = (kind: "undo" | "redo"): void => {
    if (!item || requests.busy) return;
    error = "";
    asking = false;
    requests.step(kind, item.index, item.id);
    drawState();
  };
  const accept = (): void => {
    if (!item || requests.busy) return;
    const suggested = model.get("suggested") ?? [];
    if (suggested.length) setDraft({ selection: unionSpans(spans(), suggested, item.words.length) });
  };
  const go = (index: number): void => {
    const count = model.get("count") ?? 0;
    if (!item || requests.busy || index === item.index || index < 0 || index >= count) return;
    error = "";
    requests.go(index);
    drawState();
  };
  const first = (): void => {
    if (requests.busy) return;
    error = "";
    requests.first();
    drawState();
  };

  // -- words: click and drag ----------------------------------------------------

  const chipAt = (target: EventTarget | null): number | null => {
    const chip = (target as Element | null)?.closest?.(".attnw-ann-word") as HTMLElement | null;
    if (!chip || !dom.words.contains(chip)) return null;
    const i = Number(chip.dataset.index);
    return Number.isInteger(i) ? i : null;
  };
  const onPointerDown = (event: PointerEvent): void => {
    const i = chipAt(event.target);
    if (i === null || event.button !== 0 || requests.busy) return;
    event.preventDefault(); // no text selection, and keep the focus on the widget
    root.focus({ preventScroll: true });
    (event.target as Element).releasePointerCapture?.(event.pointerId); // touch: let moves reach other chips
    drag = { anchor: i, to: i };
    cursor = i;
    drawState();
  };
  const onPointerMove = (event: PointerEvent): void => {
    if (!drag) return;
    const i = chipAt(root.ownerDocument.elementFromPoint(event.clientX, event.clientY));
    if (i !== null && i !== drag.to) {
      drag.to = i;
      drawState();
    }
  };
  const onPointerUp = (): void => {
    if (!drag || !item) return;
    const { anchor, to } = drag;
    drag = null;
    cursor = to;
    setDraft({ selection: dragResult(spans(), item.words.length, anchor, to) });
  };

  // -- controls -------------------------------------------------------------------

  const onClick = (event: MouseEvent): void => {
    const target = event.target as Element | null;
    const labelButton = target?.closest?.(".attnw-ann-label") as HTMLElement | null;
    if (labelButton && dom.labels.contains(labelButton)) {
      if (requests.busy) return;
      const labels = model.get("labels") ?? [];
      setDraft({ label: pickLabel(labels, model.get("label") ?? "", labels.indexOf(labelButton.dataset.label ?? ""), true) });
      return;
    }
    if (!item) return;
    if (target?.closest?.(".attnw-ann-previous")) go(item.index - 1);
    else if (target?.closest?.(".attnw-ann-skip")) go(item.index + 1);
    else if (target?.closest?.(".attnw-ann-first")) first();
    else if (target?.closest?.(".attnw-ann-save")) save(true);
    else if (target?.closest?.(".attnw-ann-no-evidence")) save(true, true);
    else if (target?.closest?.(".attnw-ann-undo")) step("undo");
    else if (target?.closest?.(".attnw-ann-redo")) step("redo");
    else if (target?.closest?.(".attnw-ann-accept")) accept();
    else if (target?.closest?.(".attnw-ann-confidence-clear") && !requests.busy) setDraft({ confidence: null });
  };
  // Buttons do not take the focus from the widget: Space and Enter stay its keys.
  const onMouseDown = (event: MouseEvent): void => {
    if ((event.target as Element | null)?.closest?.("button")) {
      event.preventDefault();
      root.focus({ preventScroll: true });
    }
  };
  const onNote = (): void => {
    if (!requests.busy) setDraft({ note: dom.note.value });
  };
  const onConfidence = (): void => {
    if (!requests.busy) setDraft({ confidence: Number(dom.confidence.value) });
  };
  const onOverlay = (): void => saveTraits(model, { overlay: dom.overlayToggle.checked });
  const onMethod = (): void => saveTraits(model, { selected_method: dom.method.value });

  const keyTarget = (target: EventTarget | null): KeyTarget => {
    if (target === dom.note) return "note";
    if (target === dom.confidence || target === dom.method) return "slider";
    if (target instanceof Element && target !== root && target.closest("button, input, select, label, summary")) return "button";
    return "widget";
  };
  const onKey = (event: KeyboardEvent): void => {
    const action = keyAction(event, (model.get("labels") ?? []).length, keyTarget(event.target));
    if (!action || !item) return;
    event.preventDefault();
    event.stopPropagation(); // keep Jupyter's command-mode shortcuts (1-9, arrows) out of it
    switch (action.kind) {
      case "previous":
        return go(item.index - 1);
      case "next":
        return go(item.index + 1);
      case "save":
        return save(true);
      case "no-evidence":
        return save(true, true);
      case "undo":
      case "redo":
        return step(action.kind);
      case "accept":
        return accept();
      case "leave-note":
        root.focus({ preventScroll: true });
        return;
      case "label": {
        if (requests.busy) return;
        return setDraft({ label: pickLabel(model.get("labels") ?? [], model.get("label") ?? "", action.index) });
      }
      default: {
        if (requests.busy) return;
        const before = spans();
        const next = applyWordAction({ n: item.words.length, cursor, spans: before }, action);
        cursor = next.cursor;
        if (next.spans !== before) setDraft({ selection: next.spans });
        else drawState();
        if (action.kind === "cursor") dom.chips[cursor]?.scrollIntoView?.({ block: "nearest", inline: "nearest" });
      }
    }
  };

  const onMessage = (content: unknown): void => {
    requests.reply(content);
  };

  const doc = root.ownerDocument;
  const listeners = new Listeners()
    .add(() => root.remove())
    .on(root, "pointerdown", onPointerDown)
    .on(doc, "pointermove", onPointerMove)
    .on(doc, "pointerup", onPointerUp)
    .on(root, "click", onClick)
    .on(root, "mousedown", onMouseDown)
    .on(root, "keydown", onKey)
    .on(dom.note, "input", onNote)
    .on(dom.confidence, "input", onConfidence)
    .on(dom.overlayToggle, "change", onOverlay)
    .on(dom.method, "change", onMethod)
    .add(onVisibility(doc, timer))
    .model(model, "msg:custom", onMessage)
    .traits(model, ["item"], scheduleItem)
    .traits(model, STATE_TRAITS, scheduleState)
    .add(() => requests.dispose());
  try {
    drawAll();
  } catch (err) {
    onFail(err);
  }

  return listeners.dispose;
}
