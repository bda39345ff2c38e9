/**
 * SaliencyView's token grid: one text's wrapped columns of method cells, and
 * the method names repeated at the start of every wrapped line
 * (saliency_view.ts draws one grid per text).
 */
import { css, textColorFor } from "../core/colors";
import { displayToken, h, tokenName } from "../core/dom";
import { formatNumber } from "../core/format";
import type { Matrix } from "../core/buffers";
import type { ScoreRange } from "../core/score_range";

/** One text's wrapped token columns, one cell per method; `offset`: its index in the ranges. */
export function grid(g: {
  tokens: string[];
  /** The tokenizer's strings of `tokens`, shown on hover ([] when unknown). */
  raw: readonly string[];
  methods: string[];
  matrix: Matrix;
  ranges: ScoreRange[];
  offset: number;
  query: number;
  cells: HTMLElement[][];
  columns: HTMLElement[];
  pair: boolean;
}): HTMLElement {
  const { tokens, methods, matrix, ranges, offset, query } = g;
  const shown = tokens.map(displayToken);
  const which = g.pair ? "second text " : "";
  const lines = h("div", {
    className: "attnw-lines",
    attrs: { role: "grid", "aria-rowcount": methods.length, "aria-colcount": tokens.length },
  });
  for (let j = 0; j < tokens.length; j++) {
    const column = h("div", { className: "attnw-col", attrs: { role: "row", "data-index": j } });
    for (let i = 0; i < methods.length; i++) {
      const method = methods[i]!;
      const range = ranges[i]!;
      const value = matrix.data[i * matrix.cols + j] as number;
      const background = range.scale.color(value);
      const unscaled = range.excluded.includes(offset + j);
      const beyond = range.beyond(value);
      let className = g.pair ? "attnw-tok attnw-pair" : "attnw-tok";
      if (j === query) className += " attnw-query";
      if (unscaled) className += " attnw-unscaled";
      if (beyond) className += " attnw-beyond";
      const notes = [unscaled ? "not in the colour range" : "", beyond ? "beyond the colour range, drawn at its end" : ""].filter(Boolean);
      const cell = h("span", {
        className,
        text: shown[j],
        attrs: {
          role: "gridcell",
          "data-index": j,
          "data-method": method,
          title: `${method} · ${which}#${j} ${tokenName(tokens[j] ?? "", g.raw[j])} · score ${formatNumber(value)}${notes.length ? ` (${notes.join("; ")})` : ""}`,
        },
        style: { "background-color": css(background), color: css(textColorFor(background)) },
      });
      g.cells[j]!.push(cell);
      column.appendChild(cell);
    }
    g.columns.push(column);
    lines.appendChild(column);
  }
  return lines;
}

/**
 * Put a copy of the method names at the start of every wrapped line. The
 * lines reserve the labels' width on the left (padding), so the copies are
 * absolutely placed and never move a line break; run again on resize.
 */
export function placeLineLabels(lines: HTMLElement, columns: HTMLElement[], labelTemplate: HTMLElement): void {
  for (const old of Array.from(lines.querySelectorAll(":scope > .attnw-line-labels"))) old.remove();
  if (columns.length === 0) return;
  lines.appendChild(labelTemplate);
  const width = Math.ceil(labelTemplate.getBoundingClientRect().width);
  labelTemplate.remove();
  lines.style.paddingLeft = `${width + 6}px`;
  // Read every line's top first, then write: one layout, not one per line.
  const tops: number[] = [];
  for (const column of columns) {
    const top = column.offsetTop;
    if (top !== tops[tops.length - 1]) tops.push(top);
  }
  tops.forEach((top, line) => {
    const labels = labelTemplate.cloneNode(true) as HTMLElement;
    labels.style.top = `${top}px`;
    labels.dataset.line = String(line);
    lines.appendChild(labels);
  });
  lines.dataset.lines = String(tops.length);
}
