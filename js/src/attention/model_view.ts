/**
 * ModelView (traits: ModelTraits in attention_types.ts): every layer × head
 * as a thumbnail line drawing on ONE canvas; click a thumbnail to enlarge it
 * (sets `layer` and `head`), hover a token in the enlarged view to see only
 * its lines. As in HeadView, click a query token of the enlarged head to pin
 * it (`selected_token`), click it again or Esc to unpin, ↑/↓ to move it; Esc
 * with nothing pinned closes the head, and closing unpins. The pin stays
 * when another head is enlarged (same query tokens).
 *
 * Hovering a thumbnail names its layer and head and the weight of the line
 * under the pointer (pooled bins say so); hovering a line or a weight-strip
 * block of the enlarged head shows its weight (LinePanel). Rows are layers
 * and columns heads, with axis titles; the enlarged head stays beside the
 * grid, which scrolls when both do not fit.
 *
 * Thumbnails come from the pooled `thumbs` trait (exact up to 48 tokens);
 * the enlarged head from its full attention, requested from the kernel when
 * the page lacks it.
 *
 * Test hooks: the root's data-state, data-layer, data-head; the grid's
 * data-lines (lines drawn in all thumbnails); the enlarged panel's data-lines
 * and data-focus, and its pinned query cell's `attnw-pinned` class.
 */
import type { AnyModel } from "@anywidget/types";

import {
  applyTheme,
  attentionControls,
  attentionFeed,
  LOADING_TEXT,
  pinAfterKey,
  pinHint,
  shownOf,
  type Shown,
} from "./attention_common";
import {
  binCenter,
  binsWithin,
  bucketLines,
  cellAt,
  cellOrigin,
  curveFor,
  gridSize,
  levelCutoff,
  linearCurve,
  type GridGeometry,
} from "./attention_layout";
import { strokeLines } from "./attention_draw";
import { LinePanel } from "./attention_lines";
import { thumbHit, thumbText } from "./attention_tooltip";
import { headColor, isDarkText } from "../core/colors";
import { watchHostTheme } from "../core/host_theme";
import styles from "./attention.css";
import type { MatrixInfo, ModelTraits, ThumbIndex } from "./attention_types";
import { asBytes, decodeFloat16Bits, widen } from "../core/buffers";
import { h, microtaskScheduler, saveTraits, styleElement, whenIdle } from "../core/dom";
import { Listeners } from "../core/listeners";
import { attachNotes, headTarget } from "../core/notes";
import { useBaseStyles } from "../core/base_styles";

type Model = AnyModel<ModelTraits>;

const DETAIL_WIDTH = 220;
/** The patch that closes the enlarged head (a pinned token belongs to it). */
const CLOSED = { layer: -1, head: -1, selected_token: -1 } as const;
/** Most lines per thumbnail (the strongest): keeps big grids quick to draw. */
const THUMB_LINE_BUDGET = 400;
/**
 * Thumbnails: opacity = pooled weight (linear, as bertviz's model view) in
 * hairlines: 48 bins of pooled weights on a 72 px cell turn solid under the
 * enlarged head's perceptual curve.
 */
const THUMB_CURVE = linearCurve(1);
const THIN = (): number => 1;
/** Inset of a thumbnail's lines from its cell's edges (CSS px). */
const THUMB_PAD = 4;

interface Thumbs {
  index: ThumbIndex;
  /** (L, H, row bins, col bins) float32. */
  values: Float32Array;
}

export function renderModelView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-attention attnw-modelview",
    attrs: { tabindex: 0, role: "group", "aria-label": "Attention of every layer and head", "data-state": "loading" },
  });
  const save = (patch: Partial<Omit<ModelTraits, "_view">>): void => saveTraits(model, patch);
  const controls = attentionControls(model, (patch) => save(patch));
  const canvas = h("canvas", { className: "attnw-thumbs", attrs: { role: "img", "aria-label": "Layer by head thumbnails" } });
  const hoverBox = h("div", { className: "attnw-cell-hover", attrs: { hidden: true } });
  const selectedBox = h("div", { className: "attnw-cell-selected", attrs: { hidden: true } });
  const thumbTip = h("div", { className: "attnw-tip", attrs: { role: "tooltip", hidden: true } });
  const grid = h("div", { className: "attnw-grid-wrap", attrs: { "data-lines": 0 } }, [canvas, hoverBox, selectedBox]);
  // Axis titles around the grid (its tick labels, the ids, are on the canvas).
  const axes = h("div", { className: "attnw-axes" }, [
    h("div", { className: "attnw-axis attnw-axis-heads", text: "Heads →" }),
    h("div", { className: "attnw-axis attnw-axis-layers", text: "Layers ↓" }),
    grid,
  ]);
  const detailTitle = h("span", { className: "attnw-detail-title" });
  const close = h("button", { className: "attnw-close", text: "×", attrs: { type: "button", title: "Close (Esc)", "aria-label": "Close" } });
  const panel = new LinePanel(DETAIL_WIDTH, (row) => save({ selected_token: row }));
  const detailStatus = h("div", { className: "attnw-status" });
  const detail = h("div", { className: "attnw-detail attnw-parked", attrs: { "aria-hidden": "true" } }, [
    h("div", { className: "attnw-detail-head" }, [detailTitle, close]),
    h("div", { className: "attnw-scroll-y" }, [panel.el]),
    panel.note,
    detailStatus,
  ]);
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  useBaseStyles(root);
  root.append(
    styleElement(styles),
    h("div", { className: "attnw-controls" }, controls.elements),
    controls.note,
    h("div", { className: "attnw-model-body" }, [h("div", { className: "attnw-scroll-xy attnw-grid-scroll" }, [axes]), detail]),
    status,
    // On the root, not in the grid's scroller, which would clip it.
    thumbTip,
  );
  el.appendChild(root);

  let error = "";
  const feed = attentionFeed(model, () => schedule(), (message) => {
    error = message;
    schedule();
  });

  // Thumbnails, decoded once per `thumbs` value.
  let thumbs = new Map<string, Thumbs>();
  const decodeThumbs = (): void => {
    thumbs = new Map();
    const data = model.get("thumbs");
    if (!data) return;
    const bytes = asBytes(data);
    for (const index of model.get("thumb_index") ?? []) {
      const part = bytes.subarray(index.offset, index.offset + index.nbytes);
      thumbs.set(index.matrix, { index, values: widen(decodeFloat16Bits(part, "thumbs")) });
    }
  };

  /**
   * A head's full weights when its thumbnail is exact (every bin one token,
   * n <= 48): the kernel then sends no separate copy (see _attention.py).
   */
  const exactThumb = (info: MatrixInfo, layer: number, head: number): Float32Array | null => {
    const t = thumbs.get(info.key);
    const [, heads, rows, cols] = info.shape;
    if (!t || t.index.row_edges.length - 1 !== rows || t.index.col_edges.length - 1 !== cols) return null;
    const size = rows * cols;
    const start = (layer * heads + head) * size;
    return start + size <= t.values.length ? t.values.subarray(start, start + size) : null;
  };

  /**
   * The enlarged head's token columns are built ahead, while the page is
   * idle after the grid is drawn: at 512 tokens that is 1,024 elements
   * (~70 ms), which the first thumbnail click would otherwise wait for.
   * The panel reuses them for every head (setTokens is a no-op when the
   * tokens did not change).
   */
  let cancelPrebuild = (): void => {};
  const prebuildTokens = (shown: Shown): void => {
    cancelPrebuild();
    cancelPrebuild = whenIdle(() => {
      panel.setTokens(shown.rowTokens.slice(...shown.rows), shown.colTokens.slice(...shown.cols), shown.rows, shown.cols, {
      left: shown.rowRaw.slice(...shown.rows),
      right: shown.colRaw.slice(...shown.cols),
    });
      // An empty draw sizes the line canvas (n=512: 220 × 10,240 px), whose
      // first allocation would otherwise also fall in the first click.
      panel.draw();
    });
  };

  let geometry: GridGeometry | null = null;
  let gridKey = "";
  let unstyledRetries = 0;

  const drawGrid = (shown: Shown): void => {
    const { info } = shown;
    const t = thumbs.get(info.key);
    const [layers, heads] = info.shape;
    const cell = heads > 16 ? 48 : 72;
    const g: GridGeometry = { layers, heads, labelWidth: 34, labelHeight: 18, cell, gap: 6 };
    // The label colour is part of the key: a host theme switch (watchHostTheme)
    // changes it, and the canvas keeps what was drawn with the old one.
    const style = getComputedStyle(root);
    if (!style.color && unstyledRetries++ < 120) {
      // Not in the document yet (a widget manager attaches `el` after render):
      // no CSS colour to draw the labels with. Try again next frame.
      requestAnimationFrame(schedule);
    }
    const dark = isDarkText(style.color);
    root.dataset.palette = dark ? "dark" : "light";
    const key = JSON.stringify([info.key, shown.filter, info.shape, model.get("theme"), style.color, t?.index.offset]);
    geometry = g;
    if (key === gridKey) return;
    gridKey = key;
    const { width, height } = gridSize(g);
    const dpr = Math.max(1, Math.min(globalThis.devicePixelRatio || 1, 16000 / Math.max(width, height)));
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const ctx = canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.fillStyle = style.color || "#888";
    ctx.font = `11px ${style.fontFamily || "sans-serif"}`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    info.head_ids.forEach((id, hpos) => ctx.fillText(String(id), cellOrigin(g, 0, hpos).x + cell / 2, g.labelHeight / 2));
    ctx.textAlign = "right";
    info.layer_ids.forEach((id, lpos) => ctx.fillText(String(id), g.labelWidth - 6, cellOrigin(g, lpos, 0).y + cell / 2));
    let drawn = 0;
    if (t) {
      const { row_edges: re, col_edges: ce } = t.index;
      const br = re.length - 1;
      const bc = ce.length - 1;
      const rowBins = binsWithin(re, shown.rows);
      const colBins = binsWithin(ce, shown.cols);
      const rowSpan = shown.rows[1] - shown.rows[0];
      const colSpan = shown.cols[1] - shown.cols[0];
      const pad = THUMB_PAD;
      const inner = cell - 2 * pad;
      // Bin centres once (the same in every thumbnail).
      const ys0 = Float32Array.from({ length: br }, (_, k) => binCenter(re, k, shown.rows[0], rowSpan, pad, inner));
      const ys1 = Float32Array.from({ length: bc }, (_, k) => binCenter(ce, k, shown.cols[0], colSpan, pad, inner));
      ctx.lineWidth = 1;
      for (let l = 0; l < layers; l++) {
        for (let hp = 0; hp < heads; hp++) {
          const o = cellOrigin(g, l, hp);
          const values = t.values.subarray((l * heads + hp) * br * bc, (l * heads + hp + 1) * br * bc);
          const buckets = bucketLines(values, bc, rowBins, colBins, THUMB_CURVE);
          ctx.strokeStyle = headColor(hp, dark);
          drawn += strokeLines(
            ctx,
            buckets,
            levelCutoff([buckets], THUMB_LINE_BUDGET),
            o.x + pad,
            o.x + cell - pad,
            (i) => o.y + ys0[rowBins[0] + i]!,
            (j) => o.y + ys1[colBins[0] + j]!,
            THIN,
          );
        }
      }
    }
    grid.dataset.lines = String(drawn);
  };

  const place = (box: HTMLElement, at: { layer: number; head: number } | null): void => {
    if (!geometry || !at) {
      box.hidden = true;
      return;
    }
    const o = cellOrigin(geometry, at.layer, at.head);
    box.hidden = false;
    box.style.left = `${o.x - 2}px`;
    box.style.top = `${o.y - 2}px`;
    box.style.width = `${geometry.cell + 4}px`;
    box.style.height = `${geometry.cell + 4}px`;
  };

  const update = (): void => {
    applyTheme(root, model.get("theme"));
    const shown = shownOf(model);
    controls.sync(shown);
    if (!shown) {
      root.dataset.state = "error";
      status.textContent = "No attention to show.";
      return;
    }
    drawGrid(shown);
    const { info } = shown;
    const layerPos = info.layer_ids.indexOf(model.get("layer"));
    const headPos = info.head_ids.indexOf(model.get("head"));
    const open = layerPos >= 0 && headPos >= 0;
    const pinned = open ? (model.get("selected_token") ?? -1) : -1;
    panel.setPinned(pinned);
    root.dataset.layer = String(open ? info.layer_ids[layerPos] : -1);
    root.dataset.head = String(open ? info.head_ids[headPos] : -1);
    place(selectedBox, open ? { layer: layerPos, head: headPos } : null);
    detail.classList.toggle("attnw-parked", !open);
    if (open) detail.removeAttribute("aria-hidden");
    else detail.setAttribute("aria-hidden", "true");
    root.dataset.state = "ready";
    status.textContent = open
      ? "Click another thumbnail to enlarge it; click it again or × to close."
      : "Click a thumbnail to enlarge that head (rows: layers, columns: heads).";
    if (!open) {
      panel.setData(null);
      prebuildTokens(shown);
      return;
    }
    cancelPrebuild();
    detailTitle.textContent = `Layer ${info.layer_ids[layerPos]}, head ${info.head_ids[headPos]}`;
    panel.setTokens(shown.rowTokens.slice(...shown.rows), shown.colTokens.slice(...shown.cols), shown.rows, shown.cols, {
      left: shown.rowRaw.slice(...shown.rows),
      right: shown.colRaw.slice(...shown.cols),
    });
    const weights = feed.store().weights(info.key, layerPos, headPos) ?? exactThumb(info, layerPos, headPos);
    if (!weights) {
      feed.requester.ask(info.key, layerPos, headPos);
      panel.setData(null);
      root.dataset.state = error ? "error" : "loading";
      detailStatus.textContent = error ? `attnwidget: ${error}` : LOADING_TEXT;
      return;
    }
    error = "";
    detailStatus.textContent = pinHint(shown.rowTokens, pinned, info.causal);
    panel.setData({
      stride: info.shape[3],
      rows: shown.rows,
      cols: shown.cols,
      heads: [{ id: info.head_ids[headPos]!, slot: 0, color: headColor(headPos, root.dataset.palette === "dark"), weights }],
      slots: 1,
      curve: curveFor(1),
      causal: info.causal,
    });
  };

  const schedule = microtaskScheduler(update, (err) => {
    root.dataset.state = "error";
    status.textContent = `attnwidget: cannot draw this view: ${err instanceof Error ? err.message : String(err)}`;
    console.error("attnwidget model view:", err);
  });

  const cellOf = (event: MouseEvent): { layer: number; head: number } | null => {
    if (!geometry) return null;
    const rect = canvas.getBoundingClientRect();
    return cellAt(geometry, event.clientX - rect.left, event.clientY - rect.top);
  };
  const onMove = (event: MouseEvent): void => {
    const at = cellOf(event);
    place(hoverBox, at);
    const shown = shownOf(model);
    if (!at || !shown || !geometry) {
      thumbTip.hidden = true;
      return;
    }
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const layer = shown.info.layer_ids[at.layer]!;
    const head = shown.info.head_ids[at.head]!;
    const line = thumbLineAt(shown, at, x, y);
    thumbTip.textContent = `${line ?? `Layer ${layer}, head ${head}`} (click to enlarge)`;
    Object.assign(thumbTip.dataset, { layer: String(layer), head: String(head), line: line ? "1" : "0" });
    thumbTip.hidden = false;
    const area = root.getBoundingClientRect();
    const left = event.clientX - area.left;
    const flip = left > area.width / 2;
    thumbTip.style.left = `${flip ? left - 12 : left + 12}px`;
    thumbTip.style.top = `${event.clientY - area.top + 14}px`;
    thumbTip.style.transform = flip ? "translateX(-100%)" : "";
  };

  /** The text of the thumbnail line nearest (x, y) in cell `at` (as drawn: the same bins and cutoff), or null. */
  const thumbLineAt = (shown: Shown, at: { layer: number; head: number }, x: number, y: number): string | null => {
    const t = thumbs.get(shown.info.key);
    const g = geometry;
    if (!t || !g) return null;
    const { row_edges: re, col_edges: ce } = t.index;
    const size = (re.length - 1) * (ce.length - 1);
    const start = (at.layer * shown.info.shape[1] + at.head) * size;
    const o = cellOrigin(g, at.layer, at.head);
    const box = { x: o.x, y: o.y, size: g.cell, pad: THUMB_PAD };
    const hit = thumbHit(t.values.subarray(start, start + size), re, ce, shown.rows, shown.cols, THUMB_CURVE, THUMB_LINE_BUDGET, box, x, y);
    if (!hit) return null;
    const [i, j] = [hit.i, hit.j];
    const [layer, head] = [shown.info.layer_ids[at.layer]!, shown.info.head_ids[at.head]!];
    return thumbText(layer, head, [re[i]!, re[i + 1]!], [ce[j]!, ce[j + 1]!], shown.rowTokens, shown.colTokens, hit.weight);
  };
  const onLeave = (): void => {
    place(hoverBox, null);
    thumbTip.hidden = true;
  };
  const onClick = (event: MouseEvent): void => {
    const at = cellOf(event);
    const info = shownOf(model)?.info;
    if (!at || !info) return;
    const layer = info.layer_ids[at.layer]!;
    const head = info.head_ids[at.head]!;
    const same = model.get("layer") === layer && model.get("head") === head;
    // The pin stays in another head (same queries); closing unpins.
    save(same ? CLOSED : { layer, head });
  };
  const onClose = (): void => save(CLOSED);
  const onKey = (event: KeyboardEvent): void => {
    const shown = shownOf(model);
    if (!shown || model.get("layer") === -1) return;
    const next = pinAfterKey(event.key, model.get("selected_token") ?? -1, shown.rows);
    if (next === null && event.key !== "Escape") return;
    event.preventDefault();
    save(next === null ? CLOSED : { selected_token: next }); // Esc: unpin first, then close
  };
  const onThumbs = (): void => {
    decodeThumbs();
    gridKey = "";
    schedule();
  };

  const TRAITS = ["matrix", "pair_filter", "layer", "head", "selected_token", "theme", "tokens", "decoder_tokens", "matrices", "sentence_b_start"];
  const listeners = new Listeners()
    .add(() => root.remove())
    .add(() => panel.destroy())
    .add(() => cancelPrebuild())
    .add(() => feed.dispose())
    .traits(model, TRAITS, schedule)
    // A token pinned from Python scrolls into sight once the redraw above has run.
    .traits(model, ["selected_token"], () => queueMicrotask(() => panel.revealRow(model.get("selected_token") ?? -1)))
    .traits(model, ["thumbs", "thumb_index"], onThumbs)
    .on(canvas, "mousemove", onMove)
    .on(canvas, "mouseleave", onLeave)
    .on(canvas, "click", onClick)
    .on(close, "click", onClose)
    .on(root, "keydown", onKey)
    .add(attachNotes(model, root, () => headTarget(model, model.get("head")), TRAITS, () => model.get("tokens") ?? []))
    // The grid's colours and the panel follow a theme switch; a resize needs no redraw (the grid scrolls).
    .add(watchHostTheme(schedule));
  decodeThumbs();
  update();
  return listeners.dispose;
}
