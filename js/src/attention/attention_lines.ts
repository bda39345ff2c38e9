/**
 * LinePanel: two columns of tokens (queries left, keys right) joined by
 * attention lines drawn on ONE canvas, grouped into one path per head and
 * alpha level, so even 512 tokens × 12 heads stay a few hundred strokes and a
 * few thousand DOM nodes (the tokens), never one element per line.
 *
 * Hovering a token shows only its lines and, beside the other column, a
 * strip of blocks per token, one per head, opacity by weight (bertviz's
 * boxes, ~120 px wide); the focus stays while the pointer is on the canvas,
 * so its lines and strips can be hovered. Hovering a line or a block shows
 * its weight (query → key, weight, head) in a tooltip; clicking a query
 * token pins it. Tokens are text nodes (textContent), never markup.
 */
import { MAX_CANVAS_PX, strokeLines, visibleBand } from "./attention_draw";
import {
  bucketLines,
  bucketStrong,
  countsOnCurve,
  cutoffFromCounts,
  indexCounts,
  MIN_WEIGHT,
  rowHeightFor,
  stripLayout,
  type Focus,
  type LevelCurve,
  type LineBuckets,
  type Range,
} from "./attention_layout";
import { StripCanvases } from "./attention_strips";
import { panelHit, weightText, type PanelHit } from "./attention_tooltip";
import { clear, displayToken, h, reveal, tokenName } from "../core/dom";
import { formatNumber } from "../core/format";
import { DRAW_ALL_EVENT } from "../core/snapshot";

export interface PanelHead {
  /** Head id (for labels), its slot in the weight strips (its position among the layer's heads) and colour. */
  id: number;
  slot: number;
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
  /** Head slots of the weight strips (all heads of the layer, shown or not). */
  slots: number;
  /** Alpha level of each weight (lineCurve of the heads shown). */
  curve: LevelCurve;
  /** Causal attention: keys after the focused query are masked. */
  causal: boolean;
}

/**
 * Most lines one unfocused drawing strokes (the strongest are kept). What a
 * canvas costs is the pixels its lines cover: in a software-rendered browser
 * 8000 lines across a 512-token panel take ~0.3 s, 60 000 take many seconds.
 * A focused token's lines (at most heads × tokens) are always all drawn.
 */
export const LINE_BUDGET = 8000;
/** Drawn around the visible part of a tall panel, as a fraction of its height, so short scrolls need no redraw. */
const BAND_MARGIN = 0.5;

export class LinePanel {
  readonly el: HTMLElement;
  /** A line of text saying when only the strongest lines are drawn (place it near the panel). */
  readonly note: HTMLElement = h("div", { className: "attnw-note" });
  private readonly left: HTMLElement;
  private readonly right: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  /** The weight strips, on their own canvases beside the lines (attention_strips.ts). */
  private readonly strips = new StripCanvases();
  /** The hover tooltip (weight of the line or strip block under the pointer). */
  readonly tip: HTMLElement = h("div", { className: "attnw-tip", attrs: { role: "tooltip", hidden: true } });
  private leftTokens: readonly string[] = [];
  private rightTokens: readonly string[] = [];
  /** Width of each strip (CSS px) and of a head's block in it. */
  private strip = stripLayout(1);
  /** What the last draw stroked, for hit tests: per head, the lines at level >= cutoff. */
  private drawn: { buckets: LineBuckets[]; cutoff: number } | null = null;  private leftCells: HTMLElement[] = [];
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
  /** indexCounts per head weights (see indexCountsOf). */
  private readonly counted = new WeakMap<Float32Array, { key: string; counts: Int32Array }>();
  /** The rows (CSS px) the last draw may have painted; null: nothing (a blank canvas). */
  private painted: [number, number] | null = null;

  constructor(
    private readonly width: number,
    /** Called with the clicked query's global row index (or -1 to unpin). */
    private readonly onPin: (row: number) => void,
  ) {
    this.left = h("div", { className: "attnw-col attnw-col-left", attrs: { role: "list", "aria-label": "Query tokens" } });
    this.right = h("div", { className: "attnw-col attnw-col-right", attrs: { role: "list", "aria-label": "Key tokens" } });
    this.canvas = h("canvas", { className: "attnw-lines-canvas", attrs: { "aria-hidden": "true" } });
    this.el = h("div", { className: "attnw-lines", attrs: { "data-lines": 0, "data-focus": "" } }, [
      this.left,
      this.strips.key,
      this.canvas,
      this.strips.query,
      this.right,
      this.tip,
    ]);
    this.el.addEventListener("mouseover", this.onOver);
    this.el.addEventListener("mousemove", this.onCanvasMove);
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
    this.el.removeEventListener("mousemove", this.onCanvasMove);
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
  setTokens(left: readonly string[], right: readonly string[], rows: Range, cols: Range, raw: { left: readonly string[]; right: readonly string[] } = { left: [], right: [] }): void {
    const key = JSON.stringify([left, right, rows, cols, raw]);
    if (key === this.tokensKey) return;
    this.tokensKey = key;
    this.hover = null;
    this.leftTokens = left;
    this.rightTokens = right;
    this.rowHeight = rowHeightFor(Math.max(left.length, right.length));
    this.el.style.setProperty("--attnw-row", `${this.rowHeight}px`);
    this.leftCells = this.fill(this.left, left, rows[0], "query", raw.left);
    this.rightCells = this.fill(this.right, right, cols[0], "key", raw.right);
  }

  private fill(column: HTMLElement, tokens: readonly string[], offset: number, side: "query" | "key", raw: readonly string[]): HTMLElement[] {
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
          title: `#${offset + i} ${tokenName(token, raw[i])}`,
        },
      }),
    );
    column.append(...cells);
    return cells;
  }

  setData(data: PanelData | null): void {
    this.data = data;
    this.tip.hidden = true;
    this.schedule();
  }

  /** Scroll query row `row` (a matrix row) into sight, if it is shown. */
  revealRow(row: number): void {
    if (row >= 0) reveal(this.left.querySelector(`[data-index="${row}"]`));
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
    // The strips keep their width while heads are toggled (all slots are reserved).
    if (this.data) this.strip = stripLayout(this.data.slots);
    const width = this.width;
    const n = Math.max(this.leftCells.length, this.rightCells.length);
    const height = Math.max(1, n * this.rowHeight);
    const dpr = Math.max(1, Math.min(globalThis.devicePixelRatio || 1, MAX_CANVAS_PX / height));
    const pxWidth = Math.round(width * dpr);
    const pxHeight = Math.min(MAX_CANVAS_PX, Math.round(height * dpr));
    if (this.canvas.width !== pxWidth || this.canvas.height !== pxHeight) {
      this.canvas.width = pxWidth; // (a resized canvas is blank)
      this.canvas.height = pxHeight;
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
      this.painted = null;
    }
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    // Clear only what the last draw painted: clearing all of a 512-token
    // canvas (~500 × 10,000 px) on every redraw costs more than the band's lines.
    if (this.painted) ctx.clearRect(0, this.painted[0], width, this.painted[1] - this.painted[0]);
    this.band = all ? null : this.bandToDraw(height);
    this.painted = this.band ?? [0, height];
    if (this.band) {
      // Lines outside the band are still stroked (cheap to record) but clipped
      // before they are rasterised, which is what costs.
      ctx.save();
      ctx.beginPath();
      ctx.rect(0, this.band[0], width, this.band[1] - this.band[0]);
      ctx.clip();
    }
    try {
      this.drawContent(ctx, n);
    } finally {
      if (this.band) ctx.restore();
    }
    this.drawStrips(height, dpr);
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
    this.drawn = null;
    if (!data || data.heads.length === 0) {
      this.el.dataset.lines = "0";
      this.el.dataset.hidden = "0";
      this.note.textContent = "";
      return;
    }
    const row = this.rowHeight;
    const y = (k: number): number => (k + 0.5) * row;
    let buckets: LineBuckets[];
    let cutoff = 1;
    let total = 0;
    if (focus) {
      // One token's lines (at most heads × tokens): all of them are drawn.
      buckets = data.heads.map((head) => bucketLines(head.weights, data.stride, data.rows, data.cols, data.curve, focus));
      for (const b of buckets) total += b.count;
    } else {
      // Count first, then store only the lines within the budget.
      const counts = data.heads.map((head) => countsOnCurve(this.indexCountsOf(head.weights, data), data.curve));
      const sum = new Int32Array(256);
      for (const c of counts) for (let k = 1; k < 256; k++) sum[k]! += c[k]!;
      for (let k = 1; k < 256; k++) total += sum[k]!;
      cutoff = cutoffFromCounts(sum, LINE_BUDGET);
      buckets = data.heads.map((head, k) =>
        bucketStrong(head.weights, data.stride, data.rows, data.cols, data.curve, cutoff, counts[k]!),
      );
    }
    let drawn = 0;
    const [x0, x1] = [0, this.width];
    // Test hooks: where lines start and end (on this canvas), the row height, a head's strip block width.
    Object.assign(this.canvas.dataset, { x0: String(x0), x1: String(x1), row: String(row), perHead: String(this.strip.perHead) });
    data.heads.forEach((head, k) => {
      ctx.strokeStyle = head.color;
      drawn += strokeLines(ctx, buckets[k]!, cutoff, x0, x1, y, y);
    });
    this.drawn = { buckets, cutoff };
    ctx.globalAlpha = 1;
    this.el.dataset.lines = String(drawn);
    this.el.dataset.hidden = String(total - drawn);
    // An empty panel would look broken: say why nothing is drawn.
    this.note.textContent =
      total > drawn
        ? `Showing the ${drawn} strongest of ${total} visible lines (opacity ≥ ${cutoff}/255); hover a token to see all of its lines.`
        : total === 0
          ? focus
            ? `No link of this token reaches a weight of ${formatNumber(MIN_WEIGHT)}; the strips show its weights.`
            : `No link reaches a weight of ${formatNumber(MIN_WEIGHT)} here; hover a token to see its weights.`
          : "";
  }

  /**
   * indexCounts of a head's block, kept per weights array (the store hands
   * out the same array while it caches the head): toggling a head then
   * rescans none of the others' weights.
   */
  private indexCountsOf(weights: Float32Array, data: PanelData): Int32Array {
    const key = `${data.stride}/${data.rows}/${data.cols}`;
    const cached = this.counted.get(weights);
    if (cached?.key === key) return cached.counts;
    const counts = indexCounts(weights, data.stride, data.rows, data.cols);
    this.counted.set(weights, { key, counts });
    return counts;
  }

  /** Beside the other column: the focused token's weight strip; the other strip is blank. */
  private drawStrips(height: number, dpr: number): void {
    const data = this.data;
    const focus = data && data.heads.length > 0 ? this.focus() : null;
    const weightOf = (k: number, t: number): number => this.weightAt(data!, k, focus!, t);
    this.strips.draw(this.strip, height, dpr, this.rowHeight, data, focus, weightOf, this.band);
  }

  /** The weight of head k between the focused token and token t of the other column. */
  private weightAt(data: PanelData, k: number, focus: Focus, t: number): number {
    const [i, j] = focus.side === "query" ? [focus.index, t] : [t, focus.index];
    return data.heads[k]!.weights[(data.rows[0] + i) * data.stride + data.cols[0] + j] as number;
  }

  /** What lies under (x, y), from the left strip's edge: a block of the focused token's strip, else the nearest drawn line. */
  hitTest(x: number, y: number): PanelHit | null {
    if (!this.data || !this.drawn) return null;
    const geometry = { stripWidth: this.strip.width, perHead: this.strip.perHead, width: this.width, row: this.rowHeight };
    return panelHit(this.data, this.drawn, this.focus(), geometry, x, y);
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
    // On the canvas the focus stays, so its lines and strips can be hovered.
    const on = event.target;
    if (on === this.canvas || on === this.strips.key || on === this.strips.query) return;
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

  /** The tooltip: the weight under the pointer on the canvas. */
  private readonly onCanvasMove = (event: MouseEvent): void => {
    // Coordinates from the left strip's edge: strip, lines, strip lie side by side.
    const target = event.target;
    if (target !== this.canvas && target !== this.strips.key && target !== this.strips.query) {
      this.tip.hidden = true;
      return;
    }
    const box = this.strips.key.getBoundingClientRect();
    const x = event.clientX - box.left;
    const y = event.clientY - box.top;
    const hit = this.hitTest(x, y);
    const data = this.data;
    if (!hit || !data) {
      this.tip.hidden = true;
      return;
    }
    const head = data.heads[hit.head]!;
    const query = data.rows[0] + hit.i;
    const key = data.cols[0] + hit.j;
    const weight = head.weights[query * data.stride + key] as number;
    this.tip.textContent = weightText(query, this.leftTokens[hit.i], key, this.rightTokens[hit.j], weight, head.id);
    Object.assign(this.tip.dataset, { kind: hit.kind, query: String(query), key: String(key), head: String(head.id) });
    this.tip.hidden = false;
    // Beside the pointer, flipped to its left in the right half of the canvas (stays in view).
    const left = this.strips.key.offsetLeft + x;
    const flip = x > this.strip.width + this.width / 2;
    this.tip.style.left = `${flip ? left - 12 : left + 12}px`;
    this.tip.style.top = `${this.strips.key.offsetTop + y + 14}px`;
    this.tip.style.transform = flip ? "translateX(-100%)" : "";
  };

  private readonly onLeave = (): void => {
    this.tip.hidden = true;
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
