/**
 * EvaluationView: the method × metric table of an evaluation with each
 * mean's bootstrap interval, a chart of the means and intervals (one panel
 * per metric, every method a row), and the examples behind the selected
 * cell (traits: EvaluationTraits in evaluation_types.ts).
 *
 * - Click a cell (or its dot in the chart; Enter/Space on a focused cell) to
 *   set `selected` = [method, metric]; clicking it again clears it. A change
 *   from Python highlights the cell and lists its examples.
 * - The list is sorted by the cell's metric, worst first (the button
 *   reverses it); NaN values come last. Click an example to set
 *   `selected_example` (its id), and again to clear it.
 * - Every name and text goes in as text (textContent / setAttribute), never
 *   as HTML; numbers are formatted by format.ts.
 */
import type { AnyModel } from "@anywidget/types";

import { clear, h, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import { axisRange, cellOrder, cellText, decodeEvaluation, directionText, toX, valueAt, type EvaluationData } from "./evaluation_data";
import styles from "./evaluation.css";
import type { EvaluationTraits } from "./evaluation_types";
import { formatNumber } from "../core/format";
import { useBaseStyles } from "../core/base_styles";

type Model = AnyModel<EvaluationTraits>;

const DATA_TRAITS = [
  "methods", "metrics", "metric_summaries", "higher_is_better", "summary", "summary_shape",
  "confidence", "example_ids", "example_texts", "values", "values_shape",
] as const;
/** Examples listed before "show all". */
const FIRST_ROWS = 100;
const SVG = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

export function renderEvaluationView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", { className: "attnw attnw-evaluation", attrs: { tabindex: 0, role: "group", "aria-label": "Evaluation of explanation methods" } });
  const body = h("div");
  const list = h("div", { className: "attnw-eval-examples" });
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  useBaseStyles(root);
  root.append(styleElement(styles), body, list, status);
  clear(el);
  el.appendChild(root);

  let data: EvaluationData | null = null;
  let worstFirst = true;
  let showAll = false;

  const selectedCell = (): [number, number] | null => {
    const value = model.get("selected") ?? [];
    if (!data || value.length !== 2) return null;
    const i = data.methods.indexOf(String(value[0]));
    const k = data.metrics.indexOf(String(value[1]));
    return i >= 0 && k >= 0 ? [i, k] : null;
  };

  const defaultStatus = (): string => {
    const cell = selectedCell();
    if (!data || !cell) return "Click a cell or a dot to list the examples behind it.";
    const [i, k] = cell;
    return `Selected ${data.methods[i]} · ${data.metrics[k]}: ${cellText(data.cells[i]![k]!)}`;
  };

  const select = (i: number, k: number): void => {
    if (!data) return;
    const cell = selectedCell();
    const same = cell !== null && cell[0] === i && cell[1] === k;
    model.set("selected", same ? [] : [data.methods[i]!, data.metrics[k]!]);
    model.save_changes();
  };

  const highlight = (): void => {
    const cell = selectedCell();
    root.dataset.selected = cell ? `${cell[0]},${cell[1]}` : "";
    for (const node of Array.from(root.querySelectorAll("[data-row][data-col]"))) {
      const on = cell !== null && (node as HTMLElement).dataset.row === String(cell[0]) && (node as HTMLElement).dataset.col === String(cell[1]);
      node.classList.toggle("attnw-selected", on);
      if (on) node.setAttribute("aria-selected", "true");
      else node.removeAttribute("aria-selected");
    }
    drawList();
    status.textContent = defaultStatus();
  };

  const drawList = (): void => {
    clear(list);
    const cell = selectedCell();
    if (!data || !cell) return;
    const [i, k] = cell;
    const order = cellOrder(data, i, k, worstFirst);
    const higher = data.higherIsBetter[k]!;
    const which = worstFirst ? (higher ? "lowest first" : "highest first") : higher ? "highest first" : "lowest first";
    const reverse = h("button", { className: "attnw-eval-reverse", text: "Reverse order", attrs: { type: "button" } });
    reverse.addEventListener("click", () => {
      worstFirst = !worstFirst;
      drawList();
    });
    list.appendChild(
      h("div", { className: "attnw-eval-list-head" }, [
        h("span", { className: "attnw-eval-list-title", text: `${order.length} examples behind ${data.methods[i]} · ${data.metrics[k]}, ${worstFirst ? "worst" : "best"} first (${which}; ${directionText(higher)})` }),
        reverse,
      ]),
    );
    const chosen = model.get("selected_example") ?? "";
    const rows = h("div", { className: "attnw-eval-rows", attrs: { role: "listbox", "aria-label": "Examples" } });
    const shown = showAll ? order : order.slice(0, FIRST_ROWS);
    shown.forEach((e, rank) => {
      const id = data!.ids[e]!;
      const value = valueAt(data!, e, i, k);
      rows.appendChild(
        h(
          "div",
          {
            className: `attnw-eval-example${id === chosen ? " attnw-selected" : ""}`,
            attrs: { role: "option", "data-example": e, "aria-selected": id === chosen ? "true" : undefined, title: data!.texts[e] },
          },
          [
            h("span", { className: "attnw-eval-rank", text: String(rank + 1) }),
            h("span", { className: "attnw-eval-id", text: id }),
            h("span", { className: "attnw-eval-value", text: formatNumber(value) }),
            h("span", { className: "attnw-eval-text", text: data!.texts[e] }),
          ],
        ),
      );
    });
    list.appendChild(rows);
    if (!showAll && order.length > FIRST_ROWS) {
      const more = h("button", { className: "attnw-eval-more", text: `Show all ${order.length}`, attrs: { type: "button" } });
      more.addEventListener("click", () => {
        showAll = true;
        drawList();
      });
      list.appendChild(more);
    }
  };

  const draw = (): void => {
    clear(body);
    data = null;
    try {
      data = decodeEvaluation({
        methods: model.get("methods") ?? [],
        metrics: model.get("metrics") ?? [],
        higher_is_better: model.get("higher_is_better") ?? [],
        summary: model.get("summary"),
        summary_shape: model.get("summary_shape") ?? [0, 0, 4],
        example_ids: model.get("example_ids") ?? [],
        example_texts: model.get("example_texts") ?? [],
        values: model.get("values"),
        values_shape: model.get("values_shape") ?? [0, 0, 0],
      });
      const confidence = Number(model.get("confidence") ?? 0.95);
      body.append(
        h("div", {
          className: "attnw-caption",
          text: `${data.ids.length} examples · ${data.methods.length} methods · ${data.metrics.length} metrics: the mean of each, with its ${formatNumber(confidence * 100)}% bootstrap interval.`,
        }),
        table(data, model.get("metric_summaries") ?? []),
        chart(data),
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      body.appendChild(h("div", { className: "attnw-error", text: `attnwidget: cannot draw this view: ${message}` }));
      console.error("attnwidget evaluation view:", error);
    }
    highlight();
  };

  const target = (event: Event): HTMLElement | null => {
    const node = (event.target as Element | null)?.closest?.("[data-row][data-col], [data-example]") as HTMLElement | null;
    return node && root.contains(node) ? node : null;
  };

  const onClick = (event: MouseEvent): void => {
    const node = target(event);
    if (!node || !data) return;
    if (node.dataset.example !== undefined) {
      const id = data.ids[Number(node.dataset.example)];
      if (id === undefined) return;
      model.set("selected_example", (model.get("selected_example") ?? "") === id ? "" : id);
      model.save_changes();
      return;
    }
    select(Number(node.dataset.row), Number(node.dataset.col));
  };

  const onKey = (event: KeyboardEvent): void => {
    const node = target(event);
    if (event.key === "Escape") {
      model.set("selected", []);
      model.save_changes();
      return;
    }
    if (!node || (event.key !== "Enter" && event.key !== " ")) return;
    event.preventDefault();
    onClick(event as unknown as MouseEvent);
  };

  const onOver = (event: MouseEvent): void => {
    const node = target(event);
    status.textContent = node?.dataset.status ?? defaultStatus();
  };

  let pending = false;
  const scheduleDraw = (): void => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      showAll = false;
      draw();
    });
  };
  const onSelected = (): void => {
    showAll = false;
    highlight();
  };
  const onExample = (): void => drawList();

  const listeners = new Listeners()
    .add(() => root.remove())
    .on(root, "click", onClick)
    .on(root, "keydown", onKey)
    .on(root, "mouseover", onOver)
    .traits(model, DATA_TRAITS, scheduleDraw)
    .traits(model, ["selected"], onSelected)
    .traits(model, ["selected_example"], onExample);
  draw();
  return listeners.dispose;
}

/** The method × metric table: mean over its interval in each cell. */
function table(data: EvaluationData, summaries: readonly string[]): HTMLElement {
  const head = h("tr", {}, [
    h("th", { text: "method", attrs: { scope: "col" } }),
    ...data.metrics.map((metric, k) =>
      h("th", {
        className: "attnw-eval-metric",
        text: `${metric} ${data.higherIsBetter[k] ? "↑" : "↓"}`,
        attrs: { scope: "col", title: `${metric}: ${summaries[k] ?? ""} (${directionText(data.higherIsBetter[k]!)})` },
      }),
    ),
  ]);
  const rows = data.methods.map((method, i) =>
    h("tr", {}, [
      h("th", { className: "attnw-method", text: method, attrs: { scope: "row" } }),
      ...data.metrics.map((metric, k) => {
        const cell = data.cells[i]![k]!;
        const text = `${method} · ${metric}: ${cellText(cell)} over ${formatNumber(cell.count)} examples (${directionText(data.higherIsBetter[k]!)})`;
        return h(
          "td",
          { className: "attnw-eval-cell", attrs: { "data-row": i, "data-col": k, "data-method": method, "data-metric": metric, tabindex: 0, role: "gridcell", title: text, "data-status": text } },
          [
            h("div", { className: "attnw-eval-mean", text: formatNumber(cell.mean) }),
            h("div", { className: "attnw-eval-ci", text: `${formatNumber(cell.low)} … ${formatNumber(cell.high)}` }),
          ],
        );
      }),
    ]),
  );
  return h("div", { className: "attnw-scroll" }, [
    h("table", { className: "attnw-eval-table", attrs: { role: "grid" } }, [h("thead", {}, [head]), h("tbody", {}, rows)]),
  ]);
}

/** Means and intervals: one small panel per metric, one row per method. */
function chart(data: EvaluationData): HTMLElement {
  const rowHeight = 18;
  const label = 110;
  const width = 150;
  const panels = data.metrics.map((metric, k) => {
    const cells = data.methods.map((_, i) => data.cells[i]![k]!);
    const [lo, hi] = axisRange(cells);
    const height = rowHeight * data.methods.length + 22;
    const plot = svg("svg", { class: "attnw-eval-plot", width: label + width + 8, height, role: "img", "aria-label": `${metric}: means and intervals` });
    const x = (value: number): number => label + toX(value, lo, hi, width);
    if (lo < 0 && hi > 0) plot.appendChild(svg("line", { class: "attnw-eval-zero", x1: x(0), x2: x(0), y1: 0, y2: height - 20 }));
    data.methods.forEach((method, i) => {
      const cell = cells[i]!;
      const y = rowHeight * i + rowHeight / 2;
      const text = `${method} · ${metric}: ${cellText(cell)}`;
      const group = svg("g", { class: "attnw-eval-point", "data-row": i, "data-col": k, "data-status": text });
      group.appendChild(svg("title", {}, text));
      group.appendChild(svg("rect", { class: "attnw-eval-hit", x: 0, y: y - rowHeight / 2, width: label + width + 8, height: rowHeight }));
      group.appendChild(svg("text", { class: "attnw-eval-label", x: label - 6, y: y + 4, "text-anchor": "end" }, method));
      if (Number.isFinite(cell.low) && Number.isFinite(cell.high)) {
        group.appendChild(svg("line", { class: "attnw-eval-interval", x1: x(cell.low), x2: x(cell.high), y1: y, y2: y }));
      }
      if (Number.isFinite(cell.mean)) group.appendChild(svg("circle", { class: "attnw-eval-dot", cx: x(cell.mean), cy: y, r: 4 }));
      plot.appendChild(group);
    });
    const axis = height - 6;
    plot.appendChild(svg("text", { class: "attnw-eval-tick", x: label, y: axis, "text-anchor": "start" }, formatNumber(lo)));
    plot.appendChild(svg("text", { class: "attnw-eval-tick", x: label + width, y: axis, "text-anchor": "end" }, formatNumber(hi)));
    return h("figure", { className: "attnw-eval-panel" }, [
      h("figcaption", { text: `${metric} ${data.higherIsBetter[k] ? "↑" : "↓"}` }),
      plot as unknown as HTMLElement,
    ]);
  });
  return h("div", { className: "attnw-eval-chart" }, panels);
}
