/**
 * GenerationView (traits: GenerationTraits in generation_types.ts): every
 * generated token's scores over the tokens before it (Inseq-style per-step
 * attribution; Sarti et al. 2023), one method at a time.
 *
 * - The heat map: generated tokens (rows) × context tokens (columns); cells
 *   a step never saw are hatched. Each row has its own colour range.
 * - Click a generated token or a cell: `selected_step` (synced); below the
 *   map, that step's saliency over the context and its flow diagram.
 * - The menus set `method` and `aggregate` (tokens or words; synced).
 *
 * Test hooks on the root: data-state (ready | error), data-step,
 * data-method, data-aggregate, data-draws.
 */
import type { AnyModel } from "@anywidget/types";

import { displayToken, h, microtaskScheduler, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import { flowDiagram, heatmap, saliencyStrip } from "./generation_draw";
import { DATA_TRAITS, saveAggregate, saveMethod, saveStep, VIEW_TRAITS } from "./generation_messages";
import { clickStep, gridOf, methodIndex, readGeneration, stepOf, type Aggregate, type GenerationData } from "./generation_state";
import type { GenerationTraits } from "./generation_types";
import styles from "./generation.css";
import { useBaseStyles } from "../core/base_styles";

type Model = AnyModel<GenerationTraits>;

function select(options: string[], value: string, label: string): HTMLSelectElement {
  const menu = h("select", { attrs: { "aria-label": label } }, options.map((o) => h("option", { text: o, attrs: { value: o } })));
  menu.value = value;
  return menu;
}

export function renderGenerationView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-generationview",
    attrs: { tabindex: 0, role: "group", "aria-label": "Generation view", "data-state": "waiting", "data-draws": 0 },
  });
  const caption = h("div", { className: "attnw-caption attnw-gen-caption" });
  const controls = h("div", { className: "attnw-gen-controls" });
  const note = h("div", {
    className: "attnw-gen-note",
    text: "Each row is coloured by its own largest |score|; hatched cells are positions a step had not generated yet.",
  });
  const body = h("div", { className: "attnw-scroll attnw-gen-body" });
  const detail = h("div", { className: "attnw-gen-detail" });
  const status = h("div", { className: "attnw-status attnw-gen-status", attrs: { "aria-live": "polite" } });
  useBaseStyles(root);
  root.append(styleElement(styles), caption, controls, note, body, detail, status);
  el.appendChild(root);

  let data: GenerationData | null = null;
  let draws = 0;

  const fail = (err: unknown): void => {
    root.dataset.state = "error";
    body.replaceChildren(h("div", { className: "attnw-error", text: err instanceof Error ? err.message : String(err) }));
  };

  const read = (): void => {
    caption.textContent = model.get("caption") ?? "";
    data = readGeneration({
      scores: model.get("scores"),
      shape: model.get("shape"),
      methods: model.get("methods"),
      signed: model.get("signed"),
      columns: model.get("columns"),
      generated_tokens: model.get("generated_tokens"),
      prompt_length: model.get("prompt_length"),
      prefix_lengths: model.get("prefix_lengths"),
      words: model.get("words"),
      word_labels: model.get("word_labels"),
    });
  };

  const draw = (): void => {
    if (data === null) return;
    const method = model.get("selected_method");
    const mode: Aggregate = model.get("aggregate") === "words" ? "words" : "tokens";
    const step = model.get("selected_step");
    const grid = gridOf(data, methodIndex(data, method), mode);
    const methods = select(data.methods, method, "method");
    methods.addEventListener("change", () => saveMethod(model, methods.value));
    const aggregate = select(["tokens", "words"], mode, "columns");
    aggregate.addEventListener("change", () => saveAggregate(model, aggregate.value === "words" ? "words" : "tokens"));
    controls.replaceChildren(h("label", { text: "method " }, [methods]), h("label", { text: "columns " }, [aggregate]));
    body.replaceChildren(heatmap(grid, data.generated, step));
    if (step >= 0 && step < data.steps) {
      const target = data.generated[step] ?? "";
      detail.replaceChildren(saliencyStrip(grid, step), flowDiagram(grid, step, target));
      status.textContent = `step ${step}: ${JSON.stringify(displayToken(target))} (${method})`;
    } else {
      detail.replaceChildren();
      status.textContent = "";
    }
    draws += 1;
    root.dataset.step = String(step);
    root.dataset.method = method;
    root.dataset.aggregate = mode;
    root.dataset.draws = String(draws);
    root.dataset.state = "ready";
  };

  const reread = microtaskScheduler(() => {
    try {
      read();
    } catch (err) {
      data = null;
      fail(err);
      return;
    }
    draw();
  }, fail);
  const redraw = microtaskScheduler(draw, fail);

  const onClick = (event: MouseEvent): void => {
    const target = event.target instanceof Element ? event.target.closest<HTMLElement>("[data-step]") : null;
    if (!target || !body.contains(target)) return;
    const step = stepOf(target.dataset);
    if (step === null) return;
    saveStep(model, target.tagName === "BUTTON" ? clickStep(step, model.get("selected_step")) : step);
    redraw();
  };
  const listeners = new Listeners()
    .on(body, "click", onClick)
    .traits(model, DATA_TRAITS, reread)
    .traits(model, VIEW_TRAITS, redraw);
  reread();
  return listeners.dispose;
}
