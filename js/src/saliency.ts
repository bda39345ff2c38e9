/**
 * SaliencyView: input tokens coloured by each method's scores, one row per
 * method (traits: SaliencyTraits in types.ts).
 *
 * - Signed methods use the diverging PuOr map centred at 0, the others
 *   viridis; every row is normalised by its own max |score|.
 * - Hover shows method, token, index and the exact score (title + status line).
 * - Click a token (or use the arrow keys) to set `selected_token`; clicking the
 *   selected token again clears it (-1). A change from Python highlights the
 *   token's column.
 */
import type { AnyModel } from "@anywidget/types";

import { decodeMatrix, type Matrix } from "./buffers";
import { css, formatFloat32, gradient, scaleFor, textColorFor, type Scale } from "./colors";
import { clear, displayToken, h, styleElement } from "./dom";
import styles from "./styles.css";
import type { SaliencyTraits } from "./types";

type Model = AnyModel<SaliencyTraits>;

/** Traits whose change redraws the whole view. */
const DATA_TRAITS = ["tokens", "methods", "summaries", "signed", "scores", "shape", "query_index"] as const;

interface Drawn {
  /** cells[j]: the cells of token column j, one per method row. */
  cells: HTMLElement[][];
  tokens: string[];
  methods: string[];
  matrix: Matrix;
  scroller: HTMLElement;
}

export function renderSaliency({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-saliency",
    attrs: { tabindex: 0, role: "group", "aria-label": "Token relevance by method" },
  });
  const body = h("div");
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  root.append(styleElement(styles), body, status);
  clear(el);
  el.appendChild(root);

  let drawn: Drawn | null = null;
  let selected = -1;

  const selectedText = (): string => {
    if (!drawn || selected < 0 || selected >= drawn.tokens.length) {
      return "Click a token to select it (arrow keys move, Esc clears).";
    }
    const parts = drawn.methods.map(
      (name, i) => `${name} ${formatFloat32(drawn!.matrix.data[i * drawn!.matrix.cols + selected] as number)}`,
    );
    return `Selected #${selected} ${JSON.stringify(drawn.tokens[selected])}: ${parts.join(" · ")}`;
  };

  const highlight = (index: number): void => {
    if (drawn) {
      for (const cell of drawn.cells[selected] ?? []) {
        cell.classList.remove("attnw-selected");
        cell.removeAttribute("aria-selected");
      }
    }
    selected = index;
    root.dataset.selected = String(index);
    if (drawn) {
      const column = drawn.cells[index] ?? [];
      for (const cell of column) {
        cell.classList.add("attnw-selected");
        cell.setAttribute("aria-selected", "true");
      }
      if (column[0]) scrollIntoColumn(drawn.scroller, column[0]);
    }
    status.textContent = selectedText();
  };

  const draw = (): void => {
    clear(body);
    drawn = null;
    try {
      drawn = build(model, body);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      body.appendChild(h("div", { className: "attnw-error", text: `attnwidget: cannot draw this view: ${message}` }));
      console.error("attnwidget saliency view:", error);
    }
    highlight(model.get("selected_token") ?? -1);
  };

  const select = (index: number): void => {
    model.set("selected_token", index);
    model.save_changes();
  };

  const onClick = (event: MouseEvent): void => {
    const cell = (event.target as Element | null)?.closest?.(".attnw-tok") as HTMLElement | null;
    if (!cell || !root.contains(cell)) return;
    const index = Number(cell.dataset.index);
    if (!Number.isInteger(index)) return;
    select(index === selected ? -1 : index);
  };

  const onOver = (event: MouseEvent): void => {
    const cell = (event.target as Element | null)?.closest?.(".attnw-tok") as HTMLElement | null;
    status.textContent = cell && root.contains(cell) ? (cell.title ?? "") : selectedText();
  };

  const onLeave = (): void => {
    status.textContent = selectedText();
  };

  const onKey = (event: KeyboardEvent): void => {
    if (!drawn) return;
    const n = drawn.tokens.length;
    let next: number | null = null;
    if (event.key === "ArrowRight") next = selected < 0 ? 0 : Math.min(n - 1, selected + 1);
    else if (event.key === "ArrowLeft") next = selected < 0 ? n - 1 : Math.max(0, selected - 1);
    else if (event.key === "Home") next = 0;
    else if (event.key === "End") next = n - 1;
    else if (event.key === "Escape") next = -1;
    if (next === null || n === 0) return;
    event.preventDefault();
    if (next !== selected) select(next);
  };

  // Coalesce several trait changes of one kernel message into one redraw.
  let pending = false;
  const scheduleDraw = (): void => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      draw();
    });
  };
  const onSelected = (): void => highlight(model.get("selected_token") ?? -1);

  root.addEventListener("click", onClick);
  root.addEventListener("mouseover", onOver);
  root.addEventListener("mouseleave", onLeave);
  root.addEventListener("keydown", onKey);
  for (const name of DATA_TRAITS) model.on(`change:${name}`, scheduleDraw);
  model.on("change:selected_token", onSelected);
  draw();

  return () => {
    for (const name of DATA_TRAITS) model.off(`change:${name}`, scheduleDraw);
    model.off("change:selected_token", onSelected);
    root.removeEventListener("click", onClick);
    root.removeEventListener("mouseover", onOver);
    root.removeEventListener("mouseleave", onLeave);
    root.removeEventListener("keydown", onKey);
    root.remove();
  };
}

/** Build the grid of methods x tokens into `body`. */
function build(model: Model, body: HTMLElement): Drawn {
  const tokens = (model.get("tokens") ?? []).map(String);
  const methods = (model.get("methods") ?? []).map(String);
  const summaries = model.get("summaries") ?? [];
  const signed = model.get("signed") ?? [];
  const matrix = decodeMatrix(model.get("scores"), model.get("shape") ?? [0, 0]);
  if (matrix.rows !== methods.length || matrix.cols !== tokens.length) {
    throw new RangeError(
      `scores have shape [${matrix.rows}, ${matrix.cols}] but there are ${methods.length} methods and ${tokens.length} tokens`,
    );
  }
  const query = model.get("query_index") ?? -1;
  if (query >= 0 && query < tokens.length) {
    body.appendChild(
      h("div", {
        className: "attnw-caption",
        text: `Relevance of each token for the query at #${query} ${JSON.stringify(tokens[query])} (dotted underline).`,
      }),
    );
  }

  const grid = h("div", {
    className: "attnw-grid",
    attrs: { role: "grid", "aria-rowcount": methods.length, "aria-colcount": tokens.length + 1 },
    style: { "grid-template-columns": `max-content repeat(${tokens.length}, max-content)` },
  });
  const cells: HTMLElement[][] = tokens.map(() => []);
  const shown = tokens.map(displayToken);

  methods.forEach((method, i) => {
    const row = matrix.row(i);
    const scale = scaleFor(row, Boolean(signed[i]));
    grid.appendChild(labelCell(method, summaries[i] ?? "", scale));
    for (let j = 0; j < tokens.length; j++) {
      const value = row[j] as number;
      const background = scale.color(value);
      const cell = h("span", {
        className: j === query ? "attnw-tok attnw-query" : "attnw-tok",
        text: shown[j],
        attrs: {
          role: "gridcell",
          "data-index": j,
          "data-method": method,
          title: `${method} · #${j} ${JSON.stringify(tokens[j])} · score ${formatFloat32(value)}`,
        },
        style: { "background-color": css(background), color: css(textColorFor(background)) },
      });
      cells[j]!.push(cell);
      grid.appendChild(cell);
    }
  });

  const scroller = h("div", { className: "attnw-scroll" }, [grid]);
  body.appendChild(scroller);
  return { cells, tokens, methods, matrix, scroller };
}

function labelCell(method: string, summary: string, scale: Scale): HTMLElement {
  const max = formatFloat32(Math.fround(scale.max));
  const range = scale.signed ? `−${max} … 0 … ${max}` : `0 … ${max}`;
  return h(
    "div",
    {
      className: "attnw-label",
      attrs: {
        role: "rowheader",
        title: `${method}${summary ? `: ${summary}` : ""}\n${scale.signed ? "signed scores: diverging colours centred at 0" : "non-negative scores"}; colours scaled by max |score| = ${max}`,
      },
    },
    [
      h("span", { className: "attnw-method", text: method }),
      h("span", { className: "attnw-legend" }, [
        h("span", { className: "attnw-bar", style: { background: gradient(scale.stops) } }),
        h("span", { text: range }),
      ]),
    ],
  );
}

/** Scroll the grid's scroller sideways (only) so that a cell is visible. */
function scrollIntoColumn(scroller: HTMLElement, cell: HTMLElement): void {
  const left = cell.offsetLeft;
  const right = left + cell.offsetWidth;
  const label = scroller.querySelector<HTMLElement>(".attnw-label")?.offsetWidth ?? 0;
  if (left - label < scroller.scrollLeft) scroller.scrollLeft = Math.max(0, left - label - 8);
  else if (right > scroller.scrollLeft + scroller.clientWidth) scroller.scrollLeft = right - scroller.clientWidth + 8;
}
