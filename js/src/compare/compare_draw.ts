/**
 * CompareView's drawing (no state, no events): the methods' token rows and
 * the disagreement row (SaliencyView's wrapped grid), the agreement heat map,
 * the faithfulness and plausibility bars, and a pair's scatter. Text goes in
 * as textContent and attributes only, never as HTML.
 */
import { decodeMatrix } from "../core/buffers";
import { css, gradient, textColorFor } from "../core/colors";
import { displayToken, h, tokenName } from "../core/dom";
import { formatNumber } from "../core/format";
import { coverageText, rangeText, type ScoreRange } from "../core/score_range";
import { grid } from "../saliency/saliency_grid";
import {
  agreementAt,
  agreementScale,
  axisDomain,
  barDomain,
  best,
  comparedCount,
  directionText,
  figureColumn,
  rankDomain,
  methodRanks,
  scatterPoints,
  toPixel,
  type Axes,
  type CompareData,
} from "./compare_state";

const SVG = "http://www.w3.org/2000/svg";
/** The disagreement row's label (it follows the method rows). */
export const SPREAD_ROW = "disagreement";
/** Points of a scatter labelled with their token beyond which only the notable ones are. */
const LABEL_ALL = 80;
const KIND_TITLES: Record<string, string> = {
  faithfulness: "Faithfulness (the model re-run on perturbed inputs)",
  plausibility: "Plausibility (against the human rationale)",
};

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** The token rows as drawn: cells[j] holds token j's cells (methods, then disagreement). */
export interface TokenGrid {
  lines: HTMLElement;
  columns: HTMLElement[];
  cells: HTMLElement[][];
  labels: HTMLElement;
}

/** One method's legend: name, colour bar and the range its colours cover. */
function legend(name: string, title: string, range: ScoreRange, extra = ""): HTMLElement {
  return h("div", { className: "attnw-label", attrs: { "data-method": name, title } }, [
    h("span", { className: "attnw-method", text: name }),
    h("span", { className: "attnw-legend" }, [
      h("span", { className: "attnw-bar", style: { background: gradient(range.scale.stops) } }),
      h("span", { className: "attnw-range", text: rangeText(range.scale) + extra }),
    ]),
  ]);
}

/** The legends of the method rows and of the disagreement row. */
export function tokenLegends(data: CompareData, ranges: ScoreRange[], spread: ScoreRange): HTMLElement {
  const items = data.methods.map((method, i) => {
    const coverage = coverageText(ranges[i]!, data.tokens, data.query, "the query");
    const kind = data.signed[i] ? "signed scores: diverging colours centred at 0" : "non-negative scores";
    return legend(method, `${method}${data.summaries[i] ? `: ${data.summaries[i]}` : ""}\n${kind}; colours from ${rangeText(ranges[i]!.scale)}, ${coverage}`, ranges[i]!);
  });
  const rationale = data.rationale.length ? "; underlined: the human rationale" : "";
  items.push(
    legend(
      SPREAD_ROW,
      "How differently the methods rank each token: the standard deviation over methods of its rank (0 = ranked first, 1 = last); grey: not compared",
      spread,
      ` (rank spread; outlined: the most disputed${rationale})`,
    ),
  );
  return h("div", { className: "attnw-compare-legends" }, items);
}

/** The wrapped token columns: one cell per method, then the disagreement cell. */
export function tokenGrid(data: CompareData, ranges: ScoreRange[], spread: ScoreRange, disputed: readonly number[]): TokenGrid {
  const { tokens, methods } = data;
  const m = methods.length;
  const n = tokens.length;
  const values = new Float32Array((m + 1) * n);
  values.set(data.scores.data, 0);
  values.set(data.disagreement, m * n);
  const matrix = decodeMatrix(new DataView(values.buffer), [m + 1, n], "rows");
  const cells: HTMLElement[][] = tokens.map(() => []);
  const columns: HTMLElement[] = [];
  const rows = [...methods, SPREAD_ROW];
  const lines = grid({ tokens, raw: data.raw, methods: rows, matrix, ranges: [...ranges, spread], offset: 0, query: data.query, cells, columns, pair: false });
  const count = comparedCount(data);
  const ranks = methods.map((_, i) => methodRanks(data, i));
  for (let j = 0; j < n; j++) {
    const name = tokenName(tokens[j] ?? "", data.raw[j]);
    for (let i = 0; i < m; i++) {
      const cell = cells[j]![i]!;
      const rank = ranks[i]![j]!;
      cell.title += Number.isFinite(rank) ? ` · rank ${formatNumber(rank)} of ${count}` : " · not compared";
    }
    const cell = cells[j]![m]!;
    cell.classList.add("attnw-compare-spread");
    cell.removeAttribute("data-method");
    cell.dataset.row = SPREAD_ROW;
    const value = data.disagreement[j] as number;
    cell.title = data.compared[j]
      ? `${SPREAD_ROW} · #${j} ${name} · rank spread ${formatNumber(value)} over ${m} methods`
      : `${SPREAD_ROW} · #${j} ${name} · not compared (left out of the ranks)`;
    if (disputed.includes(j)) cell.classList.add("attnw-compare-disputed");
    if (data.rationale[j]) cell.classList.add("attnw-compare-rationale");
  }
  const labels = h(
    "div",
    { className: "attnw-line-labels", attrs: { "aria-hidden": "true" } },
    rows.map((row) => h("div", { className: "attnw-line-label", text: row })),
  );
  return { lines, columns, cells, labels };
}

/** The method × method heat map of metric k; `pair` marks the selected cell. */
export function heatMap(data: CompareData, k: number, pair: [number, number] | null): HTMLElement {
  const metric = data.metrics[k] ?? "";
  const signed = data.metricSigned[k] ?? false;
  const scale = agreementScale(signed);
  const head = h("tr", {}, [
    h("th", { attrs: { scope: "col" } }),
    ...data.methods.map((method) => h("th", { className: "attnw-compare-colhead", text: method, attrs: { scope: "col" } })),
  ]);
  const rows = data.methods.map((row, i) =>
    h("tr", {}, [
      h("th", { className: "attnw-method", text: row, attrs: { scope: "row" } }),
      ...data.methods.map((column, j) => {
        const value = agreementAt(data, k, i, j);
        const colour = scale.color(value);
        const diagonal = i === j;
        const chosen = pair !== null && pair[0] === i && pair[1] === j;
        const mirror = pair !== null && pair[0] === j && pair[1] === i;
        const title = diagonal
          ? `${row} with itself (${metric} ${formatNumber(value)})`
          : `${row} vs ${column} · ${metric} ${formatNumber(value)}: click for the scatter of their token scores`;
        return h("td", {
          className: `attnw-compare-cell${diagonal ? " attnw-compare-diagonal" : ""}${chosen ? " attnw-selected" : ""}${mirror ? " attnw-compare-mirror" : ""}`,
          text: formatNumber(value),
          attrs: diagonal
            ? { role: "gridcell", title, "data-status": title }
            : { role: "gridcell", tabindex: 0, "data-a": i, "data-b": j, title, "data-status": title, "aria-selected": chosen ? "true" : undefined },
          style: { "background-color": css(colour), color: css(textColorFor(colour)) },
        });
      }),
    ]),
  );
  const range = signed ? "−1 (opposite ranks) … 0 … 1 (the same ranks)" : "0 (nothing shared) … 1 (the same top tokens)";
  return h("div", { className: "attnw-compare-matrix" }, [
    h("div", { className: "attnw-scroll" }, [
      h("table", { className: "attnw-compare-table", attrs: { role: "grid", "aria-label": `Agreement by ${metric}` } }, [
        h("thead", {}, [head]),
        h("tbody", {}, rows),
      ]),
    ]),
    h("div", { className: "attnw-legend attnw-compare-scale" }, [
      h("span", { className: "attnw-bar", style: { background: gradient(scale.stops) } }),
      h("span", { text: `${metric}: ${range}; higher is better (the methods agree more)` }),
    ]),
  ]);
}

/** One panel per faithfulness or plausibility metric: a bar per method, the best marked. */
export function figurePanels(data: CompareData, notes: readonly string[]): HTMLElement {
  const out = h("div", { className: "attnw-compare-figures" });
  for (const kind of ["faithfulness", "plausibility"]) {
    const ks = data.figureMetrics.map((_, k) => k).filter((k) => data.figureKinds[k] === kind);
    if (!ks.length) continue;
    out.appendChild(h("div", { className: "attnw-compare-kind", text: KIND_TITLES[kind] ?? kind }));
    out.appendChild(h("div", { className: "attnw-compare-panels" }, ks.map((k) => figurePanel(data, k))));
  }
  for (const note of notes) out.appendChild(h("div", { className: "attnw-caption attnw-compare-note", text: `Note: ${note}.` }));
  return out;
}

function figurePanel(data: CompareData, k: number): HTMLElement {
  const metric = data.figureMetrics[k]!;
  const higher = data.figureHigher[k]!;
  const values = figureColumn(data, k);
  const [lo, hi] = barDomain(values);
  const at = (v: number): number => (toPixel(v, [lo, hi], 1000) / 10);
  const zero = at(0);
  const top = best(values, higher);
  const rows = data.methods.map((method, i) => {
    const value = values[i]!;
    const finite = Number.isFinite(value);
    const left = finite ? Math.min(zero, at(value)) : zero;
    const width = finite ? Math.abs(at(value) - zero) : 0;
    const text = `${method} · ${metric}: ${formatNumber(value)} (${directionText(higher)})${i === top ? "; the best here" : ""}`;
    return h("div", { className: `attnw-compare-barrow${i === top ? " attnw-compare-best" : ""}`, attrs: { "data-method": method, title: text, "data-status": text } }, [
      h("span", { className: "attnw-compare-barlabel", text: method }),
      h("span", { className: "attnw-compare-track" }, [
        h("span", { className: "attnw-compare-zero", style: { left: `${zero}%` } }),
        h("span", { className: "attnw-compare-bar", style: { left: `${left}%`, width: `${width}%` } }),
      ]),
      h("span", { className: "attnw-compare-value", text: formatNumber(value) + (i === top ? " ★" : "") }),
    ]);
  });
  return h("figure", { className: "attnw-compare-panel", attrs: { "data-metric": metric } }, [
    h("figcaption", { attrs: { title: data.figureSummaries[k] ?? "" } }, [
      h("span", { className: "attnw-compare-metric", text: metric }),
      h("span", { className: "attnw-compare-direction", text: ` ${higher ? "↑" : "↓"} ${directionText(higher)}` }),
    ]),
    ...rows,
  ]);
}

/**
 * Label a scatter point with its token (beside its circle) unless it has a
 * label; `extra`: a label only while the point is selected (a long input's
 * scatter labels only the notable points).
 */
export function addLabel(group: SVGGElement, token: string, extra = false): void {
  if (group.querySelector("text")) return;
  const circle = group.querySelector("circle");
  const [cx, cy] = [Number(circle?.getAttribute("cx") ?? 0), Number(circle?.getAttribute("cy") ?? 0)];
  const label = svg("text", { class: `attnw-compare-label${extra ? " attnw-compare-extra" : ""}`, x: cx + 6, y: cy - 5 }, displayToken(token));
  group.appendChild(label);
}

/** The selected pair's scatter: method a across, method b up, one labelled point per compared token. */
export function scatter(data: CompareData, a: number, b: number, k: number, selected: number, disputed: readonly number[], axes: Axes): HTMLElement {
  const [width, height] = [380, 300];
  const margin = { left: 54, right: 16, top: 12, bottom: 40 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const points = scatterPoints(data, a, b, axes);
  const ranks = axes === "ranks";
  const what = ranks ? "ranks" : "scores";
  const count = comparedCount(data);
  const xDomain = ranks ? rankDomain(count) : axisDomain(points.map((p) => p.x));
  const yDomain = ranks ? rankDomain(count) : axisDomain(points.map((p) => p.y));
  const tick = (v: number, end: 0 | 1): string => (ranks ? `rank ${end ? 1 : count}` : formatNumber(v));
  const x = (v: number): number => margin.left + toPixel(v, xDomain, plotW);
  const y = (v: number): number => margin.top + plotH - toPixel(v, yDomain, plotH);
  const [nameA, nameB] = [data.methods[a]!, data.methods[b]!];
  const plot = svg("svg", {
    class: "attnw-compare-scatter",
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
    "aria-label": `${nameA} against ${nameB}: token scores`,
    "data-attnw-chart": "scatter",
  });
  plot.appendChild(svg("rect", { class: "attnw-compare-frame", x: margin.left, y: margin.top, width: plotW, height: plotH }));
  for (const [domain, axis] of [[xDomain, "x"], [yDomain, "y"]] as const) {
    if (!ranks && domain[0] < 0 && domain[1] > 0) {
      plot.appendChild(
        axis === "x"
          ? svg("line", { class: "attnw-compare-zero-line", x1: x(0), x2: x(0), y1: margin.top, y2: margin.top + plotH })
          : svg("line", { class: "attnw-compare-zero-line", x1: margin.left, x2: margin.left + plotW, y1: y(0), y2: y(0) }),
      );
    }
  }
  const ticks: [number, number, string, string][] = [
    [margin.left, height - margin.bottom + 14, "start", tick(xDomain[0], 0)],
    [margin.left + plotW, height - margin.bottom + 14, "end", tick(xDomain[1], 1)],
  ];
  for (const [tx, ty, anchor, text] of ticks) plot.appendChild(svg("text", { class: "attnw-compare-tick", x: tx, y: ty, "text-anchor": anchor }, text));
  plot.appendChild(svg("text", { class: "attnw-compare-tick", x: margin.left - 4, y: margin.top + plotH, "text-anchor": "end" }, tick(yDomain[0], 0)));
  plot.appendChild(svg("text", { class: "attnw-compare-tick", x: margin.left - 4, y: margin.top + 9, "text-anchor": "end" }, tick(yDomain[1], 1)));
  plot.appendChild(svg("text", { class: "attnw-compare-axis", x: margin.left + plotW / 2, y: height - 6, "text-anchor": "middle" }, `${nameA} ${what} →`));
  const yLabel = svg("text", { class: "attnw-compare-axis", x: 12, y: margin.top + plotH / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${margin.top + plotH / 2})` }, `${nameB} ${what} →`);
  plot.appendChild(yLabel);
  const labelAll = points.length <= LABEL_ALL;
  const [ranksA, ranksB] = [methodRanks(data, a), methodRanks(data, b)];
  // The selected point last, so it is drawn on top.
  const order = [...points].sort((p, q) => Number(p.index === selected) - Number(q.index === selected));
  for (const p of order) {
    const token = data.tokens[p.index] ?? "";
    const chosen = p.index === selected;
    const [sa, sb] = [data.scores.row(a)[p.index] as number, data.scores.row(b)[p.index] as number];
    const [ra, rb] = [formatNumber(ranksA[p.index]!), formatNumber(ranksB[p.index]!)];
    const text = `#${p.index} ${tokenName(token, data.raw[p.index])} · ${nameA} ${formatNumber(sa)} (rank ${ra}) · ${nameB} ${formatNumber(sb)} (rank ${rb})`;
    const group = svg("g", { class: `attnw-compare-point${chosen ? " attnw-selected" : ""}${disputed.includes(p.index) ? " attnw-compare-disputed" : ""}`, "data-index": p.index, "data-status": text });
    group.appendChild(svg("title", {}, text));
    group.appendChild(svg("circle", { cx: x(p.x), cy: y(p.y), r: chosen ? 6 : 4 }));
    const notable = labelAll || disputed.includes(p.index);
    if (notable || chosen) addLabel(group, token, !notable);
    plot.appendChild(group);
  }
  const metric = data.metrics[k] ?? "";
  const caption = `${nameA}'s ${what} (across) against ${nameB}'s (up): ${metric} ${formatNumber(agreementAt(data, k, a, b))} over ${points.length} compared tokens. Click a point to select its token.`;
  return h("figure", { className: "attnw-compare-pair", attrs: { "data-a": nameA, "data-b": nameB } }, [
    h("figcaption", { className: "attnw-caption", text: caption }),
    plot as unknown as HTMLElement,
  ]);
}
