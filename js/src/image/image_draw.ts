/**
 * ImageView's drawing: the image decoded from its PNG bytes, a patch map as
 * smooth colours (image_maths.ts upsamples it), both composed on a canvas
 * at the device's pixel ratio, and the patch outlines on an overlay canvas.
 * Everything is a canvas, so the SVG/PNG export (snapshot.ts) copies the
 * pixels; the image comes from a blob of the page's own bytes, so no canvas
 * is ever tainted.
 */
import type { Scale } from "../core/colors";
import { colorize, patchBox, smoothFactor, upsampleBilinear, type Patch } from "./image_maths";
import { asBytes } from "../core/buffers";
import { h } from "../core/dom";
import type { Binary } from "../core/types";

/** A decoded image any canvas can draw. */
export interface Picture {
  source: CanvasImageSource;
  width: number;
  height: number;
}

/**
 * Decode PNG bytes: createImageBitmap where the browser has it, else an <img>
 * on a blob: URL (the saved pages' policy allows blob: and data: images).
 */
export async function decodeImage(data: Binary): Promise<Picture> {
  const bytes = asBytes(data);
  const blob = new Blob([bytes.slice()], { type: "image/png" });
  if (typeof createImageBitmap === "function") {
    const bitmap = await createImageBitmap(blob);
    return { source: bitmap, width: bitmap.width, height: bitmap.height };
  }
  const url = URL.createObjectURL(blob);
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    return { source: img, width: img.naturalWidth, height: img.naturalHeight };
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** A (rows, cols) map as an offscreen canvas of smooth colours, upsampled bilinearly to about `target` values on its longer side. */
export function mapCanvas(doc: Document, values: ArrayLike<number>, rows: number, cols: number, scale: Scale, target = 256): HTMLCanvasElement {
  const factor = smoothFactor(rows, cols, target);
  const smooth = upsampleBilinear(values, rows, cols, factor);
  const canvas = doc.createElement("canvas");
  canvas.width = cols * factor;
  canvas.height = rows * factor;
  const context = canvas.getContext("2d");
  if (context) {
    const pixels = context.createImageData(canvas.width, canvas.height);
    colorize(smooth, scale, pixels.data);
    context.putImageData(pixels, 0, 0);
  }
  return canvas;
}

/** Size a canvas to `width` × `height` CSS px at the device pixel ratio; its context, scaled to CSS px. */
export function sizeCanvas(canvas: HTMLCanvasElement, width: number, height: number): CanvasRenderingContext2D | null {
  const dpr = Math.max(1, Math.min(globalThis.devicePixelRatio || 1, 4));
  const w = Math.round(width * dpr);
  const h = Math.round(height * dpr);
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const context = canvas.getContext("2d");
  if (!context) return null;
  context.setTransform(dpr, 0, 0, dpr, 0, 0);
  context.clearRect(0, 0, width, height);
  return context;
}

/**
 * The image with `map` over it at `opacity`. An image shown at twice its
 * size or more is drawn with sharp pixels (a 32-pixel input stays legible);
 * the map is always smoothed.
 */
export function drawComposite(
  canvas: HTMLCanvasElement,
  picture: Picture | null,
  map: HTMLCanvasElement | null,
  opacity: number,
  width: number,
  height: number,
): void {
  const context = sizeCanvas(canvas, width, height);
  if (!context) return;
  if (picture) {
    const dpr = canvas.width / width;
    context.imageSmoothingEnabled = (width * dpr) / picture.width < 2;
    context.imageSmoothingQuality = "high";
    context.drawImage(picture.source, 0, 0, width, height);
  }
  if (map) {
    context.imageSmoothingEnabled = true;
    context.imageSmoothingQuality = "high";
    context.globalAlpha = Math.min(1, Math.max(0, opacity));
    context.drawImage(map, 0, 0, width, height);
    context.globalAlpha = 1;
  }
}

/**
 * The outlines over the image: the selected patch (a solid white line on a
 * dark one, visible over any colour), the hovered one dashed.
 */
export function drawOutlines(
  canvas: HTMLCanvasElement,
  width: number,
  height: number,
  rows: number,
  cols: number,
  selected: Patch | null,
  hover: Patch | null,
): void {
  const context = sizeCanvas(canvas, width, height);
  if (!context) return;
  const outline = (patch: Patch, dashed: boolean): void => {
    const box = patchBox(patch, width, height, rows, cols);
    context.setLineDash(dashed ? [3, 3] : []);
    context.lineWidth = 3;
    context.strokeStyle = "rgba(0, 0, 0, 0.85)";
    context.strokeRect(box.x + 1.5, box.y + 1.5, Math.max(0, box.w - 3), Math.max(0, box.h - 3));
    context.lineWidth = 1.5;
    context.strokeStyle = "#ffffff";
    context.strokeRect(box.x + 1.5, box.y + 1.5, Math.max(0, box.w - 3), Math.max(0, box.h - 3));
  };
  if (hover && !(selected && hover[0] === selected[0] && hover[1] === selected[1])) outline(hover, true);
  if (selected) outline(selected, false);
}

/** The small multiples' elements (canvas + name) for `methods`, reusing `thumbs` when they match. */
export function thumbElements(container: HTMLElement, thumbs: HTMLElement[], methods: readonly string[]): HTMLElement[] {
  if (thumbs.length === methods.length && thumbs.every((t, i) => t.dataset.method === methods[i])) return thumbs;
  const made = methods.map((method) =>
    h("div", { className: "attnw-image-thumb", attrs: { role: "listitem", "data-method": method, title: `Show ${method}` } }, [
      h("canvas"),
      h("span", { className: "attnw-method", text: method }),
    ]),
  );
  container.replaceChildren(...made);
  return made;
}
