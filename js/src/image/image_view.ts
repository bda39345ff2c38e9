/**
 * ImageView (traits: ImageTraits in image_types.ts): a Vision Transformer's
 * explanation over its image.
 *
 * - The image (decoded from its PNG bytes) with the chosen map over it,
 *   upsampled bilinearly from the patch grid, at `opacity` (slider); a legend
 *   with the map's colour range; every score method's map beside it as a
 *   small picture (click one to show it).
 * - Hover a patch: its position, label and value (tooltip and status line).
 *   Click a patch to select it (`selected_patch`; click again or Esc to
 *   clear, arrows move it): it is outlined and becomes the query of the two
 *   query maps, "query_attention" (its attention at `layer`, `head`; -1: the
 *   mean over heads) and "query_rollout" (its rollout up to `layer`). With
 *   no selection their query is the explanation's (CLS).
 * - The query maps come from the `preload` trait; a layer the page lacks is
 *   requested from the kernel ({"type": "request", "map", "layer"}) or, in a
 *   saved page, from its recorded replies.
 *
 * Test hooks on the root: data-state (loading | ready | error), data-method
 * (the `selected_method` drawn), data-layer, data-head, data-selected
 * ("row,col" or ""), data-opacity.
 */
import type { AnyModel } from "@anywidget/types";

import { select, setOptions } from "../attention/attention_common";
import { gradient } from "../core/colors";
import { h, microtaskScheduler, saveTraits, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import { formatPercent } from "../core/format";
import { decodeImage, drawComposite, drawOutlines, mapCanvas, thumbElements, type Picture } from "./image_draw";
import { asPatch, fitSize, mapRange, patchAfterKey, patchAt, patchIndex, queryRow, type MapRange, type Patch } from "./image_maths";
import { readData, scoreMapOf, scoresOf, smallMapOf, type Data, type ScoreMap } from "./image_data";
import { MapRequester } from "./image_state";
import { captionText, isQueryMode, methodLabel, patchName, patchText, selectionText, type Shown } from "./image_text";
import { QUERY_ATTENTION, QUERY_ROLLOUT, type ChunkReply, type ImageTraits, type MapError, type MapName } from "./image_types";
import { rangeText } from "../core/score_range";
import styles from "./image.css";
import { useBaseStyles } from "../core/base_styles";
import type { Binary } from "../core/types";

type Model = AnyModel<ImageTraits>;

/** The main image's longer side and a small multiple's (CSS px). */
const MAIN_SIDE = 384;
const THUMB_SIDE = 96;
const NO_REPLY_TEXT =
  "no reply from the kernel for this layer. If this page is a saved export, it holds only the " +
  "layers saved with it; rerun the notebook to explore the rest.";
/** Traits whose change rebuilds the data (the others only redraw). */
const DATA_TRAITS = ["grid", "labels", "methods", "signed", "summaries", "scores", "shape", "num_layers", "num_heads", "preload", "preload_index"] as const;
const NAVIGATION = "change:selected_method change:layer change:head change:selected_patch";
const VIEW_TRAITS = ["selected_method", "layer", "head", "selected_patch", "opacity", "query_token", "target", "special_tokens", "ignored_keys"] as const;

/** The map drawn now: values over the patches (null: still loading) and its range. */
interface Current {
  values: Float32Array | null;
  range: MapRange | null;
  canvas: HTMLCanvasElement | null;
}

export function renderImageView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const doc = el.ownerDocument;
  const root = h("div", {
    className: "attnw attnw-imageview",
    attrs: { tabindex: 0, role: "group", "aria-label": "Image explanation by patch", "data-state": "loading" },
  });
  const save = (patch: Partial<Omit<ImageTraits, "_view">>): void => saveTraits(model, patch);
  const methodPick = select("Map:", "attnw-image-method", (value) => save({ selected_method: value }));
  const layerPick = select("Layer:", "attnw-layer", (value) => save({ layer: Number(value) }));
  const headPick = select("Head:", "attnw-head", (value) => save({ head: Number(value) }));
  const opacity = h("input", {
    className: "attnw-opacity",
    attrs: { type: "range", min: 0, max: 1, step: 0.05, "aria-label": "Opacity of the map over the image" },
  });
  const opacityText = h("span", { className: "attnw-opacity-value" });
  const canvas = h("canvas", { className: "attnw-image-canvas", attrs: { role: "img" } });
  const overlay = h("canvas", { className: "attnw-image-overlay", attrs: { "aria-hidden": "true" } });
  const tip = h("div", { className: "attnw-tip", attrs: { role: "tooltip", hidden: true } });
  const stage = h("div", { className: "attnw-image-stage" }, [canvas, overlay, tip]);
  const caption = h("div", { className: "attnw-caption attnw-image-caption" });
  const bar = h("span", { className: "attnw-bar" });
  const range = h("span", { className: "attnw-range" });
  const note = h("span", { className: "attnw-image-note" });
  const legend = h("div", { className: "attnw-legend attnw-image-legend" }, [bar, range, note]);
  const specials = h("div", { className: "attnw-caption attnw-image-specials" });
  const multiples = h("div", { className: "attnw-image-multiples", attrs: { role: "list", "aria-label": "Every method's map" } });
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  useBaseStyles(root);
  root.append(
    styleElement(styles),
    h("div", { className: "attnw-controls" }, [
      methodPick.wrap,
      layerPick.wrap,
      headPick.wrap,
      h("label", { className: "attnw-control" }, [h("span", { text: "Opacity " }), opacity, opacityText]),
    ]),
    h("div", { className: "attnw-image-body" }, [h("div", { className: "attnw-image-main" }, [caption, stage, legend, specials]), multiples]),
    status,
  );
  el.appendChild(root);

  let data: Data | null = null;
  let picture: Picture | null = null;
  let error = "";
  let hover: Patch | null = null;
  let size = { width: MAIN_SIDE, height: MAIN_SIDE };
  const requester = new MapRequester(
    (content) => model.send(content),
    () => {
      if (root.dataset.state !== "loading" || !picture) return;
      error = NO_REPLY_TEXT;
      schedule();
    },
  );

  const build = (): void => {
    data = readData(model);
    requester.reset();
    error = "";
  };

  let imageGeneration = 0;
  /** The image is being decoded (off the main thread): composing waits for it. */
  let decoding = false;
  const loadImage = (): void => {
    const generation = ++imageGeneration;
    const bytes = model.get("image");
    const [height = 0, width = 0] = model.get("image_size") ?? [];
    size = fitSize(height, width, MAIN_SIDE);
    picture = null;
    decoding = false;
    if (!bytes) return;
    decoding = true;
    decodeImage(bytes)
      .then((decoded) => {
        if (generation !== imageGeneration) return;
        picture = decoded;
        decoding = false;
        schedule();
      })
      .catch((err: unknown) => {
        if (generation !== imageGeneration) return;
        decoding = false;
        error = `cannot decode the image: ${err instanceof Error ? err.message : String(err)}`;
        schedule();
      });
  };

  const scoreMap = (d: Data, method: string): ScoreMap | null => scoreMapOf(doc, d, method);

  const shownNow = (d: Data): Shown => {
    const selected = asPatch(model.get("selected_patch"), d.rows, d.cols);
    const method = String(model.get("selected_method") ?? "");
    const label = selected ? (d.labels[selected[0] * d.cols + selected[1]] ?? "") : "";
    const queryName = selected ? patchName(selected, label) : String(model.get("query_token") ?? "the query");
    return { method, layer: model.get("layer") ?? 0, head: model.get("head") ?? -1, selected, queryName, target: String(model.get("target") ?? "") };
  };

  const current = (d: Data, shown: Shown): Current => {
    if (!isQueryMode(shown.method)) {
      const made = scoreMap(d, shown.method);
      return made ? { values: scoresOf(d, shown.method), ...made } : { values: null, range: null, canvas: null };
    }
    const map: MapName = shown.method === QUERY_ATTENTION ? "attention" : "rollout";
    const row = queryRow(shown.selected ?? [], d.cols);
    const values = d.store.row(map, shown.layer, shown.head, row);
    if (!values) {
      if (requester.ask(map, shown.layer)) error = ""; // an old error is not this layer's
      return { values: null, range: null, canvas: null };
    }
    const focus = shown.selected ? row - 1 : -1;
    const r = mapRange(values, false, focus);
    return { values, range: r, canvas: mapCanvas(doc, values, d.rows, d.cols, r.scale) };
  };

  let now: { shown: Shown; map: Current } | null = null;

  const draw = (): void => {
    const d = data;
    if (!d) return;
    const shown = shownNow(d);
    const map = current(d, shown);
    now = { shown, map };
    const alpha = Math.min(1, Math.max(0, Number(model.get("opacity") ?? 0.5)));
    setOptions(methodPick.el, [...d.methods, QUERY_ATTENTION, QUERY_ROLLOUT].map((m) => [m, methodLabel(m)]), shown.method);
    setOptions(layerPick.el, Array.from({ length: d.layers }, (_, l) => [String(l), String(l)]), String(shown.layer));
    setOptions(headPick.el, [["-1", "mean"], ...Array.from({ length: d.heads }, (_, k): [string, string] => [String(k), String(k)])], String(shown.head));
    layerPick.el.disabled = !isQueryMode(shown.method);
    headPick.el.disabled = shown.method !== QUERY_ATTENTION;
    opacity.value = String(alpha);
    opacityText.textContent = formatPercent(alpha);

    // While the image decodes, the maps are coloured (above and in
    // drawMultiples) but not composed: composing twice, without and then
    // with the image, was a tenth of the first render.
    if (!decoding) drawComposite(canvas, picture, map.canvas, alpha, size.width, size.height);
    drawOutlines(overlay, size.width, size.height, d.rows, d.cols, shown.selected, hover);
    stage.style.width = `${size.width}px`;
    stage.style.height = `${size.height}px`;
    caption.textContent = captionText(shown);
    canvas.setAttribute("aria-label", caption.textContent);
    const summary = d.summaries[d.methods.indexOf(shown.method)] ?? "";
    caption.title = summary;
    if (map.range) {
      bar.style.background = gradient(map.range.scale.stops);
      range.textContent = rangeText(map.range.scale);
      note.textContent = map.range.excluded >= 0 ? "(the selected patch, outlined, is left out of the range)" : "";
    } else {
      range.textContent = "";
      note.textContent = error ? "" : `loading layer ${shown.layer}…`;
    }
    const special = (model.get("special_tokens") ?? []).map(String);
    const ignored = (model.get("ignored_keys") ?? []).map(String);
    specials.textContent = [
      special.length ? `Not patches, not drawn: ${special.join(", ")}.` : "",
      // The maps are the methods' rows: with sinks left out, renormalised without them.
      ignored.length ? `Attention with keys ${ignored.join(", ")} left out, rows renormalised (ignore_keys).` : "",
    ].filter(Boolean).join(" ");
    drawMultiples(d, shown, alpha);

    const state = !map.values && error ? "error" : picture && map.values ? "ready" : "loading";
    Object.assign(root.dataset, {
      state,
      method: shown.method,
      layer: String(shown.layer),
      head: String(shown.head),
      selected: shown.selected ? shown.selected.join(",") : "",
      opacity: String(alpha),
    });
    const selectedLabel = shown.selected ? (d.labels[shown.selected[0] * d.cols + shown.selected[1]] ?? "") : "";
    const chosen = shown.selected;
    const scoreOf = (i: number): number => (chosen ? (d.scores[(i * d.rows + chosen[0]) * d.cols + chosen[1]] as number) : Number.NaN);
    const selection = selectionText(shown.selected, selectedLabel, d.methods, scoreOf);
    status.textContent = state === "error" ? `attnwidget: ${error}` : selection;
  };

  let thumbs: HTMLElement[] = [];
  const drawMultiples = (d: Data, shown: Shown, alpha: number): void => {
    thumbs = thumbElements(multiples, thumbs, d.methods);
    const small = fitSize(size.height, size.width, THUMB_SIDE);
    thumbs.forEach((thumb, i) => {
      const method = d.methods[i]!;
      thumb.classList.toggle("attnw-active", method === shown.method);
      const map = smallMapOf(doc, d, method, THUMB_SIDE);
      if (!decoding) drawComposite(thumb.querySelector("canvas")!, picture, map, alpha, small.width, small.height);
    });
  };

  const fail = (err: unknown): void => {
    error = err instanceof Error ? err.message : String(err);
    root.dataset.state = "error";
    status.textContent = `attnwidget: cannot draw this view: ${error}`;
    console.error("attnwidget image view:", err);
  };
  const schedule = microtaskScheduler(draw, fail);
  const rebuild = microtaskScheduler(() => {
    build();
    draw();
  }, fail);

  /** The patch under a pointer event on the stage, or null. */
  const patchOf = (event: MouseEvent): Patch | null => {
    if (!data) return null;
    const box = canvas.getBoundingClientRect();
    return patchAt(event.clientX - box.left, event.clientY - box.top, box.width, box.height, data.rows, data.cols);
  };

  const showTip = (event: MouseEvent, patch: Patch): void => {
    if (!data || !now) return;
    const k = patch[0] * data.cols + patch[1];
    const value = now.map.values ? (now.map.values[k] as number) : null;
    const notes: string[] = [];
    if (now.map.range && now.map.range.excluded === k) notes.push("not in the colour range");
    if (value !== null && now.map.range?.beyond(value)) notes.push("beyond the colour range, drawn at its end");
    tip.textContent = patchText(now.shown, patch, data.labels[k] ?? "", value, notes);
    tip.hidden = false;
    const box = stage.getBoundingClientRect();
    const x = event.clientX - box.left;
    const y = event.clientY - box.top;
    tip.style.left = `${Math.min(x + 14, Math.max(0, box.width - 180))}px`;
    tip.style.top = `${y + 16}px`;
    status.textContent = tip.textContent;
  };

  const onMove = (event: MouseEvent): void => {
    const patch = patchOf(event);
    const changed = patch?.[0] !== hover?.[0] || patch?.[1] !== hover?.[1];
    hover = patch;
    if (patch) showTip(event, patch);
    else tip.hidden = true;
    if (changed && data) drawOutlines(overlay, size.width, size.height, data.rows, data.cols, now?.shown.selected ?? null, hover);
  };
  const onLeave = (): void => {
    hover = null;
    tip.hidden = true;
    schedule();
  };
  const onClick = (event: MouseEvent): void => {
    const patch = patchOf(event);
    if (!patch || !data) return;
    const selected = asPatch(model.get("selected_patch"), data.rows, data.cols);
    const same = selected && selected[0] === patch[0] && selected[1] === patch[1];
    save({ selected_patch: same ? -1 : patchIndex(patch, data.cols) });
  };
  const onThumb = (event: MouseEvent): void => {
    const thumb = (event.target as Element | null)?.closest?.(".attnw-image-thumb") as HTMLElement | null;
    if (thumb?.dataset.method) save({ selected_method: thumb.dataset.method });
  };
  const onKey = (event: KeyboardEvent): void => {
    if (!data || (event.target as Element | null)?.closest?.("select, input")) return;
    const selected = asPatch(model.get("selected_patch"), data.rows, data.cols);
    const next = patchAfterKey(event.key, selected, data.rows, data.cols);
    if (next === null) return;
    event.preventDefault();
    save({ selected_patch: patchIndex(next, data.cols) });
  };
  const onOpacity = (): void => save({ opacity: Number(opacity.value) });

  const onMessage = (content: unknown, buffers?: readonly Binary[]): void => {
    const msg = content as ChunkReply | MapError | null | undefined;
    if (!data || !msg) return;
    requester.replied();
    try {
      if (msg.type === "chunk") {
        const buffer = buffers?.[0];
        if (!buffer) throw new RangeError("chunk reply without its data buffer");
        data.store.ingest(msg, buffer);
        error = "";
      } else if (msg.type === "error") {
        error = String(msg.message); // asked again only after the user moves on (onNavigate)
      } else return;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    schedule();
  };

  const onImage = (): void => {
    loadImage();
    schedule();
  };
  // After an error, another map or layer may be asked for again (a retry too).
  const onNavigate = (): void => {
    if (error) requester.reset();
  };
  const listeners = new Listeners()
    .add(() => root.remove())
    .add(() => {
      imageGeneration += 1;
      if (picture && "close" in picture.source) (picture.source as ImageBitmap).close();
    })
    .on(stage, "mousemove", onMove)
    .on(stage, "mouseleave", onLeave)
    .on(stage, "click", onClick)
    .on(multiples, "click", onThumb)
    .on(root, "keydown", onKey)
    .on(opacity, "input", onOpacity)
    .model(model, "msg:custom", onMessage)
    .model(model, "change:image change:image_size", onImage)
    .traits(model, DATA_TRAITS, rebuild)
    .traits(model, VIEW_TRAITS, schedule)
    .model(model, NAVIGATION, onNavigate)
    .add(() => requester.dispose());
  try {
    loadImage();
    build();
    draw();
  } catch (err) {
    fail(err);
  }

  return listeners.dispose;
}
