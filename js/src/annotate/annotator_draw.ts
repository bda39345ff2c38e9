/**
 * Annotator's DOM: the elements (built once) and the functions that draw the
 * item, the marks, the labels, the overlay and the progress into them. Every
 * word, label, note and id goes in as text (dom.ts `h`), never as HTML.
 */
import { css, scaleFor } from "../core/colors";
import { clear, displayToken, h } from "../core/dom";
import { formatNumber, formatPercent } from "../core/format";
import type { HistoryState, Prediction, SavedAnnotation, Settings, ShownItem } from "./annotator_types";

export interface Dom {
  root: HTMLElement;
  bar: HTMLProgressElement;
  progressText: HTMLElement;
  position: HTMLElement;
  previous: HTMLButtonElement;
  skip: HTMLButtonElement;
  first: HTMLButtonElement;
  save: HTMLButtonElement;
  noEvidence: HTMLButtonElement;
  undo: HTMLButtonElement;
  redo: HTMLButtonElement;
  accept: HTMLButtonElement;
  queue: HTMLElement;
  guidelines: HTMLDetailsElement;
  guidelinesBody: HTMLElement;
  guidelinesTitle: HTMLElement;
  warning: HTMLElement;
  revision: HTMLElement;
  pair: HTMLElement;
  words: HTMLElement;
  labels: HTMLElement;
  hint: HTMLElement;
  note: HTMLInputElement;
  confidence: HTMLInputElement;
  confidenceText: HTMLElement;
  confidenceClear: HTMLButtonElement;
  overlayRow: HTMLElement;
  overlayToggle: HTMLInputElement;
  method: HTMLSelectElement;
  legend: HTMLElement;
  saved: HTMLElement;
  status: HTMLElement;
  /** The word chips of the item drawn. */
  chips: HTMLElement[];
}

export const KEYS_HELP =
  "Keys: ←/→ previous/next item · Shift+←/→ move the cursor · Space mark/unmark it · " +
  "1–9 label · Enter save and next · N no evidence · A accept suggestions · Esc clear the marks · " +
  "Ctrl+Z undo · Ctrl+Shift+Z / Ctrl+Y redo. Click or drag across words to mark them.";

/** Shown above the words while suggestions are on. */
export const SUGGEST_WARNING =
  "Suggestions are on: the dashed words are a model's top tokens. They anchor judgement — " +
  "mark what YOU see as evidence; accept (A) only what you agree with.";

const button = (text: string, className: string, title: string): HTMLButtonElement =>
  h("button", { className: `attnw-ann-button ${className}`, text, attrs: { type: "button", title } });

/** Build the view's elements (empty: the draw functions fill them). */
export function buildDom(): Dom {
  const bar = h("progress", { className: "attnw-ann-bar", attrs: { max: 1, value: 0, "aria-label": "Progress" } });
  const progressText = h("span", { className: "attnw-ann-progress-text" });
  const position = h("span", { className: "attnw-ann-position" });
  const previous = button("← Previous", "attnw-ann-previous", "Previous item (←)");
  const skip = button("Skip →", "attnw-ann-skip", "Next item without saving (→)");
  const first = button("First unannotated", "attnw-ann-first", "Jump to the first item not saved yet");
  const save = button("Save ⏎", "attnw-ann-save", "Save and go to the next item (Enter)");
  const noEvidence = button("No evidence", "attnw-ann-no-evidence", "Save: nothing in this text is evidence (N)");
  const undo = button("↶ Undo", "attnw-ann-undo", "Restore the previous saved revision (Ctrl+Z)");
  const redo = button("↷ Redo", "attnw-ann-redo", "Go forward again (Ctrl+Shift+Z or Ctrl+Y)");
  const accept = button("Accept suggestions", "attnw-ann-accept", "Mark the suggested words too (A)");
  const queue = h("span", { className: "attnw-ann-queue" });
  const guidelinesTitle = h("summary", { className: "attnw-ann-guidelines-title", text: "Guidelines" });
  const guidelinesBody = h("div", { className: "attnw-ann-guidelines-body" });
  const guidelines = h("details", { className: "attnw-ann-guidelines" }, [guidelinesTitle, guidelinesBody]);
  const warning = h("div", { className: "attnw-ann-warning", text: SUGGEST_WARNING, attrs: { role: "note" } });
  const revision = h("span", { className: "attnw-ann-revision" });
  const pair = h("div", { className: "attnw-ann-pair" });
  const words = h("div", { className: "attnw-ann-words", attrs: { role: "group", "aria-label": "Words (click or drag to mark)" } });
  const labels = h("div", { className: "attnw-ann-labels", attrs: { role: "group", "aria-label": "Label" } });
  const hint = h("span", { className: "attnw-ann-hint" });
  const note = h("input", { className: "attnw-ann-note", attrs: { type: "text", placeholder: "Note (optional)", "aria-label": "Note" } });
  const confidence = h("input", {
    className: "attnw-ann-confidence",
    attrs: { type: "range", min: 0, max: 1, step: 0.05, value: 0.5, "aria-label": "Confidence" },
  });
  const confidenceText = h("span", { className: "attnw-ann-confidence-text" });
  const confidenceClear = button("×", "attnw-ann-confidence-clear", "No confidence given");
  const overlayToggle = h("input", { className: "attnw-ann-overlay-toggle", attrs: { type: "checkbox" } });
  const method = h("select", { className: "attnw-ann-method", attrs: { "aria-label": "Method of the overlay" } });
  const legend = h("span", { className: "attnw-ann-legend" });
  const overlayRow = h("div", { className: "attnw-ann-overlay" }, [
    h("label", { className: "attnw-control" }, [overlayToggle, h("span", { text: " model scores" })]),
    method,
    legend,
  ]);
  const saved = h("span", { className: "attnw-ann-saved" });
  const status = h("div", { className: "attnw-status attnw-ann-status", attrs: { "aria-live": "polite" } });
  const root = h(
    "div",
    {
      className: "attnw attnw-annotator",
      // data-lm-suppress-shortcuts: JupyterLab leaves the keys (1-9, arrows, Enter) to the widget.
      attrs: { tabindex: 0, role: "application", "aria-label": "Annotator", "data-state": "loading", "data-lm-suppress-shortcuts": "true" },
    },
    [
      h("div", { className: "attnw-ann-head" }, [bar, progressText, queue, position, saved, revision]),
      guidelines,
      h("div", { className: "attnw-ann-nav" }, [previous, skip, first, save, noEvidence, undo, redo, accept]),
      warning,
      pair,
      words,
      h("div", { className: "attnw-ann-label-row" }, [h("span", { className: "attnw-ann-caption", text: "Label" }), labels, hint]),
      h("div", { className: "attnw-ann-extra" }, [
        note,
        h("label", { className: "attnw-control attnw-ann-confidence-box" }, [h("span", { text: "Confidence " }), confidence, confidenceText]),
        confidenceClear,
      ]),
      overlayRow,
      status,
      h("div", { className: "attnw-ann-keys", text: KEYS_HELP }),
    ],
  );
  return {
    root, bar, progressText, position, previous, skip, first, save, noEvidence, undo, redo, accept, queue,
    guidelines, guidelinesBody, guidelinesTitle, warning, revision, pair, words, labels, hint, note, confidence,
    confidenceText, confidenceClear, overlayRow, overlayToggle, method, legend, saved, status, chips: [],
  };
}

/** Draw a new item's words (one chip each) and its header. */
export function drawItem(dom: Dom, item: ShownItem | null, count: number): void {
  clear(dom.words);
  dom.chips = [];
  if (!item) {
    dom.position.textContent = "";
    dom.pair.textContent = "";
    return;
  }
  const fragment = document.createDocumentFragment();
  const gaps = item.gaps;
  item.words.forEach((word, i) => {
    const chip = h("span", { className: "attnw-ann-word", text: gaps ? word : displayToken(word), attrs: { "data-index": i } });
    dom.chips.push(chip);
    fragment.appendChild(chip);
    const gap = gaps ? (gaps[i] ?? "") : " ";
    if (gap) fragment.appendChild(document.createTextNode(gap));
  });
  dom.words.appendChild(fragment);
  const data = item.label ? ` · data label ${JSON.stringify(item.label)}` : "";
  dom.position.textContent = `Item ${item.index + 1} of ${count} · id ${JSON.stringify(item.id)}${data}`;
  dom.pair.textContent = item.text_pair ? `Paired text: ${item.text_pair}` : "";
  dom.pair.hidden = !item.text_pair;
  dom.previous.disabled = item.index <= 0;
  dom.skip.disabled = item.index >= count - 1;
}

/** Mark the chips of the mask (1: marked), the cursor and a drag's preview range. */
export function drawMarks(
  dom: Dom,
  mask: Uint8Array,
  cursor: number,
  preview: { lo: number; hi: number; mark: boolean } | null,
  suggested: Uint8Array | null = null,
): void {
  dom.chips.forEach((chip, i) => {
    chip.classList.toggle("attnw-suggested", suggested !== null && suggested[i] === 1);
    let on = mask[i] === 1;
    const inPreview = preview !== null && preview.lo <= i && i <= preview.hi;
    if (inPreview) on = preview!.mark;
    chip.classList.toggle("attnw-marked", on);
    chip.classList.toggle("attnw-span-start", on && (i === 0 || !markedAt(mask, preview, i - 1)));
    chip.classList.toggle("attnw-span-end", on && (i === dom.chips.length - 1 || !markedAt(mask, preview, i + 1)));
    chip.classList.toggle("attnw-preview", inPreview);
    chip.classList.toggle("attnw-cursor", i === cursor);
    chip.setAttribute("aria-pressed", on ? "true" : "false");
  });
}

function markedAt(mask: Uint8Array, preview: { lo: number; hi: number; mark: boolean } | null, i: number): boolean {
  if (preview && preview.lo <= i && i <= preview.hi) return preview.mark;
  return mask[i] === 1;
}

/** The label buttons: the chosen one pressed, the model's prediction hinted. */
export function drawLabels(dom: Dom, labels: readonly string[], chosen: string, prediction: Prediction): void {
  if (dom.labels.childElementCount !== labels.length || labels.some((l, k) => (dom.labels.children[k] as HTMLElement).dataset.label !== l)) {
    clear(dom.labels);
    labels.forEach((name, k) => {
      const key = k < 9 ? `${k + 1} ` : "";
      const b = h("button", {
        className: "attnw-ann-button attnw-ann-label",
        attrs: { type: "button", "data-label": name, title: k < 9 ? `Label ${JSON.stringify(name)} (key ${k + 1})` : name },
      }, [h("span", { className: "attnw-ann-key", text: key }), h("span", { text: name })]);
      dom.labels.appendChild(b);
    });
  }
  for (const child of Array.from(dom.labels.children) as HTMLElement[]) {
    const name = child.dataset.label ?? "";
    child.classList.toggle("attnw-active", name === chosen);
    child.setAttribute("aria-pressed", name === chosen ? "true" : "false");
    child.classList.toggle("attnw-predicted", prediction.label !== undefined && name === prediction.label);
  }
  if (!labels.length) dom.labels.textContent = "";
  dom.hint.textContent = predictionText(prediction);
}

/** "model: plural (93.1%)", or "" without a prediction. */
export function predictionText(prediction: Prediction): string {
  if (prediction.label === undefined) return "";
  const p = typeof prediction.probability === "number" ? ` (${formatPercent(prediction.probability)})` : "";
  const cut = prediction.truncated ? ", first tokens only" : "";
  return `model: ${prediction.label}${p}${cut}`;
}

/**
 * The note field and the confidence slider (null: not given). The note is
 * left alone while it is being typed in, unless `force` (a new item).
 */
export function drawExtras(dom: Dom, note: string, confidence: number | null, force = false): void {
  const typing = dom.root.ownerDocument.activeElement === dom.note;
  if (dom.note.value !== note && (force || !typing)) dom.note.value = note;
  const given = confidence !== null && Number.isFinite(confidence);
  if (given) dom.confidence.value = String(confidence);
  dom.confidence.classList.toggle("attnw-unset", !given);
  dom.confidenceText.textContent = given ? formatPercent(confidence!) : "not given";
  dom.confidenceClear.disabled = !given;
}

/** "12 / 20 done, 3 no evidence" (the no-evidence part only when there are some). */
export function progressText(progress: readonly number[]): string {
  const nothing = progress[2] ?? 0;
  return `${progress[0] ?? 0} / ${progress[1] ?? 0} done${nothing ? `, ${nothing} no evidence` : ""}`;
}

/** Which revision is shown, and what undo/redo restored ("" when nothing is saved). */
export function revisionText(saved: SavedAnnotation | null): string {
  if (!saved) return "";
  const restored = saved.reverted_from ? `, restores revision ${saved.reverted_from}` : "";
  return `showing revision ${saved.revision}${restored}`;
}

/** The progress bar and the "saved" badge of the item. */
export function drawProgress(
  dom: Dom,
  progress: readonly number[],
  saved: SavedAnnotation | null,
  dirty: boolean,
  history: HistoryState = {},
): void {
  const done = progress[0] ?? 0;
  const total = progress[1] ?? 0;
  dom.bar.max = Math.max(total, 1);
  dom.bar.value = done;
  dom.progressText.textContent = progressText(progress);
  dom.first.disabled = done >= total;
  const what = saved?.no_evidence ? "saved: no evidence" : "saved";
  dom.saved.textContent = dirty ? (saved ? "changed, not saved" : "not saved") : saved ? `${what} (revision ${saved.revision})` : "";
  dom.saved.classList.toggle("attnw-ann-none", Boolean(saved?.no_evidence) && !dirty);
  dom.words.classList.toggle("attnw-ann-none", Boolean(saved?.no_evidence) && !dirty);
  dom.revision.textContent = revisionText(saved);
  dom.undo.disabled = !history.undo;
  dom.redo.disabled = !history.redo;
  dom.saved.classList.toggle("attnw-dirty", dirty);
  dom.root.dataset.revision = saved ? String(saved.revision) : "";
  dom.root.dataset.dirty = dirty ? "true" : "false";
}

/** The score overlay: a coloured bar under each word, the method picker and legend. */
export function drawOverlay(
  dom: Dom,
  methods: readonly string[],
  signed: readonly boolean[],
  rows: Float32Array[],
  method: string,
  on: boolean,
): void {
  dom.overlayRow.hidden = methods.length === 0;
  if (Array.from(dom.method.options).map((o) => o.value).join("\n") !== methods.join("\n")) {
    clear(dom.method);
    for (const name of methods) dom.method.appendChild(h("option", { text: name, attrs: { value: name } }));
  }
  const m = Math.max(0, methods.indexOf(method));
  dom.method.value = methods[m] ?? "";
  dom.overlayToggle.checked = on;
  dom.method.disabled = !on;
  const row = rows[m];
  const show = on && row !== undefined && methods.length > 0;
  const scale = show ? scaleFor(row!, Boolean(signed[m])) : null;
  dom.legend.textContent = scale ? `${methods[m]}: colour by word score, max |score| ${formatNumber(scale.max)}` : "";
  dom.chips.forEach((chip, i) => {
    const value = row?.[i];
    if (!scale || value === undefined) {
      chip.style.removeProperty("--attnw-ann-score");
      chip.classList.remove("attnw-scored");
      chip.removeAttribute("title");
      return;
    }
    chip.classList.add("attnw-scored");
    if (Number.isFinite(value)) chip.style.setProperty("--attnw-ann-score", css(scale.color(value)));
    else chip.style.removeProperty("--attnw-ann-score");
    chip.title = Number.isFinite(value) ? `${methods[m]} ${formatNumber(value)}` : `${methods[m]}: not seen by the model`;
  });
}

/** The settings' parts of the page: the guidelines panel, the queue, the suggestions' warning. */
export function drawSettings(dom: Dom, settings: Settings, render: (doc: Document, text: string) => Node[]): void {
  const text = settings.guidelines ?? "";
  const version = settings.guidelines_version ?? "";
  dom.guidelines.hidden = !text.trim();
  if (dom.guidelines.dataset.source !== text) {
    clear(dom.guidelinesBody);
    dom.guidelinesBody.append(...render(dom.root.ownerDocument, text));
    dom.guidelines.dataset.source = text;
  }
  dom.guidelinesTitle.textContent = version ? `Guidelines (version ${version})` : "Guidelines";
  const queue = settings.queue;
  dom.queue.textContent = typeof queue === "number" ? `your queue: ${queue} item${queue === 1 ? "" : "s"}` : "";
  dom.queue.hidden = typeof queue !== "number";
  dom.warning.hidden = !settings.suggest;
  dom.accept.hidden = !settings.suggest;
  dom.root.dataset.granularity = settings.granularity ?? "word";
}
