/**
 * AttentionMatrixView's pictures: the colour of a weight, a tile's pixels
 * (pure, tested in node), and the canvas drawing of the plot, the axes, the
 * minimap and the legend (DOM). Canvas text is never markup, so tokens are
 * drawn as the text they are.
 */
import { VIRIDIS, interpolate, type RGB } from "../core/colors";
import { displayToken } from "../core/dom";
import { formatNumber } from "../core/format";
import { blockOf, screenRect, tileCells, visibleTiles, type Tile, type TileCache, type Viewport } from "./matrix_state";

/** 256 viridis colours, packed RGBA (little-endian: 0xAABBGGRR) for a Uint32Array of pixels. */
export const LUT: Uint32Array = (() => {
  const out = new Uint32Array(256);
  for (let k = 0; k < 256; k++) {
    const [r, g, b] = interpolate(VIRIDIS, k / 255) as RGB;
    out[k] = (255 << 24) | (b << 16) | (g << 8) | r;
  }
  return out;
})();

/**
 * The colour scale: where a value sits in [0, 1]. Python fits `lo` and `hi`
 * to the drawn matrix (the color_map trait; attnwidget/views/matrix/_colors.py).
 */
export interface ColorScale {
  lo: number;
  hi: number;
  log: boolean;
}

/**
 * The position of `value` on the scale, clamped to [0, 1] (NaN: 0). Linear:
 * (v − lo) / (hi − lo); log: log10(v / lo) / log10(hi / lo), 0 at or under
 * `lo` (a masked 0 included). Python's color_position is the same mapping
 * (golden fixture: test/fixtures/matrix.json "colors").
 */
export function colorPosition(scale: ColorScale, value: number): number {
  if (Number.isNaN(value)) return 0;
  let t: number;
  if (scale.log) {
    t = value > scale.lo && scale.hi > scale.lo ? Math.log10(value / scale.lo) / Math.log10(scale.hi / scale.lo) : 0;
  } else {
    t = scale.hi > scale.lo ? (value - scale.lo) / (scale.hi - scale.lo) : 0;
  }
  return Math.min(1, Math.max(0, t));
}

/** The lookup-table index of `value`. */
export function colorIndex(scale: ColorScale, value: number): number {
  return Math.round(colorPosition(scale, value) * 255);
}

/** RGBA pixels (rows × cols, row-major) of a tile's values. */
export function tilePixels(values: Float32Array, scale: ColorScale): Uint32Array {
  const out = new Uint32Array(values.length);
  if (scale.log) {
    for (let k = 0; k < values.length; k++) out[k] = LUT[colorIndex(scale, values[k] as number)] as number;
    return out;
  }
  // Linear: the hot path of every tile, inlined. Divided as colorPosition
  // divides (not times a precomputed 255 / span), so a weight half-way between
  // two colours rounds the same way here as in colorIndex and in Python.
  const span = scale.hi > scale.lo ? scale.hi - scale.lo : Infinity;
  for (let k = 0; k < values.length; k++) {
    const v = values[k] as number;
    const t = ((v - scale.lo) / span) * 255;
    out[k] = LUT[t >= 255 ? 255 : t > 0 ? Math.round(t) : 0] as number;
  }
  return out;
}

export const scaleKey = (scale: ColorScale): string => `${scale.lo}/${scale.hi}/${scale.log}`;

/** A tile's picture: a canvas of rows × cols pixels, coloured once per scale. */
export function tileImage(tile: Tile<HTMLCanvasElement>, scale: ColorScale): HTMLCanvasElement {
  const key = scaleKey(scale);
  if (tile.image && tile.colorKey === key) return tile.image;
  const canvas = tile.image ?? document.createElement("canvas");
  canvas.width = tile.cols;
  canvas.height = tile.rows;
  const context = canvas.getContext("2d");
  if (!context) throw new Error("attnwidget: this browser has no 2D canvas");
  const pixels = tilePixels(tile.values, scale);
  const image = new ImageData(new Uint8ClampedArray(pixels.buffer as ArrayBuffer), tile.cols, tile.rows);
  context.putImageData(image, 0, 0);
  tile.image = canvas;
  tile.colorKey = key;
  return canvas;
}

/** What one frame draws from. */
export interface Frame {
  vp: Viewport;
  rows: number;
  cols: number;
  tokens: readonly string[];
  level: number;
  levels: readonly number[][];
  tile: number;
  cache: TileCache<HTMLCanvasElement>;
  overview: Tile<HTMLCanvasElement> | null;
  scale: ColorScale;
  selectedRow: number;
  hover: { row: number; col: number } | null;
  /** Plot origin in the canvas (the axes' margins), CSS px. */
  left: number;
  top: number;
  colors: { fg: string; muted: string; accent: string; bg: string };
}

function drawTile(ctx: CanvasRenderingContext2D, frame: Frame, tile: Tile<HTMLCanvasElement>): void {
  const cells = tileCells(tile.level, tile.i, tile.j, frame.tile, tile.rows, tile.cols);
  const [x, y, w, h] = screenRect(frame.vp, cells.row, cells.col, cells.rows, cells.cols);
  if (x > frame.vp.width || y > frame.vp.height || x + w < 0 || y + h < 0) return;
  ctx.drawImage(tileImage(tile, frame.scale), frame.left + x, frame.top + y, w, h);
}

/** Draw one frame: axes, the tiles (coarse under fine), the pinned row and the hovered cell. */
export function drawFrame(ctx: CanvasRenderingContext2D, frame: Frame): void {
  const { vp, left, top, rows, cols } = frame;
  ctx.save();
  ctx.clearRect(0, 0, left + vp.width + 2, top + vp.height + 2);
  ctx.beginPath();
  const [mx, my, mw, mh] = screenRect(vp, 0, 0, rows, cols);
  ctx.rect(left + Math.max(0, mx), top + Math.max(0, my), Math.min(vp.width, mw), Math.min(vp.height, mh));
  ctx.clip();
  ctx.imageSmoothingEnabled = false;
  if (frame.overview) drawTile(ctx, frame, frame.overview);
  const last = frame.levels.length - 1;
  for (let k = last - 1; k >= frame.level; k--) {
    for (const [i, j] of visibleTiles(vp, k, frame.levels[k] as number[], frame.tile, rows, cols)) {
      const tile = frame.cache.get(k, i, j);
      if (tile) drawTile(ctx, frame, tile);
    }
  }
  // The pinned query row, and the hovered cell's row and column.
  if (frame.selectedRow >= 0) {
    const [, y, , h] = screenRect(vp, frame.selectedRow, 0, 1, cols);
    ctx.strokeStyle = frame.colors.accent;
    ctx.lineWidth = 2;
    ctx.strokeRect(left + mx, top + y - 1, mw, Math.max(h, 1) + 2);
  }
  if (frame.hover) {
    const b = blockOf(frame.level, Math.floor(frame.hover.row / 2 ** frame.level), Math.floor(frame.hover.col / 2 ** frame.level), rows, cols);
    const [x, y, w, h] = screenRect(vp, b.r0, b.c0, b.r1 - b.r0 + 1, b.c1 - b.c0 + 1);
    ctx.strokeStyle = frame.colors.fg;
    ctx.lineWidth = 1;
    ctx.strokeRect(left + x - 0.5, top + y - 0.5, Math.max(w, 1) + 1, Math.max(h, 1) + 1);
  }
  ctx.restore();
  drawAxes(ctx, frame);
}

/** Smallest cell (px) at which every token gets a label. */
export const LABEL_SCALE = 11;

/** Row labels left of the plot and column labels above it: tokens when zoomed in, else indices. */
function drawAxes(ctx: CanvasRenderingContext2D, frame: Frame): void {
  const { vp, left, top } = frame;
  ctx.save();
  ctx.clearRect(0, 0, left, top + vp.height);
  ctx.clearRect(0, 0, left + vp.width, top);
  ctx.fillStyle = frame.colors.muted;
  ctx.font = "11px system-ui, sans-serif";
  const label = (k: number): string => (vp.scale >= LABEL_SCALE ? clip(displayToken(frame.tokens[k] ?? ""), 12) : String(k));
  const step = vp.scale >= LABEL_SCALE ? 1 : niceStep(40 / vp.scale);
  const first = (a: number): number => Math.ceil(a / step) * step;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (let r = first(Math.floor(vp.y)); r < Math.min(frame.rows, vp.y + vp.height / vp.scale); r += step) {
    const y = top + (r + 0.5 - vp.y) * vp.scale;
    if (y < top || y > top + vp.height) continue;
    ctx.fillStyle = r === frame.selectedRow ? frame.colors.accent : frame.colors.muted;
    ctx.fillText(label(r), left - 4, y);
  }
  ctx.textAlign = "left";
  for (let c = first(Math.floor(vp.x)); c < Math.min(frame.cols, vp.x + vp.width / vp.scale); c += step) {
    const x = left + (c + 0.5 - vp.x) * vp.scale;
    if (x < left || x > left + vp.width) continue;
    ctx.save();
    ctx.translate(x, top - 4);
    ctx.rotate(-Math.PI / 3);
    ctx.fillStyle = frame.colors.muted;
    ctx.fillText(label(c), 0, 0);
    ctx.restore();
  }
  ctx.restore();
}

/** 1, 2, 5, 10, 20, 50 … at least `x`. */
export function niceStep(x: number): number {
  if (!(x > 1)) return 1;
  const power = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * power >= x) return m * power;
  return 10 * power;
}

function clip(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** The minimap: the overview whole and the viewport's rectangle. */
export function drawMinimap(ctx: CanvasRenderingContext2D, size: number, frame: Frame): void {
  ctx.save();
  ctx.clearRect(0, 0, size, size);
  ctx.imageSmoothingEnabled = false;
  const s = size / Math.max(frame.rows, frame.cols);
  if (frame.overview) {
    const o = frame.overview;
    const f = 2 ** (frame.levels.length - 1);
    ctx.drawImage(tileImage(o, frame.scale), 0, 0, o.cols * f * s, o.rows * f * s);
  }
  const { vp } = frame;
  ctx.strokeStyle = frame.colors.accent;
  ctx.lineWidth = 2;
  const w = Math.min(frame.cols, vp.width / vp.scale) * s;
  const h = Math.min(frame.rows, vp.height / vp.scale) * s;
  ctx.strokeRect(vp.x * s + 1, vp.y * s + 1, Math.max(3, w - 2), Math.max(3, h - 2));
  ctx.restore();
}

/** The legend's gradient (the LUT, left to right). */
export function drawLegend(ctx: CanvasRenderingContext2D, width: number, height: number): void {
  for (let x = 0; x < width; x++) {
    const [r, g, b] = interpolate(VIRIDIS, x / Math.max(1, width - 1)) as RGB;
    ctx.fillStyle = `rgb(${r}, ${g}, ${b})`;
    ctx.fillRect(x, 0, 1, height);
  }
}

/**
 * The legend's text: the gradient's ends ("≤" where weights under the floor
 * share its colour, "≥" where clipped ones share the top's), the scale in use
 * (Python's label, e.g. "auto: log scale, 4.72e-5 … 1") and what a
 * zoomed-out cell holds.
 */
export function legendText(
  map: { scale: string; lo: number; hi: number; clipped: boolean; label: string },
  level: number,
  pool: string,
): { lo: string; hi: string; scale: string; note: string } {
  const f = 2 ** level;
  const note = level === 0 ? "one cell per query × key" : `each cell: the ${pool === "mean" ? "mean" : "largest"} weight of ${f} × ${f} tokens`;
  return {
    lo: `${map.scale === "log" ? "≤ " : ""}${formatNumber(map.lo)}`,
    hi: `${map.clipped ? "≥ " : ""}${formatNumber(map.hi)}`,
    scale: map.label,
    note,
  };
}
