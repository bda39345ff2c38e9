/**
 * FlowView's elements: the controls, the token label columns (coloured by the
 * shown paths' scores), the two canvases and the status lines. Built once per
 * render; flow_view.ts wires them to the model.
 */
import { css, formatFloat32, gradient, textColorFor } from "../core/colors";
import { formatNumber } from "../core/format";
import { displayToken, h, styleElement, tokenName } from "../core/dom";
import styles from "./flow.css";
import { nodeX, type FlowGeometry, type PathData } from "./flow_paths";
import type { FlowData, Selection } from "./flow_state";
import type { FlowStack } from "./flow_types";
import { coverageText, rangeText, scoreRange, type ScaleMode, type ScoreRange } from "../core/score_range";
import { useBaseStyles } from "../core/base_styles";

/** The stack picker's labels (the trait's values are the keys). */
const STACK_LABELS: Record<FlowStack, string> = { encoder: "Encoder", decoder: "Decoder" };

export interface FlowElements {
  root: HTMLElement;
  methodSelect: HTMLSelectElement;
  stackSelect: HTMLSelectElement;
  stackControl: HTMLElement;
  slider: HTMLInputElement;
  sliderText: HTMLElement;
  legend: HTMLElement;
  legendBar: HTMLElement;
  legendText: HTMLElement;
  progress: HTMLElement;
  progressBar: HTMLProgressElement;
  progressText: HTMLElement;
  caption: HTMLElement;
  leftLabels: HTMLElement;
  rightLabels: HTMLElement;
  /** The attention graph (below) and the selection's paths (above). */
  canvasBg: HTMLCanvasElement;
  canvas: HTMLCanvasElement;
  tip: HTMLElement;
  /** The layer numbers over the columns; sticky, so they stay in sight while a long input scrolls. */
  header: HTMLElement;
  note: HTMLElement;
  status: HTMLElement;
}

export function buildFlowElements(): FlowElements {
  const root = h("div", {
    className: "attnw attnw-flow",
    attrs: { tabindex: 0, role: "group", "aria-label": "Token-to-token flow across layers", "data-state": "loading" },
  });
  const methodSelect = h("select", { className: "attnw-flow-method", attrs: { "aria-label": "Method" } });
  const stackSelect = h("select", { className: "attnw-flow-stack", attrs: { "aria-label": "Stack" } });
  // Shown only when the explanation has a decoder (syncControls).
  const stackControl = h("label", { className: "attnw-control", attrs: { hidden: true } }, [h("span", { text: "Stack: " }), stackSelect]);
  const slider = h("input", {
    className: "attnw-flow-threshold",
    attrs: { type: "range", min: 0, max: 0.5, step: 0.005, "aria-label": "Threshold" },
  });
  const sliderText = h("span", { className: "attnw-flow-threshold-value" });
  const legendBar = h("span", { className: "attnw-bar" });
  const legendText = h("span");
  const legend = h("span", { className: "attnw-flow-legend attnw-legend", attrs: { hidden: true } }, [legendBar, legendText]);
  const progressBar = h("progress", { attrs: { max: 1, value: 0 } });
  const progressText = h("span");
  const progress = h("span", { className: "attnw-flow-progress", attrs: { hidden: true, role: "status" } }, [progressBar, progressText]);
  const controls = h("div", { className: "attnw-flow-controls" }, [
    stackControl,
    h("label", { className: "attnw-control" }, [h("span", { text: "Method: " }), methodSelect]),
    h("label", { className: "attnw-control" }, [h("span", { text: "Threshold: " }), slider, sliderText]),
    legend,
    progress,
  ]);
  const caption = h("div", { className: "attnw-caption" });
  const leftLabels = h("div", { className: "attnw-flow-labels attnw-flow-left" });
  const rightLabels = h("div", { className: "attnw-flow-labels attnw-flow-right" });
  const canvasBg = h("canvas", { className: "attnw-flow-canvas attnw-flow-canvas-bg", attrs: { "aria-hidden": "true" } });
  const canvas = h("canvas", { className: "attnw-flow-canvas attnw-flow-canvas-paths", attrs: { role: "img", "aria-label": "Flow diagram" } });
  const tip = h("div", { className: "attnw-flow-tip", attrs: { hidden: true, role: "tooltip" } });
  const header = h("div", { className: "attnw-flow-header", attrs: { "aria-hidden": "true" } });
  const plot = h("div", { className: "attnw-flow-plot" }, [header, canvasBg, canvas, tip]);
  const body = h("div", { className: "attnw-flow-body" }, [leftLabels, plot, rightLabels]);
  const scroller = h("div", { className: "attnw-flow-scroll" }, [body]);
  const note = h("div", { className: "attnw-flow-note" });
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  useBaseStyles(root);
  root.append(styleElement(styles), controls, caption, scroller, note, status);
  return {
    root, methodSelect, stackSelect, stackControl, slider, sliderText, legend, legendBar, legendText,
    progress, progressBar, progressText, caption, leftLabels, rightLabels, canvasBg, canvas, tip, header, note, status,
  };
}

/** The token labels of both columns (input left, top right), one row per token. */
export function buildLabels(e: FlowElements, data: FlowData, g: FlowGeometry): void {
  const { tokens, layers } = data;
  const make = (layer: number, i: number): HTMLElement =>
    h("div", {
      className: "attnw-flow-tok",
      text: displayToken(tokens[i]!),
      attrs: { "data-layer": layer, "data-index": i, role: "button", title: `${layer === 0 ? "Input" : "Top"} #${i} ${tokenName(tokens[i] ?? "", data.rawTokens[i])}` },
      // One row per token: the label's box is the row less a 1 px margin above
      // and below (flow.css), so neighbouring coloured labels never touch.
      style: { height: `${g.rowHeight - 2}px`, "line-height": `${g.rowHeight - 2}px` },
    });
  e.leftLabels.replaceChildren(...tokens.map((_, i) => make(0, i)));
  e.rightLabels.replaceChildren(...tokens.map((_, i) => make(layers, i)));
  for (const column of [e.leftLabels, e.rightLabels]) column.style.paddingTop = `${g.header}px`;
  // The header covers the canvas's own layer numbers (kept there for the PNG/SVG downloads).
  e.header.style.width = `${g.width}px`;
  e.header.style.height = `${g.header}px`;
  e.header.style.marginBottom = `${-g.header}px`;
  e.header.replaceChildren(
    ...Array.from({ length: layers + 1 }, (_, l) =>
      h("span", { text: l === 0 ? "in" : String(l), style: { left: `${nodeX(g, l)}px` } }),
    ),
  );
}

/**
 * Mark the selected and query labels, colour the end tokens the paths reach
 * by their scores, and draw the legend of those colours. The colour range is
 * set by the words (score_range.ts): special tokens and the selected token
 * itself, whose own share (its residual path) dwarfs every other, are drawn
 * clamped and outlined but do not set it.
 */
export function paintLabels(e: FlowElements, data: FlowData, paths: PathData | null, sel: Selection, query: number, mode: ScaleMode = "words"): void {
  const { n, layers, tokens } = data;
  const rangeOf = (layer: number): ScoreRange | null =>
    paths ? scoreRange(paths.nodes.subarray(layer * n, (layer + 1) * n), tokens, { signed: paths.signed, mode, focus: sel.token }) : null;
  const paint = (column: HTMLElement, layer: number, active: boolean): void => {
    const values = paths && active ? paths.nodes.subarray(layer * n, (layer + 1) * n) : null;
    const range = values ? rangeOf(layer) : null;
    const children = column.children;
    for (let i = 0; i < children.length; i++) {
      const label = children[i] as HTMLElement;
      label.classList.toggle("attnw-selected", sel.token === i && sel.layer === layer);
      label.classList.toggle("attnw-query", layer === layers && i === query);
      const where = `${layer === 0 ? "Input" : "Top"} #${i} ${tokenName(tokens[i] ?? "", data.rawTokens[i])}`;
      if (range && values && paths) {
        const value = values[i] as number;
        const background = range.scale.color(value);
        const unscaled = range.excluded.includes(i);
        const beyond = range.beyond(value);
        label.style.backgroundColor = css(background);
        label.style.color = css(textColorFor(background));
        label.classList.toggle("attnw-unscaled", unscaled);
        label.classList.toggle("attnw-beyond", beyond);
        // Full precision for tests and tools (not shown); people read the title.
        label.dataset.score = formatFloat32(value);
        const notes = [unscaled ? "not in the colour range" : "", beyond ? "beyond the colour range, drawn at its end" : ""].filter(Boolean);
        label.title = `${where} · ${paths.method} ${formatNumber(value)}${notes.length ? ` (${notes.join("; ")})` : ""}`;
      } else {
        label.style.removeProperty("background-color");
        label.style.removeProperty("color");
        label.classList.remove("attnw-unscaled", "attnw-beyond");
        delete label.dataset.score;
        label.title = where;
      }
    }
  };
  paint(e.leftLabels, 0, sel.layer > 0);
  paint(e.rightLabels, layers, sel.layer < layers);
  // Legend of the label colours (the input tokens' scale when going down).
  const end = sel.layer > 0 ? 0 : layers;
  const range = rangeOf(end);
  e.legend.hidden = !range;
  if (range && paths) {
    e.legendBar.style.background = gradient(range.scale.stops);
    e.legendText.textContent = `${end === 0 ? "input" : "top"} ${paths.method}: ${rangeText(range.scale)} (${coverageText(range, tokens, sel.token, "the selected token")})`;
  }
}

/** The pickers, the slider and the caption as the traits say. */
export function syncControls(
  e: FlowElements,
  t: { stacks: readonly string[]; stack: string; methods: readonly string[]; summaries: readonly string[]; method: string; threshold: number; caption: string },
  offline: boolean,
): void {
  if (Array.from(e.stackSelect.options, (o) => o.value).join("\n") !== t.stacks.join("\n")) {
    e.stackSelect.replaceChildren(...t.stacks.map((s) => h("option", { text: STACK_LABELS[s as FlowStack] ?? s, attrs: { value: s } })));
  }
  e.stackSelect.value = t.stack;
  e.stackControl.hidden = t.stacks.length < 2;
  // A saved page embeds the shown stack's attention only: no kernel to send the other.
  e.stackSelect.disabled = offline;
  e.stackControl.title = offline
    ? "A saved page holds one stack; switch stacks in the notebook."
    : "Which self-attention to draw. Cross-attention (decoder → encoder) is not drawn: HeadView's cross matrix shows it.";
  if (Array.from(e.methodSelect.options, (o) => o.value).join("\n") !== t.methods.join("\n")) {
    e.methodSelect.replaceChildren(...t.methods.map((m, i) => h("option", { text: m, attrs: { value: m, title: t.summaries[i] ?? "" } })));
  }
  e.methodSelect.value = t.method;
  if (Number(e.slider.value) !== t.threshold) e.slider.value = String(t.threshold);
  e.sliderText.textContent = formatNumber(t.threshold);
  e.caption.textContent = t.caption;
}
