/**
 * NeuronView's drawing: the query vector(s) above, and one row per key
 * token: its key vector(s), the product q ∘ k, the score and the weight.
 * Vectors are canvases of coloured cells (diverging purple–orange, 0 white,
 * one range per head and query); text goes in through textContent only.
 */
import { PUOR, css, interpolate } from "../core/colors";
import { displayToken, h, tokenName } from "../core/dom";
import { formatNumber } from "../core/format";
import { cellWidth, maxAbs, sum, type QueryRows } from "./neuron_state";

const CELL_HEIGHT = 14;

/** Colour of a value on a diverging map of ±max. */
export function cellColor(value: number, max: number): string {
  if (!Number.isFinite(value)) return "rgb(160, 160, 160)";
  const r = max > 0 ? Math.max(-1, Math.min(1, value / max)) : 0;
  return css(interpolate(PUOR, 0.5 + 0.5 * r));
}

/** A canvas with one cell per entry of `values`; `name` labels it for hovering. */
export function vectorCanvas(values: Float32Array, max: number, name: string): HTMLCanvasElement {
  const cw = cellWidth(values.length);
  const canvas = h("canvas", { className: "attnw-neuron-vector", attrs: { width: values.length * cw, height: CELL_HEIGHT, "data-name": name, "aria-label": name } });
  const ctx = canvas.getContext("2d");
  if (ctx) {
    for (let i = 0; i < values.length; i++) {
      ctx.fillStyle = cellColor(values[i] as number, max);
      ctx.fillRect(i * cw, 0, cw, CELL_HEIGHT);
    }
  }
  (canvas as HTMLCanvasElement & { values?: Float32Array }).values = values;
  return canvas;
}

/** The entry of a vector canvas under a mouse x offset. */
export function entryAt(canvas: HTMLCanvasElement, offsetX: number): number {
  const values = (canvas as HTMLCanvasElement & { values?: Float32Array }).values;
  if (!values || values.length === 0) return -1;
  const width = canvas.getBoundingClientRect().width || canvas.width;
  return Math.max(0, Math.min(values.length - 1, Math.floor((offsetX / width) * values.length)));
}

export function canvasValue(canvas: HTMLCanvasElement, index: number): number {
  const values = (canvas as HTMLCanvasElement & { values?: Float32Array }).values;
  return values ? (values[index] as number) : Number.NaN;
}

export interface DrawOptions {
  tokens: readonly string[];
  /** The tokenizer's strings of `tokens`, shown on hover ([] when unknown). */
  raw: readonly string[];
  token: number;
  rotary: boolean;
  scale: number;
  head: number;
  layer: number;
}

/** The query block: q (and rotated q) of the selected token. */
export function drawQuery(rows: QueryRows, o: DrawOptions): HTMLElement {
  const max = maxAbs([rows.q, rows.qRotated, ...rows.keys, ...rows.keysRotated]);
  const label = displayToken(o.tokens[o.token] ?? "");
  const parts: Node[] = [
    h("span", { className: "attnw-neuron-label", text: "query " }),
    h("span", { className: "attnw-neuron-query-token", text: label, attrs: { title: tokenName(o.tokens[o.token] ?? "", o.raw[o.token]) } }),
    h("span", { className: "attnw-neuron-label", text: o.rotary ? "  q (before rotation) " : "  q " }),
    vectorCanvas(rows.q, max, `q of ${label}`),
  ];
  if (o.rotary) {
    parts.push(h("span", { className: "attnw-neuron-label", text: "  q (rotated) " }), vectorCanvas(rows.qRotated, max, `rotated q of ${label}`));
  }
  return h("div", { className: "attnw-neuron-query" }, parts);
}

/** The key table: one row per key token, clickable to make it the query. */
export function drawKeys(rows: QueryRows, o: DrawOptions, onPick: (token: number) => void): HTMLTableElement {
  const max = maxAbs([rows.q, rows.qRotated, ...rows.keys, ...rows.keysRotated]);
  const productMax = maxAbs(rows.products.filter((_p, j) => rows.allowed[j]));
  const heads = ["token", ...(o.rotary ? ["k (before rotation)", "k (rotated)"] : ["k"]), "q ∘ k", "q·k", `× ${formatNumber(o.scale)} = score`, "weight"];
  const head = h("tr", {}, heads.map((text) => h("th", { text })));
  const body: HTMLTableRowElement[] = [];
  rows.keys.forEach((key, j) => {
    const label = displayToken(o.tokens[j] ?? "");
    const button = h("button", { className: "attnw-neuron-token", text: label, attrs: { type: "button", "data-index": j, "aria-pressed": j === o.token ? "true" : "false", title: `${tokenName(o.tokens[j] ?? "", o.raw[j])}: make this token the query` } });
    button.addEventListener("click", () => onPick(j));
    const cells: Node[] = [h("td", {}, [button])];
    cells.push(h("td", {}, [vectorCanvas(key, max, `k of ${label}`)]));
    if (o.rotary) cells.push(h("td", {}, [vectorCanvas(rows.keysRotated[j]!, max, `rotated k of ${label}`)]));
    cells.push(h("td", {}, [vectorCanvas(rows.products[j]!, productMax, `q ∘ k of ${label}`)]));
    const allowed = rows.allowed[j]!;
    const dot = sum(rows.products[j]!);
    cells.push(h("td", { className: "attnw-neuron-dot", text: formatNumber(dot) }));
    cells.push(h("td", { className: "attnw-neuron-score", text: allowed ? formatNumber(rows.scores[j]!) : "masked" }));
    const weight = allowed ? (rows.weights[j] as number) : 0;
    const bar = h("span", { className: "attnw-neuron-bar", style: { width: `${Math.round(60 * weight)}px` } });
    cells.push(h("td", { className: "attnw-neuron-weight-cell" }, [bar, h("span", { className: "attnw-neuron-weight", text: allowed ? formatNumber(weight) : "–" })]));
    const tr = h("tr", { className: `attnw-neuron-row${j === o.token ? " attnw-active" : ""}${allowed ? "" : " attnw-neuron-masked"}`, attrs: { "data-index": j } }, cells);
    body.push(tr);
  });
  return h("table", { className: "attnw-neuron-table" }, [h("thead", {}, [head]), h("tbody", {}, body)]);
}
