/**
 * Canvas drawing shared by HeadView's line panel and ModelView's
 * thumbnails: stroking bucketed lines (width and opacity by weight), the
 * per-head weight strips, and the band of a tall canvas worth drawing.
 */
import { lineWidthFor, stripAlpha, type LineBuckets } from "./attention_layout";

/** Canvases above this many device pixels on a side fail in browsers. */
export const MAX_CANVAS_PX = 32000;

/** Segments per path: short paths rasterise fastest (many overlapping edges in one path do not). */
const SEGMENTS_PER_PATH = 8;

/**
 * Stroke the lines of `b` whose alpha level is at least `cutoff`, faint
 * first so strong lines lie on top; line (i, j) runs from (x0, y0(i)) to
 * (x1, y1(j)), `widthFor(level)` px wide (lineWidthFor: strong links
 * thicker). Returns the number of lines stroked.
 */
export function strokeLines(
  ctx: CanvasRenderingContext2D,
  b: LineBuckets,
  cutoff: number,
  x0: number,
  x1: number,
  y0: (i: number) => number,
  y1: (j: number) => number,
  widthFor: (level: number) => number = lineWidthFor,
): number {
  let drawn = 0;
  for (let level = Math.max(1, cutoff); level < 256; level++) {
    const start = b.starts[level]!;
    const stop = b.starts[level + 1]!;
    if (start === stop) continue;
    ctx.globalAlpha = level / 255;
    ctx.lineWidth = widthFor(level);
    for (let t = start; t < stop; t += SEGMENTS_PER_PATH) {
      ctx.beginPath();
      for (let u = t; u < Math.min(stop, t + SEGMENTS_PER_PATH); u++) {
        const flat = b.items[u]!;
        const i = Math.floor(flat / b.blockCols);
        const j = flat - i * b.blockCols;
        ctx.moveTo(x0, y0(i));
        ctx.lineTo(x1, y1(j));
      }
      ctx.stroke();
    }
    drawn += stop - start;
  }
  ctx.globalAlpha = 1;
  ctx.lineWidth = 1;
  return drawn;
}

/** The vertical band [top, bottom) of `el` (px from its top) that is visible through its scroll ancestors and the window. */
export function visibleBand(el: HTMLElement): [number, number] {
  const box = el.getBoundingClientRect();
  let top = Math.max(0, -box.top);
  let bottom = Math.min(box.height, (globalThis.innerHeight || box.height) - box.top);
  for (let a = el.parentElement; a && bottom > top; a = a.parentElement) {
    if (a.scrollHeight <= a.clientHeight) continue; // cannot clip vertically
    const overflow = getComputedStyle(a).overflowY;
    if (overflow === "visible") continue;
    const r = a.getBoundingClientRect();
    top = Math.max(top, r.top - box.top);
    bottom = Math.min(bottom, r.bottom - box.top);
  }
  return [top, Math.max(top, bottom)];
}


/**
 * One token's weights per head as blocks beside a column (bertviz's
 * coloured boxes): row t's block of head slot s at (x + s × perHead, t ×
 * row), opacity stripAlpha(weight), for rows [from, to). `weightOf(head,
 * t)` reads the weight.
 */
export function drawStrips(
  ctx: CanvasRenderingContext2D,
  heads: readonly { slot: number; color: string }[],
  from: number,
  to: number,
  x: number,
  perHead: number,
  row: number,
  weightOf: (head: number, t: number) => number,
): void {
  // A 1 px gap between heads' blocks (when there is room) keeps neighbours apart.
  const gap = perHead >= 6 ? 1 : 0;
  heads.forEach((head, k) => {
    ctx.fillStyle = head.color;
    for (let t = from; t < to; t++) {
      const alpha = stripAlpha(weightOf(k, t));
      if (!(alpha > 0)) continue;
      ctx.globalAlpha = alpha;
      ctx.fillRect(x + head.slot * perHead, t * row + 1, perHead - gap, row - 2);
    }
  });
  ctx.globalAlpha = 1;
}
