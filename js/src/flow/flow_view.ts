/**
 * FlowView (traits: FlowTraits in flow_types.ts): the token-to-token flow
 * diagram across layers on one canvas. Node layers 0 (input, left) … L
 * (top, right) are columns; each column holds the n tokens. Background lines
 * are Â_l = 0.5·W_l + 0.5·I ≥ threshold (width and opacity by weight); the
 * selected node's paths by the chosen method are drawn over them (width and
 * opacity by each edge's share of its layer's total), and the end tokens are
 * coloured by the method's scores.
 *
 * - Click a token label (left: input, right: top) or a node dot: select it
 *   (again or Esc: clear). Arrow keys move the selection.
 * - Hover a line or a node: its numbers (tooltip and status line).
 * - "raw" and "rollout" are computed here; other methods are asked from the
 *   kernel (`compute`), one request at a time, the latest selection winning;
 *   a progress bar shows after 200 ms and the page stays usable.
 * - Encoder–decoder models: a Stack picker (encoder / decoder self-attention)
 *   sets the `stack` trait; the kernel answers with that stack's data. A
 *   saved page holds one stack only, so there the picker is disabled.
 *
 * This module only wires the parts together: state in flow_state.ts, kernel
 * messages in flow_messages.ts, canvases in flow_draw.ts, elements in
 * flow_dom.ts, words in flow_text.ts.
 *
 * Test hooks on the root: data-state ("loading" | "ready" | "computing" |
 * "error" | "offline": a saved page asked for a kernel-computed method),
 * data-method, data-stack (the stack whose data is drawn), data-selected
 * ("layer:token" or ""), data-source ("page" | "kernel" | ""), data-paths
 * (path lines drawn), data-edges (background lines drawn); the paths
 * canvas's data-geometry (node positions).
 */
import type { AnyModel } from "@anywidget/types";

import { microtaskScheduler, saveTraits } from "../core/dom";
import { Listeners } from "../core/listeners";
import { attachNotes, edgeTarget } from "../core/notes";
import { FlowPainter } from "./flow_draw";
import { buildFlowElements, buildLabels, paintLabels, syncControls } from "./flow_dom";
import { receive } from "./flow_messages";
import { flowGeometry, nodeAt, nodeX, nodeY, type FlowGeometry } from "./flow_paths";
import { FlowStore, pathKey, type Selection } from "./flow_state";
import { describeStatus } from "./flow_status";
import { describeNode, HINT, hoverText } from "./flow_text";
import type { FlowStack, FlowTraits } from "./flow_types";
import { watchHostTheme } from "../core/host_theme";
import { LocalModel } from "../core/localmodel";
import type { Binary } from "../core/types";

type Model = AnyModel<FlowTraits>;

/** Show the progress bar only for computations longer than this (ms). */
const PROGRESS_DELAY = 200;
/** Say the kernel is silent after this long without any reply (ms). */
const SILENT_AFTER = 6000;
/** Traits that change the data (a reload) and those that change only what is shown. */
const DATA_TRAITS = ["tokens", "raw_tokens", "shape", "fused", "fused_layers", "version", "head_fusion"] as const;
const VIEW_TRAITS = ["stack", "stacks", "selected_method", "selected_layer", "selected_token", "methods", "summaries", "signed", "caption", "query_index", "local_methods", "scale"] as const;

export function renderFlowView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const e = buildFlowElements();
  const { root, canvas, status } = e;
  el.appendChild(root);
  const scroller = root.querySelector<HTMLElement>(".attnw-flow-scroll");

  /** A saved page (exported HTML): no kernel answers requests. */
  const offline = model instanceof LocalModel;
  const store = new FlowStore();
  const painter = new FlowPainter(e.canvasBg, canvas);
  let geometry: FlowGeometry | null = null;
  let progressTimer: ReturnType<typeof setTimeout> | undefined;
  let silentTimer: ReturnType<typeof setTimeout> | undefined;

  const selection = (): Selection => ({ layer: model.get("selected_layer") ?? 0, token: model.get("selected_token") ?? -1 });
  const localMethods = (): string[] => model.get("local_methods") ?? [];
  /** The status line for the selection and the paths shown for it. */
  const statusText = (): string => describeStatus(store.data, selection(), store.paths, model.get("query_index") ?? -1);

  const loadData = (): void => {
    const requests = store.load({
      shape: model.get("shape") ?? [],
      tokens: model.get("tokens") ?? [],
      raw_tokens: model.get("raw_tokens") ?? [],
      version: model.get("version") ?? 0,
      stack: model.get("stack") ?? "encoder",
      fused: model.get("fused"),
      fused_layers: model.get("fused_layers") ?? 0,
    });
    const data = store.data!;
    root.dataset.stack = data.stack;
    geometry = flowGeometry(data.layers, data.n);
    for (const request of requests) model.send(request);
    buildLabels(e, data, geometry);
  };

  const setState = (state: string): void => {
    root.dataset.state = store.error ? "error" : state;
  };

  const draw = (): void => {
    const data = store.data;
    if (!data || !geometry) return;
    const sel = selection();
    const style = getComputedStyle(root);
    const shown = store.paths && sel.token >= 0 ? store.paths : null;
    const result = painter.draw({
      data,
      geometry,
      shown,
      selection: sel,
      threshold: model.get("threshold") ?? 0,
      fg: style.color || "#777",
      fontFamily: style.fontFamily,
    });
    if (result.edges !== null) root.dataset.edges = String(result.edges);
    e.note.textContent = result.note;
    root.dataset.paths = String(result.paths);
    root.dataset.source = shown ? shown.source : "";
    root.dataset.selected = sel.token >= 0 ? `${sel.layer}:${sel.token}` : "";
    root.dataset.method = model.get("selected_method") ?? "";
    paintLabels(e, data, store.paths, sel, model.get("query_index") ?? -1, model.get("scale") === "all" ? "all" : "words");
    reveal(sel);
  };

  /**
   * Scroll a new selection into sight (a long input scrolls: 300 tokens are
   * ~5,000 px of rows). Only when the selection changed and its node is out
   * of sight, so a click on a visible row never moves the diagram.
   */
  let revealed = "";
  const reveal = (sel: Selection): void => {
    const key = sel.token >= 0 ? `${sel.layer}:${sel.token}` : "";
    if (key === revealed || !geometry || !scroller) return;
    const box = scroller.getBoundingClientRect();
    if (key && box.height === 0) return; // not shown yet (e.g. a hidden tab): try at the next draw
    revealed = key;
    if (!key) return;
    const at = canvas.getBoundingClientRect();
    const y = at.top - box.top + scroller.scrollTop + nodeY(geometry, sel.token);
    const x = at.left - box.left + scroller.scrollLeft + nodeX(geometry, sel.layer);
    const half = geometry.rowHeight;
    // The sticky layer numbers cover the top `header` px of the box.
    if (y - half < scroller.scrollTop + geometry.header || y + half > scroller.scrollTop + scroller.clientHeight) {
      scroller.scrollTop = Math.max(0, y - scroller.clientHeight / 2);
    }
    if (x - 20 < scroller.scrollLeft || x + 20 > scroller.scrollLeft + scroller.clientWidth) {
      scroller.scrollLeft = Math.max(0, x - scroller.clientWidth / 2);
    }
  };

  const finish = (): void => {
    store.error = "";
    setState("ready");
    status.textContent = statusText();
    draw();
  };

  const fail = (err: unknown): void => {
    store.error = err instanceof Error ? err.message : String(err);
    setState("error");
    status.textContent = `attnwidget: ${store.error}`;
    console.warn("attnwidget flow view:", err);
    draw();
  };

  /** The paths of the selection: from the cache, computed here, or asked from the kernel. */
  const refresh = (): void => {
    const data = store.data;
    if (!data) return;
    const method = model.get("selected_method") ?? "";
    const sel = selection();
    const methods = model.get("methods") ?? [];
    e.methodSelect.title = (model.get("summaries") ?? [])[methods.indexOf(method)] ?? "";
    if (!store.inRange(sel)) {
      store.paths = null;
      setState(store.complete() ? "ready" : "loading");
      status.textContent = HINT;
      draw();
      return;
    }
    const key = pathKey(method, sel.layer, sel.token, data.version);
    if (store.shows(key)) return finish();
    const local = localMethods().includes(method);
    if (local && store.complete()) {
      try {
        store.computeLocal(method, sel, Boolean((model.get("signed") ?? [])[methods.indexOf(method)]), key);
      } catch (err) {
        return fail(err);
      }
      return finish();
    }
    const cached = store.cached(key);
    if (cached) {
      store.paths = cached;
      return finish();
    }
    store.paths = null;
    if (offline) {
      // A saved page (to_html) has no kernel to compute this method.
      root.dataset.state = "offline";
      status.textContent = `${method} is computed by the Python kernel, which a saved page does not have; ${localMethods().join(" and ")} work here.`;
      draw();
      return;
    }
    // Ask the kernel (one request at a time; the latest selection wins).
    draw();
    setState(store.complete() || !local ? "computing" : "loading");
    status.textContent = `Computing ${method} for ${describeNode(data, sel.layer, sel.token)}…`;
    if (!store.inflight) send(method, sel, key);
  };

  const send = (method: string, sel: Selection, key: string): void => {
    const request = store.request(method, sel, key);
    const id = request.id;
    model.send(request);
    stopTimers();
    e.progressBar.removeAttribute("value"); // indeterminate until the kernel reports
    e.progressText.textContent = `Computing ${method}…`;
    progressTimer = setTimeout(() => {
      if (store.inflight?.id === id) e.progress.hidden = false;
    }, PROGRESS_DELAY);
    silentTimer = setTimeout(() => {
      if (store.inflight?.id === id && !store.inflight.heard) {
        status.textContent = `No reply from the kernel yet for ${method}. Without a running kernel (e.g. a saved page) only ${localMethods().join(" and ")} can be drawn.`;
      }
    }, SILENT_AFTER);
  };

  const stopTimers = (): void => {
    clearTimeout(progressTimer);
    clearTimeout(silentTimer);
  };

  const onMessage = (content: unknown, buffers?: readonly Binary[]): void => {
    const outcome = receive(store, content, buffers, Date.now());
    switch (outcome.kind) {
      case "layer":
        return outcome.complete ? refresh() : draw();
      case "progress":
        e.progressBar.max = Math.max(1, outcome.total);
        e.progressBar.value = outcome.done;
        e.progressText.textContent = `${outcome.done}/${outcome.total}`;
        return;
      case "done":
        stopTimers();
        e.progress.hidden = true;
        // The selection may have moved on while the kernel worked: ask for it now.
        return refresh();
      case "failed":
        if (outcome.request) {
          stopTimers();
          e.progress.hidden = true;
        }
        return fail(outcome.error);
    }
  };

  // -- pointer and keys -------------------------------------------------------------

  const save = (patch: Partial<Pick<FlowTraits, "stack" | "selected_method" | "selected_layer" | "selected_token" | "threshold">>): void =>
    saveTraits(model, patch);

  const select = (layer: number, token: number): void => {
    const sel = selection();
    const same = sel.layer === layer && sel.token === token;
    save(same ? { selected_token: -1 } : { selected_layer: layer, selected_token: token });
  };

  const onLabelClick = (event: MouseEvent): void => {
    const label = (event.target as Element | null)?.closest?.(".attnw-flow-tok") as HTMLElement | null;
    if (label) select(Number(label.dataset.layer), Number(label.dataset.index));
  };

  const canvasPoint = (event: MouseEvent): { x: number; y: number } => {
    const rect = canvas.getBoundingClientRect();
    return { x: event.clientX - rect.left, y: event.clientY - rect.top };
  };

  const onCanvasClick = (event: MouseEvent): void => {
    if (!geometry) return;
    const { x, y } = canvasPoint(event);
    const node = nodeAt(geometry, x, y);
    if (node) select(node.layer, node.token);
  };

  let hoverFrame = 0;
  let lastMove: MouseEvent | null = null;
  const onMove = (event: MouseEvent): void => {
    lastMove = event;
    if (hoverFrame) return;
    hoverFrame = requestAnimationFrame(() => {
      hoverFrame = 0;
      if (!lastMove) return;
      const { x, y } = canvasPoint(lastMove);
      const text = store.data && geometry ? hoverText(store.data, geometry, store.paths, painter.drawn, x, y) : "";
      e.tip.hidden = !text;
      if (text) {
        e.tip.textContent = text;
        e.tip.style.left = `${Math.min(x + 12, (geometry?.width ?? 0) - 40)}px`;
        e.tip.style.top = `${y + 14}px`;
        status.textContent = text;
      } else {
        status.textContent = statusText();
      }
      canvas.style.cursor = geometry && nodeAt(geometry, x, y) ? "pointer" : "default";
    });
  };
  const onLeave = (): void => {
    lastMove = null;
    e.tip.hidden = true;
    if (!store.inflight) status.textContent = statusText();
  };

  const onKey = (event: KeyboardEvent): void => {
    const data = store.data;
    if (!data) return;
    const sel = selection();
    let next: Selection | null = null;
    if (event.key === "Escape") next = { layer: sel.layer, token: -1 };
    else if (event.key === "ArrowDown") next = { layer: sel.layer, token: Math.min(data.n - 1, sel.token + 1) };
    else if (event.key === "ArrowUp") next = { layer: sel.layer, token: Math.max(0, sel.token < 0 ? data.n - 1 : sel.token - 1) };
    else if (event.key === "ArrowLeft") next = { layer: Math.max(0, sel.layer - 1), token: Math.max(0, sel.token) };
    else if (event.key === "ArrowRight") next = { layer: Math.min(data.layers, sel.layer + 1), token: Math.max(0, sel.token) };
    if (!next) return;
    event.preventDefault();
    if (next.layer !== sel.layer || next.token !== sel.token) save({ selected_layer: next.layer, selected_token: next.token });
  };

  const onMethod = (): void => save({ selected_method: e.methodSelect.value });
  const onStack = (): void => save({ stack: e.stackSelect.value as FlowStack });
  const onSlider = (): void => save({ threshold: Number(e.slider.value) });

  // -- wiring --------------------------------------------------------------------------

  const sync = (): void =>
    syncControls(
      e,
      {
        stacks: model.get("stacks") ?? [],
        stack: model.get("stack") ?? "encoder",
        methods: model.get("methods") ?? [],
        summaries: model.get("summaries") ?? [],
        method: model.get("selected_method") ?? "",
        threshold: model.get("threshold") ?? 0,
        caption: model.get("caption") ?? "",
      },
      offline,
    );
  let reloadNeeded = true;
  const schedule = microtaskScheduler(() => {
    if (reloadNeeded) {
      reloadNeeded = false;
      loadData();
    }
    sync();
    refresh();
  }, fail);
  const onData = (): void => {
    reloadNeeded = true;
    schedule();
  };
  const onThreshold = (): void => {
    sync();
    draw();
  };
  // A diagram first drawn hidden (e.g. in an Explorer tab) shows its selection once it has a size.
  const sizeWatch = typeof ResizeObserver !== "undefined" && scroller ? new ResizeObserver(() => reveal(selection())) : null;
  if (scroller) sizeWatch?.observe(scroller);
  // Redraw the graph in the new colours when the notebook's theme changes.
  const stopThemeWatch = watchHostTheme(() => {
    painter.invalidate();
    draw();
  });

  const listeners = new Listeners()
    .add(() => root.remove())
    .on(e.leftLabels, "click", onLabelClick)
    .on(e.rightLabels, "click", onLabelClick)
    .on(canvas, "click", onCanvasClick)
    .on(canvas, "mousemove", onMove)
    .on(canvas, "mouseleave", onLeave)
    .on(e.methodSelect, "change", onMethod)
    .on(e.stackSelect, "change", onStack)
    .on(e.slider, "input", onSlider)
    .on(root, "keydown", onKey)
    .add(() => {
      if (hoverFrame) cancelAnimationFrame(hoverFrame);
      sizeWatch?.disconnect();
    })
    .add(stopThemeWatch)
    .add(stopTimers)
    .traits(model, DATA_TRAITS, onData)
    .traits(model, VIEW_TRAITS, schedule)
    .traits(model, ["threshold"], onThreshold)
    .model(model, "msg:custom", onMessage)
    .add(attachNotes(model, root, () => edgeTarget(model), ["selected_layer", "selected_token", "shape", "tokens"], () => model.get("tokens") ?? []));
  schedule();
  return listeners.dispose;
}
