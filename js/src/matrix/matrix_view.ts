/**
 * AttentionMatrixView (traits: MatrixTraits in matrix_types.ts): one
 * attention matrix as a zoomable heat map for long inputs, drawn on a canvas
 * from tiles the kernel sends as they come into view (matrix_state.ts: the
 * maths; matrix_draw.ts: the pictures; matrix_messages.ts: the messages).
 *
 * - Drag to pan, wheel or + / − to zoom, "fit" to see it all; the minimap
 *   shows (and, clicked, moves) the viewport.
 * - Every frame is drawn at once from what the page holds (the overview,
 *   then finer tiles over it); the tiles it lacks at the level the zoom needs
 *   are asked for, and drawn when they come.
 * - Hover: the query and key tokens and the weight; click a cell to pin its
 *   row (selected_token, synced; again or Esc to unpin).
 *
 * Test hooks on the root: data-state (waiting | ready | error), data-draws
 * (frames painted), data-level, data-pending (tiles in flight),
 * data-version, data-selected-token, data-layer, data-head, data-color-scale
 * (the scale drawn: linear | log).
 */
import type { AnyModel } from "@anywidget/types";

import { displayToken, h, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import { formatNumber } from "../core/format";
import { drawFrame, drawLegend, drawMinimap, legendText, type ColorScale, type Frame } from "./matrix_draw";
import { decodeTile, decodeTiles, isTileReply, tileRequests } from "./matrix_messages";
import {
  blockOf, cellAt, centreOn, fitViewport, levelFor, panBy, TileCache, valueAt, visibleTiles, zoomAt,
  type Tile, type Viewport,
} from "./matrix_state";
import type { ColorMap, MatrixTraits } from "./matrix_types";
import styles from "./matrix.css";
import { useBaseStyles } from "../core/base_styles";

type Model = AnyModel<MatrixTraits>;

/** Plot size (CSS px) and the axes' margins. */
const PLOT = 560;
const LEFT = 86;
const TOP = 70;
const MINIMAP = 150;
/** A press that moves less than this (px) is a click, not a drag. */
const CLICK_SLOP = 4;

export function renderMatrixView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-matrixview",
    attrs: { tabindex: 0, role: "group", "aria-label": "Attention matrix view", "data-state": "waiting", "data-draws": 0 },
  });
  const caption = h("div", { className: "attnw-caption attnw-matrix-caption" });
  const notice = h("div", { className: "attnw-matrix-notice", attrs: { role: "note" } });
  const layerSelect = h("select", { className: "attnw-matrix-layer", attrs: { "aria-label": "layer" } });
  const headSelect = h("select", { className: "attnw-matrix-head", attrs: { "aria-label": "head" } });
  const scaleSelect = h("select", { className: "attnw-matrix-scale", attrs: { "aria-label": "colour scale" } });
  for (const s of ["auto", "linear", "log"]) scaleSelect.appendChild(h("option", { text: s, attrs: { value: s } }));
  const button = (text: string, label: string, cls: string): HTMLButtonElement =>
    h("button", { className: cls, text, attrs: { type: "button", "aria-label": label, title: label } });
  const zoomIn = button("+", "zoom in", "attnw-matrix-zoom-in");
  const zoomOut = button("−", "zoom out", "attnw-matrix-zoom-out");
  const fit = button("fit", "show the whole matrix", "attnw-matrix-fit");
  const bar = h("div", { className: "attnw-matrix-bar" }, [
    h("label", { text: "layer " }, [layerSelect]), h("label", { text: "head " }, [headSelect]),
    h("label", { text: "colours " }, [scaleSelect]), zoomOut, zoomIn, fit,
  ]);
  const canvas = h("canvas", { className: "attnw-matrix-canvas", attrs: { "aria-label": "attention matrix" } });
  const minimap = h("canvas", { className: "attnw-matrix-minimap", attrs: { "aria-label": "minimap" } });
  const legendCanvas = h("canvas", { attrs: { width: 120, height: 10 } });
  const legendLo = h("span");
  const legendHi = h("span");
  const legendScale = h("div", { className: "attnw-matrix-legend-scale" });
  const legendNote = h("div", { className: "attnw-matrix-legend-note" });
  const status = h("div", { className: "attnw-status attnw-matrix-status", attrs: { "aria-live": "polite" } });
  const side = h("div", { className: "attnw-matrix-side" }, [
    minimap, h("div", { className: "attnw-matrix-legend" }, [legendLo, legendCanvas, legendHi]), legendScale, legendNote,
  ]);
  useBaseStyles(root);
  root.append(styleElement(styles), caption, notice, bar,
    h("div", { className: "attnw-matrix-body" }, [canvas, side]), status);
  el.appendChild(root);

  const dpr = Math.max(1, Math.min(3, globalThis.devicePixelRatio || 1));
  const size = (c: HTMLCanvasElement, w: number, hgt: number): CanvasRenderingContext2D => {
    c.width = Math.round(w * dpr);
    c.height = Math.round(hgt * dpr);
    c.style.width = `${w}px`;
    c.style.height = `${hgt}px`;
    const ctx = c.getContext("2d");
    if (!ctx) throw new Error("attnwidget: this browser has no 2D canvas");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  };
  const ctx = size(canvas, LEFT + PLOT, TOP + PLOT);
  const miniCtx = size(minimap, MINIMAP, MINIMAP);
  const legendCtx = legendCanvas.getContext("2d");
  if (legendCtx) drawLegend(legendCtx, 120, 10);

  const cache = new TileCache<HTMLCanvasElement>();
  let overview: Tile<HTMLCanvasElement> | null = null;
  let n = 0;
  let vp: Viewport = fitViewport(1, 1, PLOT, PLOT);
  let hover: { row: number; col: number } | null = null;
  let draws = 0;
  let frameHandle = 0;
  let lastError = "";

  const levels = (): number[][] => model.get("levels") ?? [];
  /** The scale Python fitted (color_map); 0 … 1 linear only until it comes. */
  const mapOf = (): ColorMap =>
    model.get("color_map") ?? { asked: "linear", scale: "linear", lo: 0, hi: 1, clipped: false, above: 0, label: "linear 0 … 1" };
  const scaleOf = (): ColorScale => {
    const map = mapOf();
    return { lo: map.lo, hi: map.hi, log: map.scale === "log" };
  };
  const colors = (): Frame["colors"] => {
    const style = getComputedStyle(root);
    const read = (name: string, fallback: string): string => style.getPropertyValue(name).trim() || fallback;
    return { fg: read("color", "#222") || "#222", muted: style.color || "#666", accent: "rgb(230, 97, 1)", bg: read("--attnw-bg", "transparent") };
  };
  let palette = colors();

  const frame = (): Frame => ({
    vp, rows: n, cols: n, tokens: model.get("tokens") ?? [], level: levelFor(vp.scale, levels().length), levels: levels(),
    tile: model.get("tile_size"), cache, overview, scale: scaleOf(), selectedRow: model.get("selected_token"),
    hover, left: LEFT, top: TOP, colors: palette,
  });

  /** Ask for the tiles the current frame lacks at its level. */
  const request = (f: Frame): void => {
    if (f.level >= f.levels.length - 1) return; // the overview covers it
    const wanted = visibleTiles(vp, f.level, f.levels[f.level] as number[], f.tile, n, n);
    const missing = cache.claim(f.level, wanted);
    for (const message of tileRequests(cache.version, f.level, missing)) model.send(message);
    root.dataset.pending = String(cache.inFlight);
  };

  const paint = (): void => {
    frameHandle = 0;
    if (n === 0) return;
    const f = frame();
    drawFrame(ctx, f);
    drawMinimap(miniCtx, MINIMAP, f);
    const map = mapOf();
    const text = legendText(map, f.level, model.get("pool"));
    legendLo.textContent = text.lo;
    legendHi.textContent = text.hi;
    legendScale.textContent = text.scale;
    legendNote.textContent = text.note;
    root.dataset.colorScale = map.scale;
    request(f);
    draws += 1;
    root.dataset.draws = String(draws);
    root.dataset.level = String(f.level);
    root.dataset.scale = String(vp.scale);
    root.dataset.state = "ready";
  };
  const schedule = (): void => {
    if (!frameHandle) frameHandle = requestAnimationFrame(paint);
  };

  const describe = (cell: { row: number; col: number }): string => {
    const f = frame();
    const tokens = f.tokens;
    const found = valueAt(cache, overview, f.level, f.levels.length, f.tile, cell.row, cell.col);
    const level = found?.level ?? f.level;
    const b = blockOf(level, Math.floor(cell.row / 2 ** level), Math.floor(cell.col / 2 ** level), n, n);
    const token = (k: number): string => JSON.stringify(displayToken(tokens[k] ?? ""));
    const span = (a: number, z: number): string => (a === z ? `${a} ${token(a)}` : `${a}–${z} (${token(a)} … ${token(z)})`);
    const value = found ? formatNumber(found.value) : "loading";
    const pooled = level > 0 && found ? (model.get("pool") === "mean" ? "mean " : "max ") : "";
    return `query ${span(b.r0, b.r1)} → key ${span(b.c0, b.c1)}: ${pooled}${value}`;
  };
  const showStatus = (): void => {
    const row = model.get("selected_token");
    const tokens = model.get("tokens") ?? [];
    if (hover) status.textContent = describe(hover);
    else if (row >= 0) status.textContent = `pinned query ${row} ${JSON.stringify(displayToken(tokens[row] ?? ""))} (click it again or Esc to unpin)`;
    else status.textContent = lastError;
    root.dataset.selectedToken = String(row);
  };

  const fillSelects = (): void => {
    const [layers = 0, heads = 0] = model.get("shape") ?? [];
    layerSelect.replaceChildren(...Array.from({ length: layers }, (_, l) => h("option", { text: String(l), attrs: { value: l } })));
    const options = [h("option", { text: "mean", attrs: { value: -1 } })];
    for (let k = 0; k < heads; k++) options.push(h("option", { text: String(k), attrs: { value: k } }));
    headSelect.replaceChildren(...options);
    headSelect.disabled = heads === 0;
  };
  const syncControls = (): void => {
    layerSelect.value = String(model.get("layer"));
    headSelect.value = String(model.get("head"));
    scaleSelect.value = model.get("color_scale");
    root.dataset.layer = String(model.get("layer"));
    root.dataset.head = String(model.get("head"));
  };

  /** A new matrix (version): forget the tiles, decode the overview. */
  const load = (): void => {
    try {
      const lv = levels();
      const meta = model.get("overview_meta");
      const data = model.get("overview");
      overview = data ? decodeTile<HTMLCanvasElement>(lv.length - 1, 0, 0, data, meta) : null;
      cache.reset(model.get("version"));
      root.dataset.version = String(model.get("version"));
      lastError = "";
    } catch (err) {
      root.dataset.state = "error";
      status.textContent = `attnwidget: ${err instanceof Error ? err.message : String(err)}`;
      overview = null;
      return;
    }
    schedule();
  };
  const setup = (): void => {
    n = (model.get("tokens") ?? []).length;
    vp = fitViewport(n, n, PLOT, PLOT);
    caption.textContent = model.get("caption") ?? "";
    notice.textContent = model.get("notice") ?? "";
    notice.hidden = !model.get("notice");
    fillSelects();
    syncControls();
    load();
  };

  const onMessage = (content: unknown, buffers: DataView[] = []): void => {
    if (isTileReply(content)) {
      if (content.version !== cache.version) return; // for a matrix no longer drawn
      try {
        for (const tile of decodeTiles<HTMLCanvasElement>(content, buffers)) cache.put(tile);
      } catch (err) {
        lastError = `attnwidget: ${err instanceof Error ? err.message : String(err)}`;
        showStatus();
      }
      root.dataset.pending = String(cache.inFlight);
      schedule();
    } else if (typeof content === "object" && content !== null && (content as { type?: unknown }).type === "error") {
      lastError = String((content as { message?: unknown }).message ?? "error");
      showStatus();
    }
  };

  // -- pointer, wheel, keys -----------------------------------------------------
  const plotPoint = (event: MouseEvent): [number, number] => {
    const rect = canvas.getBoundingClientRect();
    return [event.clientX - rect.left - LEFT, event.clientY - rect.top - TOP];
  };
  let press: { x: number; y: number; moved: boolean; id: number } | null = null;
  const onDown = (event: PointerEvent): void => {
    press = { x: event.clientX, y: event.clientY, moved: false, id: event.pointerId };
    canvas.setPointerCapture?.(event.pointerId);
  };
  const onMove = (event: PointerEvent): void => {
    if (press && press.id === event.pointerId) {
      const dx = event.clientX - press.x;
      const dy = event.clientY - press.y;
      if (press.moved || Math.hypot(dx, dy) >= CLICK_SLOP) {
        press.moved = true;
        canvas.classList.add("attnw-matrix-dragging");
        vp = panBy(vp, dx, dy, n, n);
        press.x = event.clientX;
        press.y = event.clientY;
        hover = null;
        schedule();
        return;
      }
    }
    const [px, py] = plotPoint(event);
    hover = cellAt(vp, px, py, n, n);
    showStatus();
    schedule();
  };
  const onUp = (event: PointerEvent): void => {
    const was = press;
    press = null;
    canvas.classList.remove("attnw-matrix-dragging");
    if (!was || was.moved) return;
    const [px, py] = plotPoint(event);
    const cell = cellAt(vp, px, py, n, n);
    if (!cell) return;
    const row = model.get("selected_token") === cell.row ? -1 : cell.row;
    model.set("selected_token", row);
    model.save_changes();
  };
  const onLeave = (): void => {
    hover = null;
    showStatus();
    schedule();
  };
  const onWheel = (event: WheelEvent): void => {
    event.preventDefault();
    const [px, py] = plotPoint(event);
    const delta = event.deltaMode === 1 ? event.deltaY * 16 : event.deltaY;
    vp = zoomAt(vp, Math.exp(-delta * 0.002), Math.min(PLOT, Math.max(0, px)), Math.min(PLOT, Math.max(0, py)), n, n);
    schedule();
  };
  const zoomBy = (factor: number): void => {
    vp = zoomAt(vp, factor, PLOT / 2, PLOT / 2, n, n);
    schedule();
  };
  const onMinimap = (event: MouseEvent): void => {
    const rect = minimap.getBoundingClientRect();
    const s = MINIMAP / Math.max(1, n);
    vp = centreOn(vp, (event.clientY - rect.top) / s, (event.clientX - rect.left) / s, n, n);
    schedule();
  };
  const onKey = (event: KeyboardEvent): void => {
    const moves: Record<string, [number, number]> = { ArrowLeft: [60, 0], ArrowRight: [-60, 0], ArrowUp: [0, 60], ArrowDown: [0, -60] };
    if (event.key === "Escape" && model.get("selected_token") >= 0) {
      model.set("selected_token", -1);
      model.save_changes();
    } else if (event.key === "+" || event.key === "=") zoomBy(2);
    else if (event.key === "-") zoomBy(0.5);
    else if (moves[event.key]) {
      const [dx, dy] = moves[event.key] as [number, number];
      vp = panBy(vp, dx, dy, n, n);
      schedule();
    } else return;
    event.preventDefault();
  };
  const onLayer = (): void => {
    model.set("layer", Number(layerSelect.value));
    model.save_changes();
  };
  const onHead = (): void => {
    model.set("head", Number(headSelect.value));
    model.save_changes();
  };
  const onScale = (): void => {
    model.set("color_scale", scaleSelect.value);
    model.save_changes();
  };
  const onFit = (): void => {
    vp = fitViewport(n, n, PLOT, PLOT);
    schedule();
  };
  const onZoomIn = (): void => zoomBy(2);
  const onZoomOut = (): void => zoomBy(0.5);

  const listeners = new Listeners()
    .add(() => {
      if (frameHandle) cancelAnimationFrame(frameHandle);
    })
    .on(canvas, "pointerdown", onDown)
    .on(canvas, "pointermove", onMove)
    .on(canvas, "pointerup", onUp)
    .on(canvas, "pointerleave", onLeave)
    .on(canvas, "wheel", onWheel, { passive: false })
    .on(minimap, "click", onMinimap)
    .on(root, "keydown", onKey)
    .on(layerSelect, "change", onLayer)
    .on(headSelect, "change", onHead)
    .on(scaleSelect, "change", onScale)
    .on(zoomIn, "click", onZoomIn)
    .on(zoomOut, "click", onZoomOut)
    .on(fit, "click", onFit);

  const onSelected = (): void => {
    showStatus();
    schedule();
  };
  const onControls = (): void => {
    syncControls();
    caption.textContent = model.get("caption") ?? "";
  };
  const onScaleChange = (): void => {
    syncControls();
    schedule();
  };
  listeners
    .traits(model, ["tokens", "levels"], setup)
    .traits(model, ["version"], load)
    .traits(model, ["selected_token"], onSelected)
    .traits(model, ["layer", "head", "caption"], onControls)
    .traits(model, ["color_scale"], onScaleChange)
    .traits(model, ["color_map"], schedule)
    .model(model, "msg:custom", onMessage);
  setup();
  showStatus();
  palette = colors();
  return listeners.dispose;
}
