/**
 * The line panel's weight strips: beside the other column, one block per
 * head and token, opacity by the focused token's weight (bertviz's boxes).
 *
 * Each strip is its own canvas (named by the focus it shows: `query` lies by
 * the keys), apart from the lines: a canvas costs its whole area each time it
 * changes (~10,000 px tall at 512 tokens), so a redraw of the lines (a head
 * toggled) leaves the strips alone, and a strip is redrawn only when what it
 * shows changed.
 */
import { drawStrips, MAX_CANVAS_PX } from "./attention_draw";
import type { Focus } from "./attention_layout";
import { h } from "../core/dom";

/** What a strip needs of the panel's data. */
interface StripData {
  rows: readonly [number, number];
  cols: readonly [number, number];
  heads: readonly { slot: number; color: string }[];
}

export class StripCanvases {
  readonly key = h("canvas", { className: "attnw-strip", attrs: { "aria-hidden": "true", "data-side": "key" } });
  readonly query = h("canvas", { className: "attnw-strip", attrs: { "aria-hidden": "true", "data-side": "query" } });
  /** What each canvas shows (data, focused index, row height); null: blank. */
  private shown: { key: unknown[] | null; query: unknown[] | null } = { key: null, query: null };

  /**
   * Size both canvases (`layout.width` × `height` CSS px) and draw the
   * focused token's strip on its side; `weightOf(head, t)` is the weight
   * between the focus and token t of the other column.
   */
  draw(
    layout: { width: number; perHead: number },
    height: number,
    dpr: number,
    row: number,
    data: StripData | null,
    focus: Focus | null,
    weightOf: (head: number, t: number) => number,
    /** Rows (CSS px) worth drawing, as the lines' band (null: all): 512 tokens × 12 heads are 6,144 blocks. */
    band: readonly [number, number] | null = null,
  ): void {
    for (const side of ["query", "key"] as const) {
      const canvas = this[side];
      const pxWidth = Math.round(layout.width * dpr);
      const pxHeight = Math.min(MAX_CANVAS_PX, Math.round(height * dpr));
      const shows = data && focus?.side === side ? [data, focus.index, row, layout.perHead, band?.[0], band?.[1]] : null;
      const resized = canvas.width !== pxWidth || canvas.height !== pxHeight;
      const before = this.shown[side];
      const same = shows === before || (shows !== null && before !== null && shows.every((v, k) => v === before[k]));
      if (!resized && same) continue;
      this.shown[side] = shows;
      if (resized) {
        canvas.width = pxWidth; // (a resized canvas is blank)
        canvas.height = pxHeight;
        canvas.style.width = `${layout.width}px`;
        canvas.style.height = `${height}px`;
      }
      const ctx = canvas.getContext("2d");
      if (!ctx) continue;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      if (!resized) ctx.clearRect(0, 0, layout.width, height);
      if (!shows || !data || !focus) continue;
      canvas.dataset.perHead = String(layout.perHead); // test hook
      const count = side === "query" ? data.cols[1] - data.cols[0] : data.rows[1] - data.rows[0];
      const from = band ? Math.max(0, Math.floor(band[0] / row)) : 0;
      const to = band ? Math.min(count, Math.ceil(band[1] / row)) : count;
      drawStrips(ctx, data.heads, from, to, 0, layout.perHead, row, weightOf);
    }
  }
}
