/**
 * LinePanel: two columns of tokens (queries left, keys right) joined by
 * attention lines drawn on ONE canvas, grouped into one path per head and
 * alpha level, so even 512 tokens × 12 heads stay a few hundred strokes and a
 * few thousand DOM nodes (the tokens), never one element per line.
 *
 * Hovering a token shows only its lines (and, beside the other column, one
 * box per head with opacity = weight); clicking a query token pins it.
 * Tokens are text nodes (textContent), never markup.
 */
import {
  bucketLines,
  bucketStrong,
  cutoffFromCounts,
  levelCounts,
  rowHeightFor,
  type Focus,
  type LineBuckets,
  type Range,
} from "./attention_layout";
import { clear, displayToken, h } from "./dom";
import { DRAW_ALL_EVENT } from "./snapshot";

export interface PanelHead {
  /** Head position (colour index) and id (for labels). */
  id: number;
  color: string;
  /** The full matrix's (rows × cols) weights of this head, row-major. */
  weights: Float32Array;
}

export interface PanelData {
  /** Columns of the full matrix (the weights' row stride). */
  stride: number;
  /** The block shown (pair filter) in matrix coordinates. */
  rows: Range;
  cols: Range;
  heads: PanelHead[];
  /** Line opacity = weight × scale. */
  scale: number;
  /** Causal attention: keys after the focused query are masked. */
  causal: boolean;
}

/** Width of the per-head weight boxes beside each column (CSS px). */
const BOX = 16;
/**
 * Most lines one unfocused drawing strokes (the strongest are kept). What a
 * canvas costs is the pixels its lines cover: in a software-rendered browser
 * 8000 lines across a 512-token panel take ~0.3 s, 60 000 take many seconds.
 * A focused token's lines (at most heads × tokens) are always all drawn.
 */
export const LINE_BUDGET = 8000;
/** Segments per path: short paths rasterise fastest (many overlapping edges in one path do not). */
const SEGMENTS_PER_PATH = 8;

/**
 * Stroke the lines of `b` whose alpha level is at least `cutoff`, faint
 * first so strong lines lie on top; line (i, j) runs from (x0, y0(i)) to
 * (x1, y1(j)). Returns the number of lines stroked.
 */
export function strokeLines(
  ctx: CanvasRenderingContext2D,
  b: LineBuckets,
  cutoff: number,
  x0: number,
  x1: number,
  y0: (i: number) => number,
  y1: (j: number) => number,
): number {
  let drawn = 0;
  for (let level = Math.max(1, cutoff); level < 256; level++) {
    const start = b.starts[level]!;
    const stop = b.starts[level + 1]!;
    if (start === stop) continue;
    ctx.globalAlpha = level / 255;
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
  return drawn;
}
/** Canvases above this many device pixels on a side fail in browsers. */
const MAX_CANVAS_PX = 32000;
/** Drawn around the visible part of a tall panel, as a fraction of its height, so short scrolls need no redraw. */
const BAND_MARGIN = 0.5;

/** The vertical band [top, bottom) of `el` (px from its top) that is visible through its scroll ancestors and the window. */
function visibleBand(el: HTMLElement): [number, number] {
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

export class LinePanel {
  readonly el: HTMLElement;
  /** A line of text saying when only the strongest lines are drawn (place it near the panel). */
  readonly note: HTMLElement = h("div", { className: "attnw-note" });
  private readonly left: HTMLElement;
  private readonly right: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private leftCells: HTMLElement[] = [];
  private rightCells: HTMLElement[] = [];
  private tokensKey = "";
  private rowHeight = 20;
  private data: PanelData | null = null;
  private hover: Focus | null = null;
  /** Pinned query, global row index (-1: none). */
  private pinned = -1;
  private frame = 0;
  /**
   * The band of the canvas (CSS px) that holds lines; null: all of it. A tall
   * panel (hundreds of tokens) draws its lines only near what is visible:
   * what a canvas costs is the length of line it rasterises (at 512 tokens
   * ~0.2 s per redraw in a software-rendered browser for the whole panel, a
   * tenth of that for the visible band). Scrolling redraws it.
   */
  private band: [number, number] | null = null;

  constructor(
    private readonly width: number,
    /** Called with the clicked query's global row index (or -1 to unpin). */
    private readonly onPin: (row: number) => void,
  ) {
    this.left = h("div", { className: "attnw-col attnw-col-left", attrs: { role: "list", "aria-label": "Query tokens" } });
    this.right = h("div", { className: "attnw-col attnw-col-right", attrs: { role: "list", "aria-label": "Key tokens" } });
    this.canvas = h("canvas", { className: "attnw-lines-canvas", attrs: { "aria-hidden": "true" } });
    this.el = h("div", { className: "attnw-lines", attrs: { "data-lines": 0, "data-focus": "" } }, [this.left, this.canvas, this.right]);
    this.el.addEventListener("mouseover", this.onOver);
    this.el.addEventListener("mouseleave", this.onLeave);
    this.el.addEventListener("click", this.onClick);
    this.canvas.addEventListener(DRAW_ALL_EVENT, this.onDrawAll);
    // Scroll events do not bubble: listen in the capture phase for any scroller.
    document.addEventListener("scroll", this.onScroll, { capture: true, passive: true });
    globalThis.addEventListener?.("resize", this.onScroll, { passive: true });
  }

  destroy(): void {
    cancelAnimationFrame(this.frame);
    this.el.removeEventListener("mouseover", this.onOver);
    this.el.removeEventListener("mouseleave", this.onLeave);
    this.el.removeEventListener("click", this.onClick);
    this.canvas.removeEventListener(DRAW_ALL_EVENT, this.onDrawAll);
    document.removeEventListener("scroll", this.onScroll, { capture: true });
    globalThis.removeEventListener?.("resize", this.onScroll);
    this.el.remove();
    this.note.remove();
  }

  /**
   * The token columns: `left` are the queries rows[0].., `right` the keys
   * cols[0]... Rebuilt only when they change (not on layer or head changes).
   */
  setTokens(left: readonly string[], right: readonly string[], rows: Range, cols: Range): void {
    const key = JSON.stringify([left, right, rows, cols]);
    if (key === this.tokensKey) return;
    this.tokensKey = key;
    this.hover = null;
    this.rowHeight = rowHeightFor(Math.max(left.length, right.length));
    this.el.style.setProperty("--attnw-row", `${this.rowHeight}px`);
    this.leftCells = this.fill(this.left, left, rows[0], "query");
    this.rightCells = this.fill(this.right, right, cols[0], "key");
  }

  private fill(column: HTMLElement, tokens: readonly string[], offset: number, side: "query" | "key"): HTMLElement[] {
    clear(column);
    const cells = tokens.map((token, i) =>
      h("div", {
        className: "attnw-token",
        text: displayToken(token),
        attrs: {
          role: "listitem",
          "data-side": side,
          "data-index": offset + i,
          "data-local": i,
          title: `#${offset + i} ${JSON.stringify(token)}`,
        },
      }),
    );
    column.append(...cells);
    return cells;
  }

  setData(data: PanelData | null): void {
    this.data = data;
    this.schedule();
  }

  setPinned(row: number): void {
    this.pinned = row;
    this.schedule();
  }

  /** Redraw on the next frame (coalesces bursts of hover events). */
  schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  /** The focus in block coordinates: the hovered token, else the pinned query. */
  private focus(): Focus | null {
    if (this.hover) return this.hover;
    const rows = this.data?.rows;
    if (rows && this.pinned >= rows[0] && this.pinned < rows[1]) return { side: "query", index: this.pinned - rows[0] };
    return null;
  }

  /** Draw now: near the visible band (`all`: the whole canvas, for exports). */
  draw(all = false): void {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    const data = this.data;
    const n = Math.max(this.leftCells.length, this.rightCells.length);
    const height = Math.max(1, n * this.rowHeight);
    const dpr = Math.max(1, Math.min(globalThis.devicePixelRatio || 1, MAX_CANVAS_PX / height));
    const pxWidth = Math.round(this.width * dpr);
    const pxHeight = Math.min(MAX_CANVAS_PX, Math.round(height * dpr));
    if (this.canvas.width !== pxWidth || this.canvas.height !== pxHeight) {
      this.canvas.width = pxWidth;
      this.canvas.height = pxHeight;
      this.canvas.style.width = `${this.width}px`;
      this.canvas.style.height = `${height}px`;
    }
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, height);
    this.band = all ? null : this.bandToDraw(height);
    if (this.band) {
      // Lines outside the band are still stroked (cheap to record) but clipped
      // before they are rasterised, which is what costs.
      ctx.save();
      ctx.beginPath();
      ctx.rect(0, this.band[0], this.width, this.band[1] - this.band[0]);
      ctx.clip();
    }
    try {
      this.drawContent(ctx, n);
    } finally {
      if (this.band) ctx.restore();
    }
  }

  /** The band to draw for a canvas `height` px tall, or null when that is (nearly) all of it. */
  private bandToDraw(height: number): [number, number] | null {
    if (!this.canvas.isConnected) return null;
    const [top, bottom] = visibleBand(this.canvas);
    const pad = Math.max(bottom - top, 200) * BAND_MARGIN;
    const band: [number, number] = [Math.max(0, Math.floor(top - pad)), Math.min(height, Math.ceil(bottom + pad))];
    return band[1] - band[0] >= height * 0.9 ? null : band;
  }

  private drawContent(ctx: CanvasRenderingContext2D, n: number): void {
    const data = this.data;
    const focus = this.focus();
    this.markTokens(focus);
    if (!data || data.heads.length === 0) {
      this.el.dataset.lines = "0";
      this.el.dataset.hidden = "0";
      this.note.textContent = "";
      return;
    }
    const row = this.rowHeight;
    const y = (k: number): number => (k + 0.5) * row;
    // Hairlines always: in a software-rasterised browser 2 px lines cost ~4x
    // more (bench/render.py: toggling a head at n=32 took ~60 ms with 2 px
    // lines, ~17 ms with hairlines).
    ctx.lineWidth = 1;
    let buckets: LineBuckets[];
    let cutoff = 1;
    let total = 0;
    if (focus) {
      // One token's lines (at most heads × tokens): all of them are drawn.
      buckets = data.heads.map((head) => bucketLines(head.weights, data.stride, data.rows, data.cols, data.scale, focus));
      for (const b of buckets) total += b.count;
    } else {
      // Count first, then store only the lines within the budget.
      const counts = data.heads.map((head) => levelCounts(head.weights, data.stride, data.rows, data.cols, data.scale));
      const sum = new Int32Array(256);
      for (const c of counts) for (let k = 1; k < 256; k++) sum[k]! += c[k]!;
      for (let k = 1; k < 256; k++) total += sum[k]!;
      cutoff = cutoffFromCounts(sum, LINE_BUDGET);
      buckets = data.heads.map((head, k) =>
        bucketStrong(head.weights, data.stride, data.rows, data.cols, data.scale, cutoff, counts[k]!),
      );
    }
    let drawn = 0;
    data.heads.forEach((head, k) => {
      ctx.strokeStyle = head.color;
      drawn += strokeLines(ctx, buckets[k]!, cutoff, BOX, this.width - BOX, y, y);
    });
    if (focus) this.drawBoxes(ctx, data, focus);
    ctx.globalAlpha = 1;
    this.el.dataset.lines = String(drawn);
    this.el.dataset.hidden = String(total - drawn);
    this.note.textContent =
      total > drawn
        ? `Showing the ${drawn} strongest of ${total} visible lines (opacity ≥ ${cutoff}/255); hover a token to see all of its lines.`
        : "";
  }

  /** Beside the other column: one box per head, opacity = the focused token's weight. */
  private drawBoxes(ctx: CanvasRenderingContext2D, data: PanelData, focus: Focus): void {
    const row = this.rowHeight;
    const count = focus.side === "query" ? data.cols[1] - data.cols[0] : data.rows[1] - data.rows[0];
    const x = focus.side === "query" ? this.width - BOX : 0;
    const w = BOX / data.heads.length;
    data.heads.forEach((head, k) => {
      ctx.fillStyle = head.color;
      for (let t = 0; t < count; t++) {
        const [i, j] = focus.side === "query" ? [focus.index, t] : [t, focus.index];
        const weight = head.weights[(data.rows[0] + i) * data.stride + data.cols[0] + j] as number;
        if (!(weight > 0)) continue;
        ctx.globalAlpha = Math.min(1, weight);
        ctx.fillRect(x + k * w, t * row + 1, w, row - 2);
      }
    });
  }

  /** Classes: the focused and pinned tokens, and keys a causal query cannot see. */
  private markTokens(focus: Focus | null): void {
    const data = this.data;
    const rows = data?.rows ?? [0, 0];
    const cols = data?.cols ?? [0, 0];
    this.el.dataset.focus = focus ? `${focus.side}:${(focus.side === "query" ? rows[0] : cols[0]) + focus.index}` : "";
    const causal = Boolean(data?.causal);
    this.leftCells.forEach((cell, i) => {
      const global = rows[0] + i;
      cell.classList.toggle("attnw-focus", focus?.side === "query" && focus.index === i);
      cell.classList.toggle("attnw-pinned", global === this.pinned);
      cell.classList.toggle("attnw-masked", causal && focus?.side === "key" && global < cols[0] + focus.index);
    });
    this.rightCells.forEach((cell, j) => {
      const global = cols[0] + j;
      cell.classList.toggle("attnw-focus", focus?.side === "key" && focus.index === j);
      cell.classList.toggle("attnw-masked", causal && focus?.side === "query" && global > rows[0] + focus.index);
    });
  }

  private tokenOf(event: Event): HTMLElement | null {
    const cell = (event.target as Element | null)?.closest?.(".attnw-token") as HTMLElement | null;
    return cell && this.el.contains(cell) ? cell : null;
  }

  private readonly onOver = (event: MouseEvent): void => {
    const cell = this.tokenOf(event);
    const next: Focus | null = cell ? { side: cell.dataset.side === "key" ? "key" : "query", index: Number(cell.dataset.local) } : null;
    if (next?.side === this.hover?.side && next?.index === this.hover?.index) return;
    this.hover = next;
    this.schedule();
  };

  /** On any scroll or resize: redraw when the visible part left the drawn band. */
  private readonly onScroll = (): void => {
    const band = this.band;
    if (!band || this.frame || !this.canvas.isConnected) return;
    const [top, bottom] = visibleBand(this.canvas);
    if (top < band[0] || bottom > band[1]) this.schedule();
  };

  private readonly onDrawAll = (): void => {
    this.draw(true);
    this.schedule(); // back to the band after the export has copied the canvas
  };

  private readonly onLeave = (): void => {
    if (!this.hover) return;
    this.hover = null;
    this.schedule();
  };

  private readonly onClick = (event: MouseEvent): void => {
    const cell = this.tokenOf(event);
    if (!cell || cell.dataset.side !== "query") return;
    const row = Number(cell.dataset.index);
    if (Number.isInteger(row)) this.onPin(row === this.pinned ? -1 : row);
  };
}
