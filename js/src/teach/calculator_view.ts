/**
 * AttentionCalculator (traits: CalculatorTraits in calculator_types.ts): one
 * attention step on a few editable vectors, every step drawn.
 *
 * - Controls: the score function, the mask, D, L, the temperature (slider
 *   and number) and β. Editors: one text input per entry of q, k, v and of
 *   the parameters the chosen kinds read; a slider drags the entry last
 *   focused. Every edit is saved to the kernel, which computes the steps
 *   (attnwidget.teach) and sends them back; the page only draws them.
 * - Steps: scores, masked scores, weights (local-p: Gaussian and weights ×
 *   Gaussian), output; each a labelled matrix with its formula in MathML.
 *   Hover (or focus) a cell: its arithmetic written out (tooltip and status).
 * - An input Python refuses shows its message; the last good steps stay.
 *
 * Test hooks on the root: data-state (ready | error), data-version (the
 * steps drawn), data-revision, data-score, data-mask, data-draws.
 */
import type { AnyModel } from "@anywidget/types";

import { select, setOptions } from "../attention/attention_common";
import { h, microtaskScheduler, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import { buildEditor, updateEditor, type Editor } from "./calculator_draw";
import { REPLY_MS, ReplyWatch, save, saveEntry } from "./calculator_messages";
import { ARRAY_NAMES, decodeWire, inputText, labels, parseNumber, readInputs, readSteps, type Inputs, type Steps } from "./calculator_state";
import { stepView } from "./calculator_steps";
import { cellArithmetic } from "./calculator_text";
import { KIND_PARAMS, MASK_KINDS, SCORE_KINDS, type ArrayName, type CalculatorTraits, type StepName } from "./calculator_types";
import styles from "./calculator.css";
import { useBaseStyles } from "../core/base_styles";

type Model = AnyModel<CalculatorTraits>;

const NO_REPLY = `No computation came back from the kernel within ${REPLY_MS / 1000} s. A saved page (to_html) has no kernel: it shows the steps it was saved with; run the notebook to compute new ones.`;
const INPUT_TRAITS = ["q", "k", "v", "W", "W1", "W2", "v_a", "W_p", "v_p", "query_tokens", "key_tokens", "score_kind", "mask_kind", "beta", "temperature", "window", "lengths", "caption"];
const STEP_TRAITS = ["scores", "masked_scores", "weights", "gaussian", "local_weights", "positions", "output", "steps_info", "error", "revision"];

/** What each editor is called. */
const TITLES: Record<ArrayName, string> = {
  q: "Queries q (m × d)",
  k: "Keys k (n × d)",
  v: "Values v (n × d_v)",
  W: "W",
  W1: "W₁ (h × d)",
  W2: "W₂ (h × d)",
  v_a: "vₐ (h)",
  W_p: "W_p (h × d), local-p",
  v_p: "v_p (h), local-p",
};

function numberField(label: string, className: string, attrs: Record<string, string | number>): { wrap: HTMLElement; input: HTMLInputElement } {
  const input = h("input", { className, attrs: { type: "text", inputmode: "decimal", size: 4, ...attrs } });
  return { wrap: h("label", { className: "attnw-control" }, [h("span", { text: `${label} ` }), input]), input };
}

export function renderCalculator({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-calculator",
    attrs: { tabindex: 0, role: "group", "aria-label": "Attention calculator", "data-state": "ready", "data-draws": 0 },
  });
  const scorePick = select("Score:", "attnw-calc-score", (value) => sendScalar({ score_kind: value }));
  const maskPick = select("Mask:", "attnw-calc-mask", (value) => sendScalar({ mask_kind: value }));
  const windowField = numberField("D", "attnw-calc-window", { "aria-label": "Window half-width D" });
  const lengthField = numberField("L", "attnw-calc-lengths", { "aria-label": "Padding: number of real keys L", placeholder: "all" });
  const tempSlider = h("input", { className: "attnw-calc-temperature-slider", attrs: { type: "range", min: 0.05, max: 5, step: 0.05, "aria-label": "Temperature T" } });
  const tempField = numberField("T", "attnw-calc-temperature", { "aria-label": "Temperature T (number)" });
  const betaField = numberField("β", "attnw-calc-beta", { "aria-label": "Cosine sharpening β" });
  const caption = h("div", { className: "attnw-caption attnw-calc-caption" });
  // q, k, v and the parameters in two boxes: a kind's parameters coming and going
  // re-lay out only theirs.
  const vectors = h("div", { className: "attnw-calc-vectors" });
  const params = h("div", { className: "attnw-calc-params" });
  const editors = h("div", { className: "attnw-calc-editors" }, [vectors, params]);
  const sliderLabel = h("span", { className: "attnw-calc-slider-label", text: "Drag: click an entry first" });
  const slider = h("input", { className: "attnw-calc-slider", attrs: { type: "range", min: -3, max: 3, step: 0.05, disabled: true, "aria-label": "Value of the entry last focused" } });
  const errorBox = h("div", { className: "attnw-calc-error", attrs: { role: "alert", hidden: true } });
  const stepsEl = h("div", { className: "attnw-calc-steps" });
  const tip = h("div", { className: "attnw-tip attnw-calc-tip", attrs: { role: "tooltip", hidden: true } });
  const status = h("div", { className: "attnw-status attnw-calc-status", attrs: { "aria-live": "polite" } });
  useBaseStyles(root);
  root.append(
    styleElement(styles),
    h("div", { className: "attnw-controls" }, [
      scorePick.wrap,
      betaField.wrap,
      maskPick.wrap,
      windowField.wrap,
      lengthField.wrap,
      h("label", { className: "attnw-control" }, [h("span", { text: "Temperature " }), tempSlider]),
      tempField.wrap,
    ]),
    caption,
    editors,
    h("div", { className: "attnw-calc-drag" }, [sliderLabel, slider]),
    errorBox,
    stepsEl,
    tip,
    status,
  );
  el.appendChild(root);

  let built: Record<string, Editor> = {};
  let focused: { name: ArrayName; index: number } | null = null;
  let good: Inputs | null = null; // the inputs the drawn steps came from
  let steps: Steps | null = null;
  let drawnVersion = -1;
  let drawnNames = "";
  let localError = "";
  let silent = false;
  // While an edit of the page's own awaits the kernel's steps, input changes are
  // not drawn on their own: the reply (within ms) draws them with the new steps
  // in one frame. A page with no kernel draws them when the watch gives up.
  let awaiting = false;
  const watch = new ReplyWatch(() => {
    silent = true;
    awaiting = false;
    schedule();
  });

  const sendEntry = (name: ArrayName, index: number, value: number): void => {
    const was = awaiting;
    awaiting = true;
    if (!saveEntry(model, name, index, value)) {
      awaiting = was;
      return;
    }
    localError = "";
    watch.sent();
  };
  const sendScalar = (patch: Parameters<typeof save>[1]): void => {
    localError = "";
    awaiting = true;
    save(model, patch);
    watch.sent();
  };

  // -- editors -------------------------------------------------------------------
  const shownArrays = (inputs: Inputs): ArrayName[] => {
    const params = [...(KIND_PARAMS[inputs.scoreKind] ?? []), ...(inputs.maskKind === "local-p" ? (KIND_PARAMS["local-p"] ?? []) : [])];
    return ["q", "k", "v", ...params.filter((p, i) => params.indexOf(p) === i)];
  };
  const rowNames = (name: ArrayName, inputs: Inputs): string[] => {
    if (name === "q") return inputs.queryTokens;
    if (name === "k" || name === "v") return inputs.keyTokens;
    if (name === "W" && inputs.scoreKind === "location") return inputs.keyTokens;
    return [];
  };
  /** Editors by name, shape, row names and title: switching kinds back and forth reuses them. */
  const editorCache = new Map<string, Editor>();
  const drawEditors = (inputs: Inputs): void => {
    const active = root.ownerDocument.activeElement;
    const next: Record<string, Editor> = {};
    const els = shownArrays(inputs).map((name) => {
      const title = name === "W" ? (inputs.scoreKind === "location" ? "W (n × d), location" : "W (d × d), general") : TITLES[name];
      const names = rowNames(name, inputs);
      const mat = inputs.arrays[name];
      const key = JSON.stringify([name, mat?.shape ?? null, names, title]);
      let editor = editorCache.get(key);
      if (editor && !updateEditor(editor, mat, active)) editor = undefined;
      if (!editor) {
        if (editorCache.size > 32) editorCache.clear();
        editor = buildEditor(name, mat, labels(names, names.length), title, !["q", "k", "v"].includes(name));
        editorCache.set(key, editor);
      }
      next[name] = editor;
      return editor.el;
    });
    built = next;
    for (const [box, part] of [[vectors, els.slice(0, 3)], [params, els.slice(3)]] as const) {
      const children = Array.from(box.children);
      if (children.length !== part.length || children.some((c, i) => c !== part[i])) box.replaceChildren(...part);
    }
  };
  const focusSlider = (): void => {
    if (!focused) return;
    const mat = decodeWire(model.get(focused.name), focused.name);
    const value = mat?.data[focused.index];
    if (value === undefined) return;
    const cols = mat!.shape.length === 1 ? mat!.shape[0]! : mat!.shape[1]!;
    const where = mat!.shape.length === 1 ? `${focused.index}` : `${Math.floor(focused.index / cols)}, ${focused.index % cols}`;
    sliderLabel.textContent = `Drag ${focused.name}[${where}] `;
    const reach = Math.max(3, Math.ceil(Math.abs(Number.isFinite(value) ? value : 0) * 2));
    slider.min = String(-reach);
    slider.max = String(reach);
    slider.disabled = false;
    if (Number.isFinite(value)) slider.value = String(value);
  };
  const entryOf = (target: EventTarget | null): { input: HTMLInputElement; name: ArrayName; index: number } | null => {
    const input = target as HTMLInputElement | null;
    if (!input || !input.classList?.contains("attnw-calc-input")) return null;
    const name = input.dataset.array as ArrayName;
    if (!ARRAY_NAMES.includes(name)) return null;
    return { input, name, index: Number(input.dataset.index) };
  };
  editors.addEventListener("input", (event) => {
    const entry = entryOf(event.target);
    if (!entry) return;
    const value = parseNumber(entry.input.value);
    if (Number.isFinite(value)) sendEntry(entry.name, entry.index, value); // a half-typed number waits for "change"
  });
  editors.addEventListener("change", (event) => {
    const entry = entryOf(event.target);
    if (entry) sendEntry(entry.name, entry.index, parseNumber(entry.input.value));
    focusSlider();
  });
  editors.addEventListener("focusin", (event) => {
    const entry = entryOf(event.target);
    if (!entry) return;
    focused = { name: entry.name, index: entry.index };
    focusSlider();
  });
  slider.addEventListener("input", () => {
    if (!focused) return;
    const value = Number(slider.value);
    sendEntry(focused.name, focused.index, value);
    const input = built[focused.name]?.inputs[focused.index];
    if (input) input.value = inputText(value);
  });

  // -- scalar controls --------------------------------------------------------------
  const scalar = (field: HTMLInputElement, what: string, apply: (value: number) => void, integer = false): void => {
    field.addEventListener("change", () => {
      const value = parseNumber(field.value);
      if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) {
        localError = `${what}: “${field.value}” is not ${integer ? "a whole number" : "a number"}.`;
        schedule();
        return;
      }
      apply(value);
    });
  };
  scalar(windowField.input, "D", (value) => sendScalar({ window: value }), true);
  scalar(tempField.input, "T", (value) => sendScalar({ temperature: value }));
  scalar(betaField.input, "β", (value) => sendScalar({ beta: value }));
  lengthField.input.addEventListener("change", () => {
    if (lengthField.input.value.trim() === "") return sendScalar({ lengths: null });
    const value = parseNumber(lengthField.input.value);
    if (!Number.isInteger(value)) {
      localError = `L: “${lengthField.input.value}” is not a whole number.`;
      return schedule();
    }
    sendScalar({ lengths: value });
  });
  tempSlider.addEventListener("input", () => {
    tempField.input.value = tempSlider.value;
    sendScalar({ temperature: Number(tempSlider.value) });
  });

  // -- steps ----------------------------------------------------------------------------
  const drawSteps = stepView(stepsEl);

  // -- hover: the arithmetic of a cell ------------------------------------------------------
  const explain = (target: EventTarget | null): void => {
    const cell = (target as HTMLElement | null)?.closest?.("td.attnw-calc-cell") as HTMLElement | null;
    if (!cell || !steps || !good) {
      tip.hidden = true;
      return;
    }
    const step = cell.dataset.step as StepName;
    const lines = cellArithmetic(step, good, steps, Number(cell.dataset.i), Number(cell.dataset.j));
    if (model.get("error")) lines.push("(the last good steps: the current inputs were refused)");
    tip.textContent = lines.join("\n");
    status.textContent = lines.join(" ");
    tip.hidden = false;
    const box = cell.getBoundingClientRect();
    const host = root.getBoundingClientRect();
    tip.style.left = `${Math.max(0, box.left - host.left)}px`;
    tip.style.top = `${box.bottom - host.top + 4}px`;
  };
  stepsEl.addEventListener("mouseover", (event) => explain(event.target));
  stepsEl.addEventListener("focusin", (event) => explain(event.target));
  stepsEl.addEventListener("mouseleave", () => (tip.hidden = true));

  // -- drawing --------------------------------------------------------------------------------
  let draws = 0;
  const draw = (): void => {
    const inputs = readInputs(model);
    setOptions(scorePick.el, SCORE_KINDS, inputs.scoreKind);
    setOptions(maskPick.el, MASK_KINDS, inputs.maskKind);
    const active = root.ownerDocument.activeElement;
    if (windowField.input !== active) windowField.input.value = String(inputs.window);
    if (lengthField.input !== active) lengthField.input.value = inputs.lengths === null ? "" : String(inputs.lengths);
    if (tempField.input !== active) tempField.input.value = inputText(inputs.temperature);
    if (tempSlider !== active) tempSlider.value = String(inputs.temperature);
    if (betaField.input !== active) betaField.input.value = inputText(inputs.beta);
    betaField.wrap.hidden = inputs.scoreKind !== "cosine";
    windowField.wrap.hidden = !inputs.maskKind.startsWith("local");
    lengthField.wrap.hidden = inputs.maskKind !== "padding";
    caption.textContent = model.get("caption") ?? "";
    caption.hidden = !caption.textContent;
    drawEditors(inputs);
    const next = readSteps(model);
    const names = JSON.stringify([inputs.queryTokens, inputs.keyTokens]);
    if (next && (next.info.version !== drawnVersion || names !== drawnNames)) {
      if (next.info.version !== drawnVersion && (!model.get("error") || !good)) good = inputs;
      steps = next;
      drawnVersion = next.info.version;
      drawnNames = names;
      drawSteps(next, { ...(good ?? inputs), queryTokens: inputs.queryTokens, keyTokens: inputs.keyTokens });
    }
    const message = localError || model.get("error") || (silent ? NO_REPLY : "");
    errorBox.textContent = message;
    errorBox.hidden = !message;
    root.dataset.state = model.get("error") || localError ? "error" : "ready";
    root.dataset.version = String(drawnVersion);
    root.dataset.revision = String(model.get("revision"));
    root.dataset.score = steps?.info.score_kind ?? "";
    root.dataset.mask = steps?.info.mask_kind ?? "";
    root.dataset.draws = String(++draws);
  };
  const schedule = microtaskScheduler(draw, (err) => {
    errorBox.textContent = `attnwidget: ${err instanceof Error ? err.message : String(err)}`;
    errorBox.hidden = false;
    console.error(err);
  });
  const onInputs = (): void => {
    if (!awaiting) schedule();
  };
  const onSteps = (): void => {
    awaiting = false;
    watch.answered();
    silent = false;
    schedule();
  };
  const listeners = new Listeners()
    .add(() => watch.dispose())
    .traits(model, INPUT_TRAITS, onInputs)
    .traits(model, STEP_TRAITS, onSteps);
  draw();
  return listeners.dispose;
}
