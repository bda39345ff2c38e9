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
 * Test hooks on the root: data-state ("loading" | "ready" | "computing" |
 * "error" | "offline": a saved page asked for a kernel-computed method),
 * data-method, data-stack (the stack whose data is drawn), data-selected
 * ("layer:token" or ""), data-source ("page" | "kernel" | ""), data-paths
 * (path lines drawn), data-edges (background lines drawn); the paths
 * canvas's data-geometry (node positions).
 */
import type { AnyModel } from "@anywidget/types";

import { decodeFloat32 } from "./buffers";
import { css, formatFloat32, gradient, scaleFor, textColorFor } from "./colors";
import { displayToken, h, microtaskScheduler, saveTraits, styleElement } from "./dom";
import styles from "./flow.css";
import { watchHostTheme } from "./host_theme";
import { LocalModel } from "./localmodel";
import {
  bucketByLevel,
  decodePathsReply,
  edgeLayerAt,
  edgesAbove,
  flowGeometry,
  lineStyle,
  LEVELS,
  nearestEdge,
  nodeAt,
  nodeX,
  nodeY,
  productPaths,
  rawPaths,
  residualAdjust,
  strongestCut,
  toPathData,
  type Buckets,
  type FlowGeometry,
  type PathData,
} from "./flow_paths";
import type { ErrorReply, FlowStack, FlowTraits, LayerReply, PathsReply, ProgressReply, StaleReply } from "./flow_types";
import baseStyles from "./styles.css";
import type { Binary } from "./types";

type Model = AnyModel<FlowTraits>;

/** Path colours, Okabe & Ito (colour-blind safe, readable on light and dark). */
const PATH_COLOR = "#d55e00";
const NEGATIVE_COLOR = "#0072b2";
/** Show the progress bar only for computations longer than this (ms). */
const PROGRESS_DELAY = 200;
/** Say the kernel is silent after this long without any reply (ms). */
const SILENT_AFTER = 6000;
/** Lines drawn at most (background, paths): a software-rendered canvas takes ~10 µs a line. */
const MAX_LINES = 24_000;
const MAX_PATH_LINES = 12_000;
/** Line segments per canvas path (see strokeBuckets). */
const STROKE_BATCH = 64;
/** Kernel results kept in the page. */
const CACHE_SIZE = 24;
/** The stack picker's labels (the trait's values are the keys). */
const STACK_LABELS: Record<FlowStack, string> = { encoder: "Encoder", decoder: "Decoder" };

interface Data {
  version: number;
  /** The stack these tokens and layers belong to. */
  stack: string;
  layers: number;
  n: number;
  tokens: string[];
  /** W_l per layer (undefined until it arrives). */
  fused: (Float32Array | undefined)[];
  /** Â_l per layer. */
  adjusted: (Float32Array | undefined)[];
}

interface Drawn {
  /** Background lines drawn, per edge layer (flat indices). */
  edges: Uint32Array[];
  /** Path lines drawn, per edge layer: flat index -> value. */
  paths: Map<number, number>[];
}

export function renderFlowView({ model, el }: { model: Model; el: HTMLElement }): () => void {
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
  // Two canvases: the attention graph below (redrawn rarely), the selection's paths above.
  const canvasBg = h("canvas", { className: "attnw-flow-canvas attnw-flow-canvas-bg", attrs: { "aria-hidden": "true" } });
  const canvas = h("canvas", { className: "attnw-flow-canvas attnw-flow-canvas-paths", attrs: { role: "img", "aria-label": "Flow diagram" } });
  const tip = h("div", { className: "attnw-flow-tip", attrs: { hidden: true, role: "tooltip" } });
  const plot = h("div", { className: "attnw-flow-plot" }, [canvasBg, canvas, tip]);
  const body = h("div", { className: "attnw-flow-body" }, [leftLabels, plot, rightLabels]);
  const scroller = h("div", { className: "attnw-flow-scroll" }, [body]);
  const note = h("div", { className: "attnw-flow-note" });
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  root.append(styleElement(baseStyles), styleElement(styles), controls, caption, scroller, note, status);
  el.appendChild(root);

  /** A saved page (exported HTML): no kernel answers requests. */
  const offline = model instanceof LocalModel;
  let data: Data | null = null;
  let geometry: FlowGeometry | null = null;
  let paths: PathData | null = null;
  let drawn: Drawn = { edges: [], paths: [] };
  let error = "";
  const cache = new Map<string, PathData>();
  let nextId = 1;
  /** The kernel request in flight, if any. */
  let inflight: { id: number; key: string; started: number; heard: number } | null = null;
  let progressTimer: ReturnType<typeof setTimeout> | undefined;
  let silentTimer: ReturnType<typeof setTimeout> | undefined;

  const keyOf = (method: string, layer: number, token: number, version: number): string => `${version}/${method}/${layer}/${token}`;
  const selection = (): { layer: number; token: number } => ({ layer: model.get("selected_layer") ?? 0, token: model.get("selected_token") ?? -1 });

  // -- data -----------------------------------------------------------------

  const loadData = (): void => {
    cache.clear();
    paths = null;
    error = "";
    const [layers = 0, n = 0] = model.get("shape") ?? [];
    const tokens = (model.get("tokens") ?? []).map(String);
    const version = model.get("version") ?? 0;
    if (tokens.length !== n) throw new RangeError(`shape says ${n} tokens but there are ${tokens.length}`);
    // Filled arrays, not `new Array(layers)`: `every` skips holes.
    const next: Data = {
      version,
      stack: model.get("stack") ?? "encoder",
      layers,
      n,
      tokens,
      fused: Array.from({ length: layers }, () => undefined),
      adjusted: Array.from({ length: layers }, () => undefined),
    };
    const have = Math.min(layers, model.get("fused_layers") ?? 0);
    const raw = model.get("fused");
    if (have > 0 && raw) {
      const values = decodeFloat32(raw, "fused");
      if (values.length < have * n * n) throw new RangeError(`fused holds ${values.length} values, expected ${have * n * n}`);
      // A copy per layer: the message's buffer can then be released.
      for (let l = 0; l < have; l++) putLayer(next, l, values.slice(l * n * n, (l + 1) * n * n));
    }
    data = next;
    root.dataset.stack = next.stack;
    geometry = flowGeometry(layers, n);
    for (let l = have; l < layers; l++) model.send({ type: "request", version, layer: l });
    buildLabels();
  };

  const putLayer = (d: Data, layer: number, w: Float32Array): void => {
    if (w.length !== d.n * d.n) throw new RangeError(`layer ${layer}: ${w.length} values, expected ${d.n * d.n}`);
    d.fused[layer] = w;
    d.adjusted[layer] = residualAdjust(w, d.n);
  };

  const complete = (): boolean => Boolean(data && data.adjusted.length === data.layers && data.adjusted.every((a) => a !== undefined));

  // -- labels ---------------------------------------------------------------

  const buildLabels = (): void => {
    if (!data || !geometry) return;
    const { tokens, layers } = data;
    const make = (layer: number, i: number): HTMLElement =>
      h("div", {
        className: "attnw-flow-tok",
        text: displayToken(tokens[i]!),
        attrs: { "data-layer": layer, "data-index": i, role: "button", title: `${layer === 0 ? "Input" : "Top"} #${i} ${JSON.stringify(tokens[i])}` },
        style: { height: `${geometry!.rowHeight}px`, "line-height": `${geometry!.rowHeight}px` },
      });
    leftLabels.replaceChildren(...tokens.map((_, i) => make(0, i)));
    rightLabels.replaceChildren(...tokens.map((_, i) => make(layers, i)));
    for (const column of [leftLabels, rightLabels]) column.style.paddingTop = `${geometry.header}px`;
  };

  const paintLabels = (): void => {
    if (!data) return;
    const { n, layers, tokens } = data;
    const query = model.get("query_index") ?? -1;
    const sel = selection();
    const paint = (column: HTMLElement, layer: number, active: boolean): void => {
      const values = paths && active ? paths.nodes.subarray(layer * n, (layer + 1) * n) : null;
      const scale = values ? scaleFor(values, paths!.signed) : null;
      const children = column.children;
      for (let i = 0; i < children.length; i++) {
        const label = children[i] as HTMLElement;
        const value = values ? (values[i] as number) : Number.NaN;
        label.classList.toggle("attnw-selected", sel.token === i && sel.layer === layer);
        label.classList.toggle("attnw-query", layer === layers && i === query);
        const where = `${layer === 0 ? "Input" : "Top"} #${i} ${JSON.stringify(tokens[i])}`;
        if (scale && values) {
          const background = scale.color(value);
          label.style.backgroundColor = css(background);
          label.style.color = css(textColorFor(background));
          label.dataset.score = formatFloat32(value);
          label.title = `${where} · ${paths!.method} ${formatFloat32(value)}`;
        } else {
          label.style.removeProperty("background-color");
          label.style.removeProperty("color");
          delete label.dataset.score;
          label.title = where;
        }
      }
    };
    paint(leftLabels, 0, sel.layer > 0);
    paint(rightLabels, layers, sel.layer < layers);
    // Legend of the label colours (the input tokens' scale when going down).
    const end = sel.layer > 0 ? 0 : layers;
    legend.hidden = !paths;
    if (paths) {
      const scale = scaleFor(paths.nodes.subarray(end * n, (end + 1) * n), paths.signed);
      const max = formatFloat32(Math.fround(scale.max));
      legendBar.style.background = gradient(scale.stops);
      legendText.textContent = `${end === 0 ? "input" : "top"} ${paths.method}: ${scale.signed ? `−${max} … 0 … ${max}` : `0 … ${max}`}`;
    }
  };

  // -- drawing ----------------------------------------------------------------

  /** Size a canvas for the geometry (device pixels, capped so huge inputs still fit). */
  const sizeCanvas = (c: HTMLCanvasElement, g: FlowGeometry): { ctx: CanvasRenderingContext2D | null; dpr: number } => {
    const dpr = Math.max(1, Math.min(globalThis.devicePixelRatio || 1, 16000 / Math.max(g.width, g.height, 1)));
    const pixelW = Math.round(g.width * dpr);
    const pixelH = Math.round(g.height * dpr);
    if (c.width !== pixelW || c.height !== pixelH) {
      c.width = pixelW;
      c.height = pixelH;
      c.style.width = `${g.width}px`;
      c.style.height = `${g.height}px`;
    }
    const ctx = c.getContext("2d");
    if (ctx) {
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, g.width, g.height);
      ctx.lineCap = "butt";
    }
    return { ctx, dpr };
  };

  let backgroundKey = "";
  let backgroundNote = "";

  /**
   * The attention graph (Â ≥ threshold) and every node, on the lower canvas.
   * Redrawn only when the data, the threshold or the colours change, never
   * for a new selection (the selection only fades it, with CSS opacity).
   */
  const drawBackground = (g: FlowGeometry, fg: string, threshold: number): void => {
    if (!data) return;
    const { n, layers } = data;
    const loaded = data.adjusted.filter(Boolean).length;
    const key = JSON.stringify([data.version, threshold, fg, loaded, g.width, g.height, globalThis.devicePixelRatio]);
    if (key === backgroundKey) return;
    backgroundKey = key;
    // Keep the line count drawable: above MAX_LINES only the strongest are drawn.
    const maps = data.adjusted.filter((m): m is Float32Array => m !== undefined);
    const cut = strongestCut(maps, threshold, MAX_LINES);
    backgroundNote = cut.kept < cut.candidates
      ? `Showing the ${cut.kept.toLocaleString("en")} strongest of ${cut.candidates.toLocaleString("en")} lines with Â ≥ ${threshold} (Â ≥ ${formatFloat32(cut.threshold)}); raise the threshold to see fewer.`
      : "";
    const { ctx } = sizeCanvas(canvasBg, g);
    drawn.edges = [];
    let count = 0;
    for (let l = 1; l <= layers; l++) {
      const weights = data.adjusted[l - 1];
      const flats = weights ? edgesAbove(weights, Math.max(cut.threshold, 1e-9)) : new Uint32Array(0);
      drawn.edges.push(flats);
      count += flats.length;
      if (ctx && weights) strokeBuckets(ctx, g, l, n, bucketByLevel(flats, (k) => weights[flats[k] as number] as number, cut.threshold), "edge", () => fg);
    }
    if (ctx) {
      ctx.fillStyle = fg;
      ctx.globalAlpha = 0.6;
      ctx.beginPath();
      const r = Math.min(2.2, g.rowHeight / 6);
      for (let l = 0; l <= layers; l++) {
        for (let i = 0; i < n; i++) {
          ctx.moveTo(nodeX(g, l) + r, nodeY(g, i));
          ctx.arc(nodeX(g, l), nodeY(g, i), r, 0, 2 * Math.PI);
        }
      }
      ctx.fill();
      ctx.globalAlpha = 1;
    }
    root.dataset.edges = String(count);
  };

  /** The selection's paths, nodes and ring on the upper canvas. */
  const draw = (): void => {
    if (!data || !geometry) return;
    const g = geometry;
    const { n, layers } = data;
    const threshold = model.get("threshold") ?? 0;
    const sel = selection();
    const shown = paths && sel.token >= 0 ? paths : null;
    const fg = getComputedStyle(root).color || "#777";
    drawBackground(g, fg, threshold);
    canvasBg.style.opacity = shown ? "0.35" : "1";
    const { ctx } = sizeCanvas(canvas, g);
    // Test hook: where the nodes are (see flowGeometry).
    canvas.dataset.geometry = JSON.stringify({ pad: g.pad, header: g.header, colGap: g.colGap, rowHeight: g.rowHeight });
    drawn.paths = [];
    let pathCount = 0;
    let pathNote = "";
    if (shown) {
      // Shares of each layer's total; above MAX_PATH_LINES only the strongest.
      const shares = shown.edges.map((layer) => {
        const out = new Float32Array(layer.value.length);
        for (let k = 0; k < out.length; k++) out[k] = layer.total > 0 ? Math.abs(layer.value[k] as number) / layer.total : 0;
        return out;
      });
      const cut = strongestCut(shares, threshold, MAX_PATH_LINES);
      if (cut.kept < cut.candidates) pathNote = ` Showing the ${cut.kept.toLocaleString("en")} strongest of ${cut.candidates.toLocaleString("en")} path lines.`;
      for (let l = 1; l <= layers; l++) {
        const layer = shown.edges[l - 1]!;
        const share = shares[l - 1]!;
        const map = new Map<number, number>();
        const buckets = bucketByLevel(layer.index, (k) => share[k] as number, cut.threshold, (k) => (layer.value[k] as number) < 0);
        for (let k = 0; k < layer.index.length; k++) {
          if ((share[k] as number) >= cut.threshold && (share[k] as number) > 0) map.set(layer.index[k] as number, layer.value[k] as number);
        }
        pathCount += buckets.count;
        if (ctx) strokeBuckets(ctx, g, l, n, buckets, "path", (negative) => (negative ? NEGATIVE_COLOR : PATH_COLOR));
        drawn.paths.push(map);
      }
    }
    if (ctx) {
      drawNodes(ctx, g, fg, shown, sel, threshold);
      drawHeader(ctx, g, fg, layers);
    }
    note.textContent = [shown?.note ?? "", backgroundNote, pathNote].filter(Boolean).join(" ");
    root.dataset.paths = String(pathCount);
    root.dataset.source = shown ? shown.source : "";
    root.dataset.selected = sel.token >= 0 ? `${sel.layer}:${sel.token}` : "";
    root.dataset.method = model.get("method") ?? "";
    paintLabels();
  };

  /**
   * The layer numbers above the columns, on the upper canvas: on the lower one
   * they faded with the graph whenever a selection showed its paths (the
   * default), to a contrast of 2.6 in VS Code's Dark+ and 2.4 in Light+
   * (tests/test_browser_vscode_theme.py), and below 4.5 in JupyterLab's too.
   */
  const drawHeader = (ctx: CanvasRenderingContext2D, g: FlowGeometry, fg: string, layers: number): void => {
    ctx.fillStyle = fg;
    ctx.font = `11px ${getComputedStyle(root).fontFamily || "sans-serif"}`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let l = 0; l <= layers; l++) ctx.fillText(l === 0 ? "in" : String(l), nodeX(g, l), g.header / 2);
  };

  const drawNodes = (
    ctx: CanvasRenderingContext2D,
    g: FlowGeometry,
    fg: string,
    shown: PathData | null,
    sel: { layer: number; token: number },
    threshold: number,
  ): void => {
    if (!data) return;
    const { n, layers } = data;
    if (shown) {
      // Nodes on the paths: area by |value| relative to the largest of their layer.
      for (let l = 0; l <= layers; l++) {
        const values = shown.nodes.subarray(l * n, (l + 1) * n);
        let max = 0;
        for (let i = 0; i < n; i++) max = Math.max(max, Math.abs(values[i] as number));
        if (!(max > 0)) continue;
        for (let i = 0; i < n; i++) {
          const share = Math.abs(values[i] as number) / max;
          if (share < Math.max(threshold, 0.01)) continue;
          ctx.fillStyle = (values[i] as number) < 0 ? NEGATIVE_COLOR : PATH_COLOR;
          ctx.globalAlpha = 0.85;
          ctx.beginPath();
          ctx.arc(nodeX(g, l), nodeY(g, i), 1.2 + (g.rowHeight / 2 - 3) * Math.sqrt(share), 0, 2 * Math.PI);
          ctx.fill();
        }
      }
      ctx.globalAlpha = 1;
    }
    if (sel.token >= 0 && sel.token < n) {
      ctx.strokeStyle = fg;
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(nodeX(g, sel.layer), nodeY(g, sel.token), g.rowHeight / 2 - 1, 0, 2 * Math.PI);
      ctx.stroke();
    }
  };

  // -- paths: from the page or the kernel -------------------------------------------

  const refresh = (): void => {
    if (!data) return;
    const method = model.get("method") ?? "";
    const sel = selection();
    const version = data.version;
    const signedList = model.get("signed") ?? [];
    const methods = model.get("methods") ?? [];
    const summary = (model.get("summaries") ?? [])[methods.indexOf(method)] ?? "";
    methodSelect.title = summary;
    if (sel.token < 0 || sel.token >= data.n || sel.layer < 0 || sel.layer > data.layers) {
      paths = null;
      setState(complete() ? "ready" : "loading");
      status.textContent = hint();
      draw();
      return;
    }
    const key = keyOf(method, sel.layer, sel.token, version);
    if (paths && keyOf(paths.method, paths.layer, paths.token, version) === key && cache.get(key) === paths) {
      finish();
      return;
    }
    const local = (model.get("local_methods") ?? []).includes(method);
    if (local && complete()) {
      try {
        const maps = method === "raw" ? (data.fused as Float32Array[]) : (data.adjusted as Float32Array[]);
        const dense = method === "raw" ? rawPaths(maps, data.n, sel.layer, sel.token) : productPaths(maps, data.n, sel.layer, sel.token);
        const noteText =
          method === "raw"
            ? "raw: the selected layer's attention (no residual); straight lanes assume node (l, j) is token j."
            : "rollout: edge (l,i)→(l−1,j) carries mass(l,i) × Â_l[i,j]; each layer sums to 1.";
        paths = toPathData(dense, { method, layer: sel.layer, token: sel.token, n: data.n, note: noteText });
        paths.signed = Boolean(signedList[methods.indexOf(method)]);
        remember(key, paths);
      } catch (err) {
        fail(err);
        return;
      }
      finish();
      return;
    }
    const cached = cache.get(key);
    if (cached) {
      paths = cached;
      finish();
      return;
    }
    if (offline) {
      // A saved page (to_html) has no kernel to compute this method.
      paths = null;
      root.dataset.state = "offline";
      status.textContent = `${method} is computed by the Python kernel, which a saved page does not have; ${(model.get("local_methods") ?? []).join(" and ")} work here.`;
      draw();
      return;
    }
    // Ask the kernel (one request at a time; the latest selection wins).
    paths = null;
    draw();
    setState(complete() || !local ? "computing" : "loading");
    status.textContent = `Computing ${method} for ${describeNode(sel.layer, sel.token)}…`;
    if (!inflight) send(method, sel.layer, sel.token, key);
  };

  const send = (method: string, layer: number, token: number, key: string): void => {
    if (!data) return;
    const id = nextId++;
    inflight = { id, key, started: Date.now(), heard: 0 };
    model.send({ type: "compute", id, version: data.version, method, layer, token });
    clearTimeout(progressTimer);
    clearTimeout(silentTimer);
    progressBar.removeAttribute("value"); // indeterminate until the kernel reports
    progressText.textContent = `Computing ${method}…`;
    progressTimer = setTimeout(() => {
      if (inflight?.id === id) progress.hidden = false;
    }, PROGRESS_DELAY);
    silentTimer = setTimeout(() => {
      if (inflight?.id === id && !inflight.heard) {
        status.textContent = `No reply from the kernel yet for ${method}. Without a running kernel (e.g. a saved page) only ${(model.get("local_methods") ?? []).join(" and ")} can be drawn.`;
      }
    }, SILENT_AFTER);
  };

  const done = (): void => {
    inflight = null;
    clearTimeout(progressTimer);
    clearTimeout(silentTimer);
    progress.hidden = true;
    // The selection may have moved on while the kernel worked: ask for it now.
    refresh();
  };

  const remember = (key: string, value: PathData): void => {
    cache.delete(key);
    cache.set(key, value);
    while (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  };

  const finish = (): void => {
    error = "";
    setState("ready");
    status.textContent = describeSelection();
    draw();
  };

  const fail = (err: unknown): void => {
    error = err instanceof Error ? err.message : String(err);
    setState("error");
    status.textContent = `attnwidget: ${error}`;
    console.warn("attnwidget flow view:", err);
    draw();
  };

  const setState = (state: string): void => {
    root.dataset.state = error ? "error" : state;
  };

  const onMessage = (content: unknown, buffers?: readonly Binary[]): void => {
    const msg = content as { type?: string };
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "layer") {
      const reply = content as LayerReply;
      if (!data || reply.version !== data.version || !buffers?.[0]) return;
      try {
        if (!(reply.layer >= 0 && reply.layer < data.layers)) throw new RangeError(`layer ${reply.layer} out of range`);
        putLayer(data, reply.layer, decodeFloat32(buffers[0], `layer ${reply.layer}`).slice());
      } catch (err) {
        fail(err);
        return;
      }
      if (complete()) refresh();
      else draw();
      return;
    }
    if (!inflight) return;
    if (msg.type === "progress") {
      const reply = content as ProgressReply;
      if (reply.id !== inflight.id) return;
      inflight.heard = Date.now();
      progressBar.max = Math.max(1, reply.total);
      progressBar.value = reply.done;
      progressText.textContent = `${reply.done}/${reply.total}`;
      return;
    }
    if (msg.type === "paths") {
      const reply = content as PathsReply;
      if (reply.id !== inflight.id) return;
      if (data && reply.version === data.version) {
        try {
          remember(inflight.key, decodePathsReply(reply, buffers ?? []));
        } catch (err) {
          inflight = null;
          fail(err);
          return;
        }
      }
      done();
      return;
    }
    if (msg.type === "stale") {
      // Asked for an older explanation or stack: ask again for what is shown now.
      if ((content as StaleReply).id === inflight.id) done();
      return;
    }
    if (msg.type === "error") {
      const reply = content as ErrorReply;
      if (reply.id != null && reply.id !== inflight.id) return;
      inflight = null;
      clearTimeout(progressTimer);
      progress.hidden = true;
      fail(new Error(reply.message));
    }
  };

  // -- text -----------------------------------------------------------------------

  const describeNode = (layer: number, token: number): string => {
    if (!data) return "";
    const where = layer === 0 ? "input" : layer === data.layers ? "top layer" : `layer ${layer}`;
    return `${where} #${token} ${JSON.stringify(data.tokens[token])}`;
  };

  const hint = (): string => "Click a token (left: input, right: top layer) or a node to see its paths; hover lines for numbers.";

  const describeSelection = (): string => {
    const sel = selection();
    if (!data || sel.token < 0) return hint();
    const parts = [`Selected ${describeNode(sel.layer, sel.token)}.`];
    if (sel.layer > 0) parts.push("Down: how its information reaches the input tokens (left, coloured by score).");
    if (sel.layer < data.layers) parts.push("Up: which top nodes it reaches (right, coloured).");
    return parts.join(" ");
  };

  // -- controls -----------------------------------------------------------------------

  const syncControls = (): void => {
    const stacks = model.get("stacks") ?? [];
    if (Array.from(stackSelect.options, (o) => o.value).join("\n") !== stacks.join("\n")) {
      stackSelect.replaceChildren(...stacks.map((s) => h("option", { text: STACK_LABELS[s] ?? s, attrs: { value: s } })));
    }
    stackSelect.value = model.get("stack") ?? "encoder";
    stackControl.hidden = stacks.length < 2;
    // A saved page embeds the shown stack's attention only: no kernel to send the other.
    stackSelect.disabled = offline;
    stackControl.title = offline
      ? "A saved page holds one stack; switch stacks in the notebook."
      : "Which self-attention to draw. Cross-attention (decoder → encoder) is not drawn: HeadView's cross matrix shows it.";
    const methods = model.get("methods") ?? [];
    const summaries = model.get("summaries") ?? [];
    const current = Array.from(methodSelect.options, (o) => o.value).join("\n");
    if (current !== methods.join("\n")) {
      methodSelect.replaceChildren(...methods.map((m, i) => h("option", { text: m, attrs: { value: m, title: summaries[i] ?? "" } })));
    }
    methodSelect.value = model.get("method") ?? "";
    const threshold = model.get("threshold") ?? 0;
    if (Number(slider.value) !== threshold) slider.value = String(threshold);
    sliderText.textContent = threshold.toFixed(3);
    caption.textContent = model.get("caption") ?? "";
  };

  const save = (patch: Partial<Pick<FlowTraits, "stack" | "method" | "selected_layer" | "selected_token" | "threshold">>): void =>
    saveTraits(model, patch);

  const select = (layer: number, token: number): void => {
    const sel = selection();
    const same = sel.layer === layer && sel.token === token;
    save(same ? { selected_token: -1 } : { selected_layer: layer, selected_token: token });
  };

  const onLabelClick = (event: MouseEvent): void => {
    const label = (event.target as Element | null)?.closest?.(".attnw-flow-tok") as HTMLElement | null;
    if (!label) return;
    select(Number(label.dataset.layer), Number(label.dataset.index));
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

  const hoverText = (x: number, y: number): string => {
    if (!data || !geometry) return "";
    const g = geometry;
    const { n } = data;
    const node = nodeAt(g, x, y);
    if (node) {
      const value = paths ? (paths.nodes[node.layer * n + node.token] as number) : Number.NaN;
      const extra = paths && Number.isFinite(value) ? ` · ${paths.method} ${formatFloat32(value)}` : "";
      return `Node ${describeNode(node.layer, node.token)}${extra} (click to select)`;
    }
    const at = edgeLayerAt(g, x);
    if (!at) return "";
    const pathMap = drawn.paths[at.layer - 1];
    const pathEdge = pathMap && pathMap.size ? nearestEdge(g, Uint32Array.from(pathMap.keys()), x, y) : null;
    const lineEdge = nearestEdge(g, drawn.edges[at.layer - 1] ?? new Uint32Array(0), x, y);
    // The nearest line; a path line wins unless another line is clearly nearer.
    const edge = pathEdge && (!lineEdge || pathEdge.distance <= lineEdge.distance + 1.5) ? pathEdge : lineEdge;
    if (!edge) return "";
    const i = Math.floor(edge.flat / n);
    const j = edge.flat - i * n;
    const weight = data.adjusted[at.layer - 1]?.[edge.flat] as number | undefined;
    const token = (k: number): string => `#${k} ${JSON.stringify(data!.tokens[k])}`;
    let text = `Layer ${at.layer}: ${token(i)} → ${token(j)} (node layers ${at.layer} → ${at.layer - 1}): Â = ${formatFloat32(weight ?? Number.NaN)}`;
    if (paths && pathMap?.has(edge.flat)) {
      const value = pathMap.get(edge.flat)!;
      const total = paths.edges[at.layer - 1]!.total;
      const share = total > 0 ? (Math.abs(value) / total) * 100 : 0;
      text += ` · ${paths.method} ${formatFloat32(value)} (${share.toFixed(1)}% of this layer)`;
    }
    return text;
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
      const text = hoverText(x, y);
      tip.hidden = !text;
      if (text) {
        tip.textContent = text;
        tip.style.left = `${Math.min(x + 12, (geometry?.width ?? 0) - 40)}px`;
        tip.style.top = `${y + 14}px`;
        status.textContent = text;
      } else {
        status.textContent = describeSelection();
      }
      canvas.style.cursor = geometry && nodeAt(geometry, x, y) ? "pointer" : "default";
    });
  };
  const onLeave = (): void => {
    lastMove = null;
    tip.hidden = true;
    status.textContent = inflight ? status.textContent : describeSelection();
  };

  const onKey = (event: KeyboardEvent): void => {
    if (!data) return;
    const sel = selection();
    let next: { layer: number; token: number } | null = null;
    if (event.key === "Escape") next = { layer: sel.layer, token: -1 };
    else if (event.key === "ArrowDown") next = { layer: sel.layer, token: Math.min(data.n - 1, sel.token + 1) };
    else if (event.key === "ArrowUp") next = { layer: sel.layer, token: Math.max(0, sel.token < 0 ? data.n - 1 : sel.token - 1) };
    else if (event.key === "ArrowLeft") next = { layer: Math.max(0, sel.layer - 1), token: Math.max(0, sel.token) };
    else if (event.key === "ArrowRight") next = { layer: Math.min(data.layers, sel.layer + 1), token: Math.max(0, sel.token) };
    if (!next) return;
    event.preventDefault();
    if (next.layer !== sel.layer || next.token !== sel.token) save({ selected_layer: next.layer, selected_token: next.token });
  };

  const onMethod = (): void => save({ method: methodSelect.value });
  const onStack = (): void => save({ stack: stackSelect.value as FlowStack });
  const onSlider = (): void => save({ threshold: Number(slider.value) });

  // -- wiring --------------------------------------------------------------------------

  let reloadNeeded = true;
  const schedule = microtaskScheduler(() => {
    if (reloadNeeded) {
      reloadNeeded = false;
      loadData();
    }
    syncControls();
    refresh();
  }, fail);
  const onData = (): void => {
    reloadNeeded = true;
    schedule();
  };
  const onThreshold = (): void => {
    syncControls();
    draw();
  };
  // Redraw the graph in the new colours when the notebook's theme changes.
  const stopThemeWatch = watchHostTheme(() => {
    backgroundKey = "";
    draw();
  });

  const DATA_TRAITS = ["tokens", "shape", "fused", "fused_layers", "version", "head_fusion"];
  const VIEW_TRAITS = ["stack", "stacks", "method", "selected_layer", "selected_token", "methods", "summaries", "signed", "caption", "query_index", "local_methods"];
  for (const name of DATA_TRAITS) model.on(`change:${name}`, onData);
  for (const name of VIEW_TRAITS) model.on(`change:${name}`, schedule);
  model.on("change:threshold", onThreshold);
  model.on("msg:custom", onMessage);
  leftLabels.addEventListener("click", onLabelClick);
  rightLabels.addEventListener("click", onLabelClick);
  canvas.addEventListener("click", onCanvasClick);
  canvas.addEventListener("mousemove", onMove);
  canvas.addEventListener("mouseleave", onLeave);
  methodSelect.addEventListener("change", onMethod);
  stackSelect.addEventListener("change", onStack);
  slider.addEventListener("input", onSlider);
  root.addEventListener("keydown", onKey);
  schedule();

  return () => {
    for (const name of DATA_TRAITS) model.off(`change:${name}`, onData);
    for (const name of VIEW_TRAITS) model.off(`change:${name}`, schedule);
    model.off("change:threshold", onThreshold);
    model.off("msg:custom", onMessage);
    clearTimeout(progressTimer);
    clearTimeout(silentTimer);
    stopThemeWatch();
    if (hoverFrame) cancelAnimationFrame(hoverFrame);
    leftLabels.removeEventListener("click", onLabelClick);
    rightLabels.removeEventListener("click", onLabelClick);
    canvas.removeEventListener("click", onCanvasClick);
    canvas.removeEventListener("mousemove", onMove);
    canvas.removeEventListener("mouseleave", onLeave);
    methodSelect.removeEventListener("change", onMethod);
    stackSelect.removeEventListener("change", onStack);
    slider.removeEventListener("input", onSlider);
    root.removeEventListener("keydown", onKey);
    root.remove();
  };
}

/** Stroke grouped lines of edge layer `layer`: from (layer − 1, j) on the left to (layer, i) on the right. */
function strokeBuckets(
  ctx: CanvasRenderingContext2D,
  g: FlowGeometry,
  layer: number,
  n: number,
  buckets: Buckets,
  kind: "edge" | "path",
  color: (negative: boolean) => string,
): void {
  const x0 = nodeX(g, layer - 1);
  const x1 = nodeX(g, layer);
  for (let level = 1; level <= LEVELS; level++) {
    const start = buckets.starts[level]!;
    const stop = buckets.starts[level + 1]!;
    if (start === stop) continue;
    const { width, alpha } = lineStyle(level, kind);
    ctx.lineWidth = width;
    ctx.globalAlpha = alpha;
    for (const negative of [false, true]) {
      ctx.strokeStyle = color(negative);
      ctx.beginPath();
      let segments = 0;
      for (let s = start; s < stop; s++) {
        if (Boolean(buckets.negative[s]) !== negative) continue;
        const flat = buckets.items[s]!;
        const i = Math.floor(flat / n);
        const j = flat - i * n;
        ctx.moveTo(x0, nodeY(g, j));
        ctx.lineTo(x1, nodeY(g, i));
        // Short paths: stroking one path of thousands of crossing segments
        // is far slower (the rasteriser resolves their overlaps) than many small ones.
        if (++segments === STROKE_BATCH) {
          ctx.stroke();
          ctx.beginPath();
          segments = 0;
        }
      }
      if (segments > 0) ctx.stroke();
    }
  }
  ctx.globalAlpha = 1;
}
