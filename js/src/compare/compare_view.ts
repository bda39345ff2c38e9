/**
 * CompareView (traits: CompareTraits in compare_types.ts): every method of a
 * Comparison on one input.
 *
 * - Token rows: one per method over the same tokens, wrapped into lines as
 *   in SaliencyView (saliency_grid.ts), each row on its own colour range set
 *   by the compared tokens; then the disagreement row (each token's rank
 *   spread over the methods), the most disputed tokens outlined.
 * - The agreement heat map (method × method) of the metric the picker names
 *   (`agreement_metric`, synced). Click a cell: `selected_pair` (synced) and
 *   that pair's scatter of token scores, each point labelled with its token
 *   (a picker of the page's own, not synced, plots their ranks instead).
 * - Faithfulness and plausibility: one panel of bars per metric, named with
 *   the way it is better; the best method starred.
 * - Click a token (any row, or a point of the scatter): `selected_token`
 *   (synced), marked in every row and in the scatter; again clears it.
 *   Arrow keys move it, Esc clears it.
 *
 * Test hooks on the root: data-state (ready | error), data-selected,
 * data-pair ("i,j" or ""), data-metric.
 */
import type { AnyModel } from "@anywidget/types";

import { useBaseStyles } from "../core/base_styles";
import { clear, h, microtaskScheduler, reveal, styleElement } from "../core/dom";
import { formatNumber } from "../core/format";
import { Listeners } from "../core/listeners";
import { placeLineLabels } from "../saliency/saliency_grid";
import { addLabel, figurePanels, heatMap, scatter, tokenGrid, tokenLegends, type TokenGrid } from "./compare_draw";
import { decodeCompare, disagreementRange, disputed, metricIndex, pairIndices, rowRanges, tokenRank, type Axes, type CompareData } from "./compare_state";
import type { CompareTraits } from "./compare_types";
import styles from "./compare.css";

type Model = AnyModel<CompareTraits>;

/** Traits whose change redraws the whole view. */
const DATA_TRAITS = [
  "tokens", "raw_tokens", "methods", "summaries", "signed", "scores", "shape", "query_index", "compared",
  "disagreement", "agreement_metrics", "agreement_signed", "agreement", "agreement_shape", "figure_kinds",
  "figure_metrics", "figure_summaries", "figure_higher_is_better", "figures", "figure_shape", "rationale",
  "caption", "notes",
] as const;

export function renderCompareView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-compare",
    attrs: { tabindex: 0, role: "group", "aria-label": "Explanation methods compared", "data-state": "waiting" },
  });
  const caption = h("div", { className: "attnw-caption attnw-compare-caption" });
  const tokensBox = h("section", { className: "attnw-compare-tokens" });
  const metricSelect = h("select", { className: "attnw-compare-metric-picker", attrs: { "aria-label": "Agreement metric" } });
  const matrixBox = h("div", { className: "attnw-compare-matrix-box" });
  const axesSelect = h("select", { className: "attnw-compare-axes", attrs: { "aria-label": "Scatter axes" } }, [
    h("option", { text: "token scores", attrs: { value: "scores" } }),
    h("option", { text: "ranks (1 = highest score)", attrs: { value: "ranks" } }),
  ]);
  const scatterBox = h("div", { className: "attnw-compare-scatter-box" });
  const figuresBox = h("section", { className: "attnw-compare-figures-box" });
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  const agreement = h("section", { className: "attnw-compare-agreement" }, [
    h("div", { className: "attnw-compare-head" }, [
      h("span", { className: "attnw-compare-title", text: "Agreement of the methods' token ranks" }),
      h("label", { className: "attnw-control" }, [h("span", { text: "Metric " }), metricSelect]),
      h("label", { className: "attnw-control" }, [h("span", { text: "Scatter of " }), axesSelect]),
    ]),
    h("div", { className: "attnw-compare-pairs" }, [matrixBox, scatterBox]),
  ]);
  useBaseStyles(root);
  root.append(styleElement(styles), caption, tokensBox, agreement, figuresBox, status);
  clear(el);
  el.appendChild(root);

  let data: CompareData | null = null;
  let drawnGrid: TokenGrid | null = null;
  let hot: number[] = [];
  let selected = -1;

  const metric = (): number => (data ? metricIndex(data, model.get("agreement_metric") ?? "") : -1);
  const pair = (): [number, number] | null => (data ? pairIndices(data, model.get("selected_pair") ?? []) : null);

  const selectedText = (): string => {
    if (!data || selected < 0 || selected >= data.tokens.length) {
      return "Click a token to select it (arrow keys move, Esc clears); click a cell of the heat map for its scatter.";
    }
    const d = data;
    const parts = d.methods.map((name, i) => {
      const rank = tokenRank(d, i, selected);
      const score = formatNumber(d.scores.data[i * d.scores.cols + selected] as number);
      return Number.isFinite(rank) ? `${name} ${score} (rank ${formatNumber(rank)})` : `${name} ${score}`;
    });
    const spread = d.compared[selected] ? `; rank spread ${formatNumber(d.disagreement[selected] as number)}` : "; not compared";
    return `Selected #${selected} ${JSON.stringify(d.tokens[selected])}: ${parts.join(" · ")}${spread}`;
  };

  const drawPairs = (): void => {
    clear(matrixBox);
    clear(scatterBox);
    const k = metric();
    const p = pair();
    root.dataset.pair = p ? `${p[0]},${p[1]}` : "";
    root.dataset.metric = k >= 0 && data ? data.metrics[k] : "";
    if (!data || k < 0) return;
    metricSelect.value = data.metrics[k]!;
    matrixBox.appendChild(heatMap(data, k, p));
    const axes: Axes = axesSelect.value === "ranks" ? "ranks" : "scores";
    if (p) scatterBox.appendChild(scatter(data, p[0], p[1], k, selected, hot, axes));
    else scatterBox.appendChild(h("div", { className: "attnw-caption attnw-compare-hint", text: "Click a cell of the heat map to see that pair's token scores against each other." }));
  };

  const highlight = (index: number, scroll = false): void => {
    for (const cell of drawnGrid?.cells[selected] ?? []) {
      cell.classList.remove("attnw-selected");
      cell.removeAttribute("aria-selected");
    }
    selected = data && index >= 0 && index < data.tokens.length ? index : -1;
    root.dataset.selected = String(selected);
    for (const cell of drawnGrid?.cells[selected] ?? []) {
      cell.classList.add("attnw-selected");
      cell.setAttribute("aria-selected", "true");
    }
    if (scroll && drawnGrid) reveal(drawnGrid.columns[selected]);
    for (const point of Array.from(scatterBox.querySelectorAll<SVGGElement>(".attnw-compare-point.attnw-selected"))) {
      point.classList.remove("attnw-selected");
      point.querySelector("circle")?.setAttribute("r", "4");
      point.querySelector(".attnw-compare-extra")?.remove();
    }
    const point = scatterBox.querySelector<SVGGElement>(`.attnw-compare-point[data-index="${selected}"]`);
    if (point && data) {
      point.classList.add("attnw-selected");
      point.querySelector("circle")?.setAttribute("r", "6");
      addLabel(point, data.tokens[selected] ?? "", true); // a long input's point may have none
      point.parentNode?.appendChild(point); // on top
    }
    status.textContent = selectedText();
  };

  const layout = (): void => {
    if (drawnGrid) placeLineLabels(drawnGrid.lines, drawnGrid.columns, drawnGrid.labels);
  };
  const resizes = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(layout);

  const draw = (): void => {
    for (const box of [tokensBox, figuresBox]) clear(box);
    clear(metricSelect);
    resizes?.disconnect();
    data = null;
    drawnGrid = null;
    try {
      data = decodeCompare({
        tokens: model.get("tokens"), raw_tokens: model.get("raw_tokens"), methods: model.get("methods"),
        summaries: model.get("summaries"), signed: model.get("signed"), scores: model.get("scores"),
        shape: model.get("shape"), query_index: model.get("query_index"), compared: model.get("compared"),
        disagreement: model.get("disagreement"), agreement_metrics: model.get("agreement_metrics"),
        agreement_signed: model.get("agreement_signed"), agreement: model.get("agreement"),
        agreement_shape: model.get("agreement_shape"), figure_kinds: model.get("figure_kinds"),
        figure_metrics: model.get("figure_metrics"), figure_summaries: model.get("figure_summaries"),
        figure_higher_is_better: model.get("figure_higher_is_better"), figures: model.get("figures"),
        figure_shape: model.get("figure_shape"), rationale: model.get("rationale"),
      });
      caption.textContent = model.get("caption") ?? "";
      const ranges = rowRanges(data);
      const spread = disagreementRange(data);
      hot = disputed(data, 3);
      drawnGrid = tokenGrid(data, ranges, spread, hot);
      tokensBox.append(tokenLegends(data, ranges, spread), h("div", { className: "attnw-scroll" }, [drawnGrid.lines]));
      for (const name of data.metrics) metricSelect.appendChild(h("option", { text: name, attrs: { value: name } }));
      figuresBox.appendChild(figurePanels(data, model.get("notes") ?? []));
      layout();
      if (resizes) resizes.observe(drawnGrid.lines);
      root.dataset.state = "ready";
    } catch (error) {
      data = null;
      drawnGrid = null;
      root.dataset.state = "error";
      const message = error instanceof Error ? error.message : String(error);
      tokensBox.appendChild(h("div", { className: "attnw-error", text: `attnwidget: cannot draw this view: ${message}` }));
      console.error("attnwidget compare view:", error);
    }
    selected = -1;
    drawPairs();
    highlight(model.get("selected_token") ?? -1);
  };

  const save = (name: "selected_token" | "selected_pair" | "agreement_metric", value: number | string[] | string): void => {
    model.set(name, value as never);
    model.save_changes();
  };

  const onClick = (event: MouseEvent): void => {
    const node = (event.target as Element | null)?.closest?.(".attnw-tok, .attnw-compare-point, td[data-a][data-b]") as HTMLElement | null;
    if (!node || !root.contains(node) || !data) return;
    if (node.dataset.a !== undefined) {
      const [i, j] = [Number(node.dataset.a), Number(node.dataset.b)];
      const p = pair();
      const same = p !== null && p[0] === i && p[1] === j;
      save("selected_pair", same ? [] : [data.methods[i]!, data.methods[j]!]);
      return;
    }
    const index = Number(node.dataset.index);
    if (Number.isInteger(index)) save("selected_token", index === selected ? -1 : index);
  };

  const onKey = (event: KeyboardEvent): void => {
    if (!data || event.target === metricSelect || event.target === axesSelect) return;
    const cell = (event.target as Element | null)?.closest?.("td[data-a][data-b]");
    if (cell && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      onClick(event as unknown as MouseEvent);
      return;
    }
    const n = data.tokens.length;
    let next: number | null = null;
    if (event.key === "ArrowRight") next = selected < 0 ? 0 : Math.min(n - 1, selected + 1);
    else if (event.key === "ArrowLeft") next = selected < 0 ? n - 1 : Math.max(0, selected - 1);
    else if (event.key === "Escape") next = -1;
    if (next === null || n === 0) return;
    event.preventDefault();
    if (next !== selected) {
      save("selected_token", next);
      highlight(next, true);
    }
  };

  const onOver = (event: MouseEvent): void => {
    const node = (event.target as Element | null)?.closest?.(".attnw-tok, [data-status]") as HTMLElement | null;
    const text = node && root.contains(node) ? (node.dataset.status ?? node.getAttribute("title") ?? "") : "";
    status.textContent = text || selectedText();
  };

  const onMetric = (): void => save("agreement_metric", metricSelect.value);

  const scheduleDraw = microtaskScheduler(draw, (error) => console.error("attnwidget compare view:", error));
  const listeners = new Listeners()
    .add(() => root.remove())
    .on(root, "click", onClick)
    .on(root, "keydown", onKey)
    .on(root, "mouseover", onOver)
    .on(root, "mouseleave", () => (status.textContent = selectedText()))
    .on(metricSelect, "change", onMetric)
    .on(axesSelect, "change", drawPairs)
    .add(() => resizes?.disconnect())
    .traits(model, DATA_TRAITS, scheduleDraw)
    .traits(model, ["selected_pair", "agreement_metric"], drawPairs)
    .traits(model, ["selected_token"], () => highlight(model.get("selected_token") ?? -1, true));
  draw();
  return listeners.dispose;
}
