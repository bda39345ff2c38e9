/**
 * NeuronView (traits: NeuronTraits in neuron_types.ts): one head's query and
 * keys for a selected token, their products, scores and weights (Vig 2019).
 *
 * - Controls: layer and head pickers (synced with Python).
 * - The query block: q of the selected token (before and after rotation for
 *   rotary models); the key table: per key token its k (both for rotary),
 *   q ∘ k, q·k, the score and the weight. Click a token to make it the query.
 * - Hover a vector cell: its entry and value in the status line.
 *
 * Test hooks on the root: data-state (ready | waiting | error), data-layer,
 * data-head, data-token, data-draws.
 */
import type { AnyModel } from "@anywidget/types";

import { select, setOptions } from "./attention_common";
import { displayToken, h, microtaskScheduler, styleElement, reveal } from "../core/dom";
import { Listeners } from "../core/listeners";
import { formatNumber } from "../core/format";
import { canvasValue, drawKeys, drawQuery, entryAt } from "./neuron_draw";
import { DATA_TRAITS, VIEW_TRAITS, savePick } from "./neuron_messages";
import { queryRows, readLayer, waitingText, type LayerData } from "./neuron_state";
import type { NeuronTraits } from "./neuron_types";
import styles from "./neuron.css";
import { useBaseStyles } from "../core/base_styles";

type Model = AnyModel<NeuronTraits>;

const range = (n: number): [string, string][] => Array.from({ length: n }, (_x, i) => [String(i), String(i)]);

export function renderNeuronView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-neuronview",
    attrs: { tabindex: 0, role: "group", "aria-label": "Neuron view", "data-state": "waiting", "data-draws": 0 },
  });
  const layerPick = select("Layer:", "attnw-layer", (value) => savePick(model, { layer: Number(value) }));
  const headPick = select("Head:", "attnw-head", (value) => savePick(model, { head: Number(value) }));
  const caption = h("div", { className: "attnw-caption attnw-neuron-caption" });
  const body = h("div", { className: "attnw-neuron-body" });
  const status = h("div", { className: "attnw-status attnw-neuron-status", attrs: { "aria-live": "polite" } });
  useBaseStyles(root);
  root.append(styleElement(styles), h("div", { className: "attnw-neuron-controls" }, [layerPick.wrap, headPick.wrap]), caption, body, status);
  el.appendChild(root);

  let data: LayerData | null = null;
  let dataError: string | null = null;
  let draws = 0;

  const rebuild = (): void => {
    try {
      data = readLayer(Object.fromEntries(DATA_TRAITS.map((name) => [name, model.get(name)])) as never);
      dataError = null;
    } catch (err) {
      data = null;
      dataError = err instanceof Error ? err.message : String(err);
    }
    schedule();
  };

  const draw = (): void => {
    const layer = model.get("layer");
    const head = model.get("head");
    const token = model.get("selected_token");
    const tokens = model.get("tokens") ?? [];
    setOptions(layerPick.el, range(model.get("num_layers")), String(layer));
    setOptions(headPick.el, range(model.get("num_heads")), String(head));
    root.dataset.layer = String(layer);
    root.dataset.head = String(head);
    root.dataset.token = String(token);
    const kv = model.get("num_kv_heads");
    const heads = model.get("num_heads");
    const group = kv > 0 && kv < heads ? ` · grouped-query: head ${head} reads key head ${Math.floor(head / (heads / kv))} of ${kv}` : "";
    caption.textContent = `layer ${layer}, head ${head}, query ${JSON.stringify(displayToken(tokens[token] ?? ""))} · d = ${model.get("head_dim")}${model.get("rotary") ? " · rotary: scores use the rotated q and k" : ""}${model.get("causal") ? " · causal mask" : ""}${group}`;
    if (dataError !== null || data === null) {
      root.dataset.state = "error";
      body.replaceChildren(h("div", { className: "attnw-error", text: dataError ?? "no data" }));
      return;
    }
    if (data.layer !== layer) {
      root.dataset.state = "waiting";
      body.classList.add("attnw-neuron-stale");
      status.textContent = waitingText(layer, data.layer);
      return;
    }
    const rows = queryRows(data, head, token);
    const raw = (model.get("raw_tokens") ?? []).map(String);
    const options = { tokens, raw, token, head, layer, rotary: data.rotary, scale: model.get("scale") };
    body.replaceChildren(drawQuery(rows, options), drawKeys(rows, options, (j) => savePick(model, { selected_token: j })));
    body.classList.remove("attnw-neuron-stale");
    status.textContent = "";
    draws += 1;
    root.dataset.draws = String(draws);
    root.dataset.state = "ready";
  };

  const schedule = microtaskScheduler(draw, (err) => {
    root.dataset.state = "error";
    status.textContent = `attnwidget: ${err instanceof Error ? err.message : String(err)}`;
    console.error(err);
  });

  const onHover = (event: MouseEvent): void => {
    const target = event.target;
    if (!(target instanceof HTMLCanvasElement) || !target.classList.contains("attnw-neuron-vector")) return;
    const i = entryAt(target, event.offsetX);
    if (i >= 0) status.textContent = `${target.dataset.name ?? ""} [${i}] = ${formatNumber(canvasValue(target, i))}`;
  };
  const onKey = (event: KeyboardEvent): void => {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    const n = (model.get("tokens") ?? []).length;
    const token = model.get("selected_token");
    const next = event.key === "ArrowDown" ? Math.min(n - 1, token + 1) : Math.max(0, token - 1);
    if (savePick(model, { selected_token: next })) event.preventDefault();
  };
  const listeners = new Listeners()
    .on(body, "mousemove", onHover)
    .on(root, "keydown", onKey)
    .traits(model, DATA_TRAITS, rebuild)
    .traits(model, VIEW_TRAITS, schedule)
    // The query chosen from Python scrolls into sight once the redraw above has run.
    .traits(model, ["selected_token"], () =>
      queueMicrotask(() => reveal(body.querySelector(`.attnw-neuron-token[data-index="${model.get("selected_token")}"]`))),
    );
  rebuild();
  return listeners.dispose;
}
