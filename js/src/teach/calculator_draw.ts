/**
 * Drawing the calculator: step matrices (coloured tables whose cells carry
 * data-step, data-i, data-j for the hover arithmetic) and the editors of the
 * input arrays (one number input per entry). Text through textContent only.
 */
import { css, interpolate, PUOR, textColorFor, VIRIDIS, MISSING, type RGB } from "../core/colors";
import { displayToken, h } from "../core/dom";
import { dims, inputText, type Mat } from "./calculator_state";
import { formatNumber } from "../core/format";

/** How a step's values are coloured: diverging around 0, or probabilities 0..1. */
export type Colouring = "signed" | "probability";

function cellColour(value: number, colouring: Colouring, max: number): RGB {
  if (!Number.isFinite(value)) return MISSING;
  if (colouring === "probability") return interpolate(VIRIDIS, Math.max(0, Math.min(1, value)));
  const r = max > 0 ? value / max : 0;
  return interpolate(PUOR, 0.5 + 0.5 * Math.max(-1, Math.min(1, r)));
}

/** The largest finite |value| (0 when none). */
function largest(data: Float64Array): number {
  let max = 0;
  for (const v of data) if (Number.isFinite(v) && Math.abs(v) > max) max = Math.abs(v);
  return max;
}

/** One cell's text: "−∞" for masked entries, else 3 significant digits (format.ts). */
export function cellText(value: number): string {
  return value === -Infinity ? "−∞" : formatNumber(value, { digits: 3 });
}

/** A labelled matrix: rows and columns named, every cell coloured by its value. */
export function matrixTable(step: string, mat: Mat, rows: readonly string[], cols: readonly string[], colouring: Colouring): HTMLTableElement {
  const [m, n] = dims(mat) ?? [0, 0];
  const head = h("tr", {}, [h("th", { className: "attnw-calc-corner" }), ...cols.slice(0, n).map((c) => h("th", { text: displayToken(c), attrs: { scope: "col" } }))]);
  const body: HTMLTableRowElement[] = [];
  for (let i = 0; i < m; i++) {
    const cells: HTMLElement[] = [h("th", { text: displayToken(rows[i] ?? String(i)), attrs: { scope: "row" } })];
    for (let j = 0; j < n; j++) cells.push(h("td", { className: "attnw-calc-cell", attrs: { "data-step": step, "data-i": i, "data-j": j, tabindex: -1 } }));
    body.push(h("tr", {}, cells));
  }
  const table = h("table", { className: "attnw-calc-matrix", attrs: { "data-step": step } }, [h("thead", {}, [head]), h("tbody", {}, body)]);
  fillMatrix(table, mat, colouring);
  return table;
}

/** Write a matrix's values into a table made by matrixTable for the same shape (in place). */
export function fillMatrix(table: HTMLTableElement, mat: Mat, colouring: Colouring): void {
  const max = largest(mat.data);
  let drawn = DRAWN.get(table);
  if (!drawn) DRAWN.set(table, (drawn = []));
  const cells = table.querySelectorAll<HTMLElement>("td.attnw-calc-cell");
  cells.forEach((cell, k) => {
    const value = mat.data[k] as number;
    const background = cellColour(value, colouring, max);
    const text = cellText(value);
    const colour = css(background);
    const last = drawn![k];
    if (last && last.text === text && last.colour === colour) return; // unchanged: no style work
    if (!last || last.text !== text) cell.textContent = text;
    if (!last || (last.text === "−∞") !== (text === "−∞")) cell.classList.toggle("attnw-calc-masked", value === -Infinity);
    if (!last || last.colour !== colour) {
      cell.style.setProperty("background-color", colour);
      cell.style.setProperty("color", css(textColorFor(background)));
    }
    drawn![k] = { text, colour };
  });
}

/** What each table's cells show now (fillMatrix writes only what changed). */
const DRAWN = new WeakMap<HTMLTableElement, { text: string; colour: string }[]>();

/** An editor of one input array: a table of number inputs (data-array, data-index). */
export interface Editor {
  el: HTMLElement;
  name: string;
  shape: number[];
  inputs: HTMLInputElement[];
}

/** Largest array (entries) the page offers to edit; bigger ones are set from Python. */
export const EDIT_LIMIT = 256;

/** Parameter editors with more entries than this start folded. */
export const FOLD_LIMIT = 64;

export function buildEditor(name: string, mat: Mat | null, rows: readonly string[], title: string, collapsed = false): Editor {
  const wrap = h("div", { className: "attnw-calc-editor", attrs: { "data-array": name } });
  const label = h("div", { className: "attnw-calc-editor-title", text: title });
  wrap.appendChild(label);
  const shape = mat ? [...mat.shape] : [];
  const inputs: HTMLInputElement[] = [];
  const size = dims(mat);
  if (!mat || !size) {
    wrap.appendChild(h("div", { className: "attnw-calc-note", text: mat ? `shape (${mat.shape.join(", ")}): not a matrix` : "not set" }));
    return { el: wrap, name, shape, inputs };
  }
  const [m, n] = size;
  if (m * n > EDIT_LIMIT) {
    const text = `${m} × ${n}: too large to edit here; set it from Python (calc.${name} = …)`;
    wrap.appendChild(h("div", { className: "attnw-calc-note", text }));
    return { el: wrap, name, shape, inputs };
  }
  const head = h("tr", {}, [h("th", { className: "attnw-calc-corner" }), ...Array.from({ length: n }, (_, c) => h("th", { text: String(c), attrs: { scope: "col" } }))]);
  const body: HTMLTableRowElement[] = [];
  for (let i = 0; i < m; i++) {
    const cells: HTMLElement[] = [h("th", { text: displayToken(rows[i] ?? String(i)), attrs: { scope: "row" } })];
    for (let j = 0; j < n; j++) {
      const index = i * n + j;
      const input = h("input", {
        className: "attnw-calc-input",
        attrs: { type: "text", inputmode: "decimal", "data-array": name, "data-index": index, "aria-label": `${name}[${mat.shape.length === 1 ? j : `${i}, ${j}`}]`, size: 5 },
      });
      input.value = inputText(mat.data[index] as number);
      inputs.push(input);
      cells.push(h("td", {}, [input]));
    }
    body.push(h("tr", {}, cells));
  }
  const table = h("table", { className: "attnw-calc-matrix attnw-calc-inputs" }, [h("thead", {}, [head]), h("tbody", {}, body)]);
  if (collapsed && m * n > FOLD_LIMIT) {
    // Folded: a closed <details> is not laid out, so a big parameter costs nothing until opened.
    wrap.appendChild(h("details", {}, [h("summary", { text: `${m} × ${n} entries` }), table]));
  } else wrap.appendChild(table);
  return { el: wrap, name, shape, inputs };
}

/**
 * Show new values in an editor in place (not the input being typed in).
 * Returns false when the shape changed: the editor must be rebuilt.
 */
export function updateEditor(editor: Editor, mat: Mat | null, active: Element | null): boolean {
  const shape = mat ? mat.shape : [];
  if (shape.length !== editor.shape.length || shape.some((d, i) => d !== editor.shape[i])) return false;
  if (!mat) return true;
  editor.inputs.forEach((input, index) => {
    if (input === active) return;
    const text = inputText(mat.data[index] as number);
    if (input.value !== text && !(Number.isNaN(mat.data[index] as number) && input.value.trim() !== "")) input.value = text;
  });
  return true;
}
