/**
 * AlignmentView (traits: AlignmentTraits in alignment_types.ts): the
 * alignment matrix of an RNN encoder–decoder's translation (Bahdanau et al.
 * 2015; Luong et al. 2015), output tokens as rows, input tokens as columns.
 *
 * - Hover a cell: its row and column light up, with their tokens; hover an
 *   output token: its row; an input token: its column. The status line gives
 *   the weight.
 * - Click a cell: selected_output and selected_input (synced to Python); an
 *   output token selects its row only, an input token its column only.
 *
 * Test hooks on the root: data-state (ready | error), data-output,
 * data-input, data-draws; cells carry data-row / data-col, tokens one of them.
 */
import type { AnyModel } from "@anywidget/types";

import { cellClasses, cellColor, clickSelection, NONE, readAlignment, spotOf, type AlignmentData, type Spot } from "./alignment_state";
import type { AlignmentTraits } from "./alignment_types";
import { displayToken, h, microtaskScheduler, saveTraits, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import { formatNumber } from "../core/format";
import styles from "./alignment.css";
import { useBaseStyles } from "../core/base_styles";

type Model = AnyModel<AlignmentTraits>;

const DATA_TRAITS = ["alignment", "shape", "input_tokens", "output_tokens", "caption"] as const;
const VIEW_TRAITS = ["selected_output", "selected_input"] as const;
const HIGHLIGHTS = ["attnw-align-hover", "attnw-align-lit", "attnw-align-selected"];

function table(data: AlignmentData): HTMLTableElement {
  const head = h("tr", {}, [h("th")]);
  data.inputs.forEach((token, j) => {
    const button = h("button", { className: "attnw-align-token attnw-align-input", text: displayToken(token), attrs: { type: "button", "data-col": j } });
    head.appendChild(h("th", {}, [button]));
  });
  const rows: HTMLTableRowElement[] = [head];
  data.outputs.forEach((token, i) => {
    const button = h("button", { className: "attnw-align-token attnw-align-output", text: displayToken(token), attrs: { type: "button", "data-row": i } });
    const row = h("tr", {}, [h("th", {}, [button])]);
    const values = data.matrix.row(i);
    values.forEach((value, j) => {
      const colour = cellColor(value);
      row.appendChild(h("td", {
        className: "attnw-align-cell",
        attrs: { "data-row": i, "data-col": j, title: formatNumber(value) },
        style: { "background-color": colour.fill, color: colour.text },
      }));
    });
    rows.push(row);
  });
  return h("table", { className: "attnw-align-table", attrs: { role: "grid" } }, rows);
}

export function renderAlignmentView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-alignmentview",
    attrs: { tabindex: 0, role: "group", "aria-label": "Alignment view", "data-state": "waiting", "data-draws": 0 },
  });
  const caption = h("div", { className: "attnw-caption attnw-align-caption" });
  const body = h("div", { className: "attnw-align-body" });
  const status = h("div", { className: "attnw-status attnw-align-status", attrs: { "aria-live": "polite" } });
  useBaseStyles(root);
  root.append(styleElement(styles), caption, body, status);
  el.appendChild(root);

  let data: AlignmentData | null = null;
  let hover: Spot = NONE;
  let draws = 0;

  const selected = (): Spot => ({ row: model.get("selected_output"), col: model.get("selected_input") });

  const describe = (spot: Spot): string => {
    if (data === null) return "";
    const out = spot.row >= 0 ? `output ${spot.row} ${JSON.stringify(displayToken(data.outputs[spot.row] ?? ""))}` : "";
    const inp = spot.col >= 0 ? `input ${spot.col} ${JSON.stringify(displayToken(data.inputs[spot.col] ?? ""))}` : "";
    if (spot.row >= 0 && spot.col >= 0) return `${out} ← ${inp}: ${formatNumber(data.matrix.row(spot.row)[spot.col] ?? NaN)}`;
    return out || inp;
  };

  /** Set the highlight classes in place (no rebuild). */
  const highlight = (): void => {
    const sel = selected();
    for (const cell of body.querySelectorAll<HTMLElement>(".attnw-align-cell")) {
      cell.classList.remove(...HIGHLIGHTS);
      const classes = cellClasses(Number(cell.dataset.row), Number(cell.dataset.col), hover, sel);
      if (classes.length) cell.classList.add(...classes);
    }
    for (const token of body.querySelectorAll<HTMLElement>(".attnw-align-token")) {
      token.classList.remove(...HIGHLIGHTS);
      const isRow = token.dataset.row !== undefined;
      const index = Number(isRow ? token.dataset.row : token.dataset.col);
      if ((isRow ? hover.row : hover.col) === index) token.classList.add("attnw-align-hover");
      if ((isRow ? sel.row : sel.col) === index) token.classList.add("attnw-align-lit");
      token.setAttribute("aria-pressed", String((isRow ? sel.row : sel.col) === index));
    }
    root.dataset.output = String(sel.row);
    root.dataset.input = String(sel.col);
    status.textContent = hover.row >= 0 || hover.col >= 0 ? describe(hover) : sel.row >= 0 || sel.col >= 0 ? `selected: ${describe(sel)}` : "";
  };

  const draw = (): void => {
    caption.textContent = model.get("caption") ?? "";
    try {
      data = readAlignment({
        alignment: model.get("alignment"),
        shape: model.get("shape"),
        input_tokens: model.get("input_tokens"),
        output_tokens: model.get("output_tokens"),
      });
    } catch (err) {
      data = null;
      root.dataset.state = "error";
      body.replaceChildren(h("div", { className: "attnw-error", text: err instanceof Error ? err.message : String(err) }));
      return;
    }
    body.replaceChildren(table(data));
    highlight();
    draws += 1;
    root.dataset.draws = String(draws);
    root.dataset.state = "ready";
  };

  const schedule = microtaskScheduler(draw, (err) => {
    root.dataset.state = "error";
    status.textContent = `attnwidget: ${err instanceof Error ? err.message : String(err)}`;
    console.error(err);
  });

  const spotAt = (event: Event): Spot | null => {
    const target = event.target instanceof Element ? event.target.closest<HTMLElement>("[data-row], [data-col]") : null;
    return target && body.contains(target) ? spotOf(target.dataset) : null;
  };
  const onOver = (event: MouseEvent): void => {
    hover = spotAt(event) ?? NONE;
    highlight();
  };
  const onLeave = (): void => {
    hover = NONE;
    highlight();
  };
  const onClick = (event: MouseEvent): void => {
    const spot = spotAt(event);
    if (spot === null) return;
    const pick = clickSelection(spot);
    if (pick.selected_output === model.get("selected_output") && pick.selected_input === model.get("selected_input")) return;
    saveTraits<Pick<AlignmentTraits, "selected_output" | "selected_input">>(model as never, pick);
    highlight();
  };
  const listeners = new Listeners()
    .on(body, "mouseover", onOver)
    .on(body, "mouseleave", onLeave)
    .on(body, "click", onClick)
    .traits(model, DATA_TRAITS, schedule)
    .traits(model, VIEW_TRAITS, highlight);
  schedule();
  return listeners.dispose;
}
