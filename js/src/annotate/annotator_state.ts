/**
 * Annotator's pure logic (no DOM): marking words, and what each key does.
 *
 * Marks. The marked words are a set; spans are its maximal runs, so marking
 * a word next to a span extends it and unmarking one inside a span splits
 * it. A press on a word and a release on another (a drag) sets every word
 * between them to the opposite of the first word's state: starting on an
 * unmarked word marks the range, starting on a marked one unmarks it. A
 * click (press and release on one word) toggles that word.
 *
 * Keys (with the widget focused; while typing in the note only Enter and
 * Esc act, and the slider keeps its arrow keys):
 *   ←/→          previous/next item
 *   Shift+←/→    move the word cursor (Home/End: first/last word)
 *   Space        mark/unmark the word under the cursor
 *   1-9          pick label 1-9
 *   Enter        save and go to the next item (nothing marked: asks for N)
 *   N            save "no evidence" (nothing marked, on purpose)
 *   A            accept the suggestions (mark them too)
 *   Esc          clear the marks (in the note: leave the note)
 *   Ctrl+Z       undo: restore the item's previous saved revision
 *   Ctrl+Shift+Z, Ctrl+Y   redo
 */
import type { Span } from "./annotator_types";

/** A 0/1 mask over `n` words from spans (spans beyond `n` are clipped). */
export function spansToMask(spans: readonly Span[], n: number): Uint8Array {
  const mask = new Uint8Array(n);
  for (const [start, end] of spans) mask.fill(1, Math.max(0, start), Math.min(n, end));
  return mask;
}

/** The maximal runs of 1s of a mask, as sorted [start, end) spans. */
export function maskToSpans(mask: ArrayLike<number>): Span[] {
  const out: Span[] = [];
  let start = -1;
  for (let i = 0; i <= mask.length; i++) {
    const on = i < mask.length && mask[i] === 1;
    if (on && start < 0) start = i;
    else if (!on && start >= 0) {
      out.push([start, i]);
      start = -1;
    }
  }
  return out;
}

/** Whether word `i` is inside one of the spans. */
export function isMarked(spans: readonly Span[], i: number): boolean {
  return spans.some(([start, end]) => start <= i && i < end);
}

/** Words `a`..`b` (either order, both included) set to `mark`. */
export function markRange(spans: readonly Span[], n: number, a: number, b: number, mark: boolean): Span[] {
  const mask = spansToMask(spans, n);
  const lo = Math.max(0, Math.min(a, b));
  const hi = Math.min(n - 1, Math.max(a, b));
  if (lo <= hi) mask.fill(mark ? 1 : 0, lo, hi + 1);
  return maskToSpans(mask);
}

/** Press on `anchor`, release on `to`: the range gets the opposite of the anchor's state. */
export function dragResult(spans: readonly Span[], n: number, anchor: number, to: number): Span[] {
  return markRange(spans, n, anchor, to, !isMarked(spans, anchor));
}

/** A click on word `i`: mark it, or unmark it when marked. */
export function toggleWord(spans: readonly Span[], n: number, i: number): Span[] {
  return dragResult(spans, n, i, i);
}

/** Same spans, in the same order. */
export function sameSpans(a: readonly Span[], b: readonly Span[]): boolean {
  return a.length === b.length && a.every((s, k) => s[0] === b[k]![0] && s[1] === b[k]![1]);
}

/** What the annotator has in the page for one item. */
export interface Draft {
  spans: readonly Span[];
  label: string;
  note: string;
  confidence: number | null;
}

/** Whether the draft differs from what is stored (nothing stored: whether anything is set). */
export function isDirty(draft: Draft, saved: Draft | null): boolean {
  const base: Draft = saved ?? { spans: [], label: "", note: "", confidence: null };
  return (
    !sameSpans(draft.spans, base.spans) ||
    draft.label !== base.label ||
    draft.note !== base.note ||
    draft.confidence !== base.confidence
  );
}

/** What a key does. */
export type Action =
  | { kind: "previous" }
  | { kind: "next" }
  | { kind: "cursor"; to: "left" | "right" | "first" | "last" }
  | { kind: "toggle" }
  | { kind: "label"; index: number }
  | { kind: "save" }
  | { kind: "no-evidence" }
  | { kind: "accept" }
  | { kind: "undo" }
  | { kind: "redo" }
  | { kind: "clear" }
  | { kind: "leave-note" };

/** The key fields an action depends on (a KeyboardEvent has them). */
export interface KeyLike {
  key: string;
  shiftKey?: boolean;
  ctrlKey?: boolean;
  metaKey?: boolean;
  altKey?: boolean;
}

/** Where the key was pressed: the widget itself, the note, the slider, or a button. */
export type KeyTarget = "widget" | "note" | "slider" | "button";

/**
 * The action of a key, or null to leave it to the browser. `labels` is the
 * number of label buttons (digits beyond it do nothing).
 */
export function keyAction(event: KeyLike, labels: number, target: KeyTarget = "widget"): Action | null {
  const { key } = event;
  if ((event.ctrlKey || event.metaKey) && !event.altKey && target !== "note") {
    const lower = key.toLowerCase();
    if (lower === "z") return event.shiftKey ? { kind: "redo" } : { kind: "undo" };
    if (lower === "y" && !event.shiftKey) return { kind: "redo" };
    return null;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return null; // the browser's and notebook's shortcuts
  if (target === "note") {
    if (key === "Enter") return { kind: "save" };
    if (key === "Escape") return { kind: "leave-note" };
    return null;
  }
  if (key === "Enter") return target === "button" ? null : { kind: "save" };
  if (key === "Escape") return { kind: "clear" };
  if (target === "slider" && !event.shiftKey && ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"].includes(key)) {
    return null; // the slider moves
  }
  if (key === "ArrowLeft") return event.shiftKey ? { kind: "cursor", to: "left" } : { kind: "previous" };
  if (key === "ArrowRight") return event.shiftKey ? { kind: "cursor", to: "right" } : { kind: "next" };
  if (key === "Home") return { kind: "cursor", to: "first" };
  if (key === "End") return { kind: "cursor", to: "last" };
  if (key === " " || key === "Spacebar") return target === "button" ? null : { kind: "toggle" };
  if ((key === "n" || key === "N") && !event.shiftKey) return { kind: "no-evidence" };
  if ((key === "a" || key === "A") && !event.shiftKey) return { kind: "accept" };
  if (/^[1-9]$/.test(key) && !event.shiftKey) {
    const index = Number(key) - 1;
    return index < labels ? { kind: "label", index } : null;
  }
  return null;
}

/** The word part of the page's state: `n` words, the cursor, the marks. */
export interface WordState {
  n: number;
  /** The word under the keyboard cursor (0..n-1). */
  cursor: number;
  spans: Span[];
}

/** The state after a word action (cursor moves, toggle, clear); other actions leave it. */
export function applyWordAction(state: WordState, action: Action): WordState {
  const { n } = state;
  if (n === 0) return state;
  const cursor = Math.min(Math.max(state.cursor, 0), n - 1);
  switch (action.kind) {
    case "cursor": {
      const to = { left: Math.max(0, cursor - 1), right: Math.min(n - 1, cursor + 1), first: 0, last: n - 1 }[action.to];
      return { ...state, cursor: to };
    }
    case "toggle":
      return { ...state, cursor, spans: toggleWord(state.spans, n, cursor) };
    case "clear":
      return { ...state, spans: [] };
    default:
      return state;
  }
}

/** `spans` with the `extra` spans marked too (accepting suggestions). */
export function unionSpans(spans: readonly Span[], extra: readonly Span[], n: number): Span[] {
  const mask = spansToMask(spans, n);
  for (const [start, end] of extra) mask.fill(1, Math.max(0, start), Math.min(n, end));
  return maskToSpans(mask);
}

/** The label a digit picks: labels[index], or "" when the same label is chosen already. */
export function pickLabel(labels: readonly string[], current: string, index: number, toggle = false): string {
  const name = labels[index];
  if (name === undefined) return current;
  return toggle && name === current ? "" : name;
}
