/**
 * GenerationView's drawing: the steps × context heat map, a step's saliency
 * strip over the context, and its flow diagram (SVG lines from each context
 * token to the generated token, FlowView's widths and opacities). Text goes
 * in as textContent only.
 */
import { css, PUOR } from "../core/colors";
import { displayToken, h } from "../core/dom";
import { formatNumber } from "../core/format";
import { cellColor, flowLines, rowScale, type Grid } from "./generation_state";

const SVG = "http://www.w3.org/2000/svg";

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** The heat map: one row per generated token (a button), one column per context token or word. */
export function heatmap(grid: Grid, generated: string[], selected: number): HTMLTableElement {
  const head = h("tr", {}, [h("th")]);
  grid.labels.forEach((label, j) => {
    const cls = grid.prompt[j] ? "attnw-gen-col attnw-gen-prompt" : "attnw-gen-col attnw-gen-earlier";
    head.appendChild(h("th", { className: cls, text: displayToken(label), attrs: { "data-col": j } }));
  });
  const rows: HTMLTableRowElement[] = [head];
  generated.forEach((token, t) => {
    const button = h("button", {
      className: `attnw-gen-step${t === selected ? " attnw-gen-selected" : ""}`,
      text: displayToken(token),
      attrs: { type: "button", "data-step": t, "aria-pressed": String(t === selected) },
    });
    const row = h("tr", { className: t === selected ? "attnw-gen-row-selected" : "" }, [h("th", {}, [button])]);
    const scale = rowScale(grid, t);
    const values = grid.rows[t] as Float32Array;
    values.forEach((value, j) => {
      const colour = cellColor(value, scale);
      row.appendChild(
        h("td", {
          className: colour ? "attnw-gen-cell" : "attnw-gen-cell attnw-gen-unseen",
          attrs: { "data-step": t, "data-col": j, title: colour ? formatNumber(value) : "not seen at this step" },
          style: colour ? { "background-color": colour.fill, color: colour.text } : {},
        }),
      );
    });
    rows.push(row);
  });
  return h("table", { className: "attnw-gen-table", attrs: { role: "grid" } }, rows);
}

/** Step t's scores over the context as coloured token chips. */
export function saliencyStrip(grid: Grid, t: number): HTMLElement {
  const scale = rowScale(grid, t);
  const chips = grid.labels.map((label, j) => {
    const value = (grid.rows[t] as Float32Array)[j] as number;
    const colour = cellColor(value, scale);
    if (colour === null) return null;
    return h("span", {
      className: `attnw-gen-chip${grid.prompt[j] ? "" : " attnw-gen-chip-earlier"}`,
      text: displayToken(label),
      attrs: { "data-col": j, title: formatNumber(value) },
      style: { "background-color": colour.fill, color: colour.text },
    });
  });
  return h("div", { className: "attnw-gen-saliency" }, chips.filter((c): c is HTMLSpanElement => c !== null));
}

const ROW = 16;

/** Step t's flow diagram: the context tokens on the left, the generated token on the right. */
export function flowDiagram(grid: Grid, t: number, target: string): SVGSVGElement {
  const row = grid.rows[t] as Float32Array;
  const seen: number[] = [];
  row.forEach((value, j) => {
    if (Number.isFinite(value)) seen.push(j);
  });
  const height = Math.max(ROW * seen.length, ROW) + 8;
  const left = 110;
  const right = 300;
  const root = svg("svg", { class: "attnw-gen-flow", width: right + 110, height, role: "img" });
  root.appendChild(svg("title", {}, `scores of ${displayToken(target)} over the tokens before it`));
  const y = new Map<number, number>();
  seen.forEach((j, k) => y.set(j, 4 + ROW * k + ROW / 2));
  const targetY = height / 2;
  // The ends of the heat map's diverging map: orange positive, purple negative.
  const positive = css(PUOR[9] ?? [179, 88, 6]);
  const negative = css(PUOR[1] ?? [84, 39, 136]);
  for (const line of flowLines(row)) {
    root.appendChild(
      svg("line", {
        class: "attnw-gen-line",
        "data-col": line.index,
        x1: left + 4,
        y1: y.get(line.index) ?? 0,
        x2: right - 4,
        y2: targetY,
        stroke: line.negative ? negative : positive,
        "stroke-width": line.width.toFixed(2),
        "stroke-opacity": line.alpha.toFixed(3),
      }),
    );
  }
  for (const j of seen) {
    root.appendChild(
      svg("text", { x: left, y: (y.get(j) ?? 0) + 4, "text-anchor": "end", class: "attnw-gen-flow-token", "data-col": j }, displayToken(grid.labels[j] ?? "")),
    );
  }
  root.appendChild(svg("text", { x: right, y: targetY + 4, class: "attnw-gen-flow-target" }, displayToken(target)));
  return root;
}
