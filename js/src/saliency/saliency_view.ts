/**
 * SaliencyView: input tokens coloured by each method's scores
 * (traits: SaliencyTraits in types.ts).
 *
 * - Layout: one column per token holding one cell per method; the columns
 *   wrap into lines that fit the output's width, so every line shows the
 *   same tokens for every method, rows aligned, and 300–1,000 tokens read
 *   without sideways scrolling. The method names are repeated at the left
 *   of each line (absolutely placed, so they never change where lines break).
 * - Colours: signed methods use the diverging PuOr map centred at 0, the
 *   others viridis; every row has its own range. By default (`scale:
 *   "words"`) the range is set by the words only: special tokens and the
 *   query are drawn, clamped and outlined, but a CLS row's one huge score no
 *   longer paints every word dark (score_range.ts). `scale: "all"` includes them.
 * - Hover shows method, token, index and the score (title + status line).
 * - Click a token (or use the arrow keys) to set `selected_token`; clicking the
 *   selected token again clears it (-1). A change from Python highlights the
 *   token's column.
 * - A sentence pair (similarity of two embeddings) draws the second text as a
 *   second block under the first, the same method rows on the same colour
 *   range per method (both sides explain one similarity); only the first
 *   text's tokens are selectable.
 */
import type { AnyModel } from "@anywidget/types";

import { decodeMatrix, type Matrix } from "../core/buffers";
import { gradient } from "../core/colors";
import { clear, h, styleElement, reveal as revealElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import { formatNumber } from "../core/format";
import { coverageText, rangeText, scoreRange, type ScaleMode, type ScoreRange } from "../core/score_range";
import { grid, placeLineLabels } from "./saliency_grid";
import { useBaseStyles } from "../core/base_styles";
import styles from "./saliency.css";
import type { SaliencyTraits } from "./saliency_types";

type Model = AnyModel<SaliencyTraits>;

/** Traits whose change redraws the whole view. */
const DATA_TRAITS = [
  "tokens",
  "methods",
  "summaries",
  "signed",
  "scores",
  "shape",
  "query_index",
  "scale",
  "pair_tokens",
  "pair_scores",
  "pair_shape",
  "target_score",
  "pooling",
] as const;

const SCALE_LABELS: Record<ScaleMode, string> = { words: "words", all: "all tokens" };

interface Drawn {
  /** cells[j]: the cells of token column j, one per method row. */
  cells: HTMLElement[][];
  columns: HTMLElement[];
  tokens: string[];
  methods: string[];
  matrix: Matrix;
  lines: HTMLElement;
  labelTemplate: HTMLElement;
  /** The second text's grid (a similarity pair), or null. */
  pair: { lines: HTMLElement; columns: HTMLElement[] } | null;
}

export function renderSaliency({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-saliency",
    attrs: { tabindex: 0, role: "group", "aria-label": "Token relevance by method" },
  });
  const scaleSelect = h("select", { className: "attnw-saliency-scale", attrs: { "aria-label": "Colour range" } }, [
    h("option", { text: SCALE_LABELS.words, attrs: { value: "words" } }),
    h("option", { text: SCALE_LABELS.all, attrs: { value: "all" } }),
  ]);
  const body = h("div");
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  useBaseStyles(root);
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
      (name, i) => `${name} ${formatNumber(drawn!.matrix.data[i * drawn!.matrix.cols + selected] as number)}`,
    );
    return `Selected #${selected} ${JSON.stringify(drawn.tokens[selected])}: ${parts.join(" · ")}`;
  };

  const highlight = (index: number, reveal = false): void => {
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
      // Keys and Python's changes scroll the token into sight (as little as
      // needed); a click is already in view.
      if (reveal) revealElement(drawn.columns[index]);
    }
    status.textContent = selectedText();
  };

  const layout = (): void => {
    if (drawn) placeAllLabels(drawn);
  };
  const resizes = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(layout);

  const draw = (): void => {
    clear(body);
    resizes?.disconnect();
    drawn = null;
    const mode: ScaleMode = model.get("scale") === "all" ? "all" : "words";
    scaleSelect.value = mode;
    try {
      drawn = build(model, body, scaleSelect, mode);
      placeAllLabels(drawn);
      resizes?.observe(drawn.lines);
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
    if (!cell || !root.contains(cell) || cell.classList.contains("attnw-pair")) return;
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
    if (!drawn || event.target === scaleSelect) return;
    const n = drawn.tokens.length;
    let next: number | null = null;
    if (event.key === "ArrowRight") next = selected < 0 ? 0 : Math.min(n - 1, selected + 1);
    else if (event.key === "ArrowLeft") next = selected < 0 ? n - 1 : Math.max(0, selected - 1);
    else if (event.key === "Home") next = 0;
    else if (event.key === "End") next = n - 1;
    else if (event.key === "Escape") next = -1;
    if (next === null || n === 0) return;
    event.preventDefault();
    if (next !== selected) {
      select(next);
      highlight(next, true);
    }
  };

  const onScale = (): void => {
    model.set("scale", scaleSelect.value === "all" ? "all" : "words");
    model.save_changes();
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
  const onSelected = (): void => highlight(model.get("selected_token") ?? -1, true);

  const listeners = new Listeners()
    .add(() => root.remove())
    .on(root, "click", onClick)
    .on(root, "mouseover", onOver)
    .on(root, "mouseleave", onLeave)
    .on(root, "keydown", onKey)
    .on(scaleSelect, "change", onScale)
    .add(() => resizes?.disconnect())
    .traits(model, DATA_TRAITS, scheduleDraw)
    .traits(model, ["selected_token"], onSelected);
  draw();
  return listeners.dispose;
}

/** Build the legends and the wrapped token columns into `body`. */
function build(model: Model, body: HTMLElement, scaleSelect: HTMLSelectElement, mode: ScaleMode): Drawn {
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
  const rawQuery = model.get("query_index") ?? -1;
  const query = rawQuery >= 0 && rawQuery < tokens.length ? rawQuery : -1;
  if (query >= 0) {
    body.appendChild(
      h("div", {
        className: "attnw-caption",
        text: `Relevance of each token for the query at #${query} ${JSON.stringify(tokens[query])} (dotted underline).`,
      }),
    );
  }

  const pairTokens = (model.get("pair_tokens") ?? []).map(String);
  const pairMatrix = decodeMatrix(model.get("pair_scores"), model.get("pair_shape") ?? [0, 0], "pair_scores");
  const hasPair = pairTokens.length > 0;
  if (hasPair && (pairMatrix.rows !== methods.length || pairMatrix.cols !== pairTokens.length)) {
    throw new RangeError(
      `pair_scores have shape [${pairMatrix.rows}, ${pairMatrix.cols}] but there are ${methods.length} methods and ${pairTokens.length} tokens of the second text`,
    );
  }
  const score = model.get("target_score");
  if (hasPair) {
    const pooling = model.get("pooling") ? `${model.get("pooling")}-pooled ` : "";
    body.appendChild(
      h("div", {
        className: "attnw-caption attnw-saliency-similarity",
        text: `Cosine similarity of the two texts' ${pooling}embeddings: ${score == null ? "?" : formatNumber(score)}. Each text's tokens are scored for it with the other text held fixed; both texts share each method's colours.`,
      }),
    );
  }
  // With a pair, each method's range covers both texts (indices n.. are the pair's).
  const allTokens = hasPair ? [...tokens, ...pairTokens] : tokens;
  const rowValues = (i: number): ArrayLike<number> => {
    if (!hasPair) return matrix.row(i);
    const both = new Float32Array(tokens.length + pairTokens.length);
    both.set(matrix.row(i), 0);
    both.set(pairMatrix.row(i), tokens.length);
    return both;
  };
  const ranges = methods.map((_, i) => scoreRange(rowValues(i), allTokens, { signed: Boolean(signed[i]), mode, focus: query }));
  // The rows share tokens and query, so they leave out the same positions
  // (a row falls back to "all" only when its words are all 0).
  const shared = ranges.find((r) => r.covers === "words") ?? ranges[0];
  // Name the query's token: it is often [CLS] itself, or a word.
  const queryName = query >= 0 ? `the query (${tokens[query]})` : "the query";
  const coverage = shared ? coverageText(shared, allTokens, query, queryName) : "";
  const marks = shared && shared.excluded.length ? " (dashed outline: drawn but not in the range; hatched: beyond it)" : " (hatched: beyond the range)";
  body.appendChild(
    h("div", { className: "attnw-saliency-head" }, [
      h("label", { className: "attnw-control" }, [h("span", { text: "Colour range over " }), scaleSelect]),
      h("span", { className: "attnw-saliency-coverage", text: `Each method's colours: ${coverage}${marks}.` }),
    ]),
  );
  body.appendChild(
    h(
      "div",
      { className: "attnw-saliency-legends" },
      methods.map((method, i) => legend(method, summaries[i] ?? "", coverageText(ranges[i]!, allTokens, query, queryName), ranges[i]!)),
    ),
  );

  const cells: HTMLElement[][] = tokens.map(() => []);
  const columns: HTMLElement[] = [];
  const raw = (model.get("raw_tokens") ?? []).map(String);
  const lines = grid({ tokens, raw, methods, matrix, ranges, offset: 0, query, cells, columns, pair: false });
  const labelTemplate = h(
    "div",
    { className: "attnw-line-labels", attrs: { "aria-hidden": "true" } },
    methods.map((method) => h("div", { className: "attnw-line-label", text: method })),
  );
  if (hasPair) body.appendChild(h("div", { className: "attnw-caption", text: "First text" }));
  body.appendChild(h("div", { className: "attnw-scroll" }, [lines]));
  let pair: Drawn["pair"] = null;
  if (hasPair) {
    const pairColumns: HTMLElement[] = [];
    const pairCells: HTMLElement[][] = pairTokens.map(() => []);
    const pairLines = grid({
      tokens: pairTokens,
      raw: [],
      methods,
      matrix: pairMatrix,
      ranges,
      offset: tokens.length,
      query: -1,
      cells: pairCells,
      columns: pairColumns,
      pair: true,
    });
    pairLines.classList.add("attnw-saliency-pair");
    body.appendChild(h("div", { className: "attnw-caption", text: "Second text (text_pair)" }));
    body.appendChild(h("div", { className: "attnw-scroll" }, [pairLines]));
    pair = { lines: pairLines, columns: pairColumns };
  }
  return { cells, columns, tokens, methods, matrix, lines, labelTemplate, pair };
}

/** One method's legend: name, colour bar and the range it covers. */
function legend(method: string, summary: string, coverage: string, range: ScoreRange): HTMLElement {
  const { scale } = range;
  const text = rangeText(scale);
  return h(
    "div",
    {
      className: "attnw-label",
      attrs: {
        "data-method": method,
        title: `${method}${summary ? `: ${summary}` : ""}\n${scale.signed ? "signed scores: diverging colours centred at 0" : "non-negative scores"}; colours from ${text}, ${coverage}`,
      },
    },
    [
      h("span", { className: "attnw-method", text: method }),
      h("span", { className: "attnw-legend" }, [
        h("span", { className: "attnw-bar", style: { background: gradient(scale.stops) } }),
        h("span", { className: "attnw-range", text }),
      ]),
    ],
  );
}

/** Line labels for the first text's grid and, with a pair, the second's. */
function placeAllLabels(d: Drawn): void {
  placeLineLabels(d.lines, d.columns, d.labelTemplate);
  if (d.pair) placeLineLabels(d.pair.lines, d.pair.columns, d.labelTemplate);
}
