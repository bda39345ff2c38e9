/**
 * ImageView's pure maths (no DOM, tested in test/image_view.test.ts): hit
 * testing a patch under the pointer, the bilinear upsampling of a patch grid
 * (torch's `interpolate(mode="bilinear", align_corners=False)`, as
 * Explanation.heatmap), its colours, the colour range of a map and moving the
 * selection with the keyboard.
 */
import { MISSING, scaleFor, type RGB, type Scale } from "../core/colors";

/** A patch as [row, col]. */
export type Patch = readonly [number, number];

/**
 * The patch under (x, y), in the coordinates of the image drawn at `width` ×
 * `height` (CSS px, origin top left); null outside it. Edges belong to the
 * patch right of / below them, the image's far edges to the last patch.
 */
export function patchAt(x: number, y: number, width: number, height: number, rows: number, cols: number): Patch | null {
  if (!(width > 0 && height > 0 && rows > 0 && cols > 0)) return null;
  if (!(x >= 0 && y >= 0 && x <= width && y <= height)) return null;
  const col = Math.min(cols - 1, Math.floor((x / width) * cols));
  const row = Math.min(rows - 1, Math.floor((y / height) * rows));
  return [row, col];
}

/** The box of a patch on an image drawn at `width` × `height`. */
export function patchBox(
  patch: Patch,
  width: number,
  height: number,
  rows: number,
  cols: number,
): { x: number; y: number; w: number; h: number } {
  const w = width / cols;
  const h = height / rows;
  return { x: patch[1] * w, y: patch[0] * h, w, h };
}

/**
 * Bilinear upsampling of a (rows, cols) grid by an integer `factor`, as
 * torch's interpolate with align_corners=False: output pixel centres map to
 * (i + 0.5) / factor - 0.5 in the grid, clamped at the edges.
 */
export function upsampleBilinear(values: ArrayLike<number>, rows: number, cols: number, factor: number): Float32Array {
  if (!(Number.isInteger(factor) && factor >= 1)) throw new RangeError(`upsampleBilinear: factor must be a positive integer, got ${factor}`);
  if (values.length !== rows * cols) throw new RangeError(`upsampleBilinear: ${values.length} values do not fill ${rows}×${cols}`);
  const outRows = rows * factor;
  const outCols = cols * factor;
  const out = new Float32Array(outRows * outCols);
  const taps = (n: number, size: number): { lo: Int32Array; hi: Int32Array; t: Float32Array } => {
    const lo = new Int32Array(size);
    const hi = new Int32Array(size);
    const t = new Float32Array(size);
    for (let i = 0; i < size; i++) {
      const src = Math.max(0, (i + 0.5) / factor - 0.5);
      const i0 = Math.min(n - 1, Math.floor(src));
      lo[i] = i0;
      hi[i] = Math.min(n - 1, i0 + 1);
      t[i] = i0 < n - 1 ? src - i0 : 0;
    }
    return { lo, hi, t };
  };
  const ys = taps(rows, outRows);
  const xs = taps(cols, outCols);
  for (let y = 0; y < outRows; y++) {
    const r0 = (ys.lo[y] as number) * cols;
    const r1 = (ys.hi[y] as number) * cols;
    const ty = ys.t[y] as number;
    for (let x = 0; x < outCols; x++) {
      const c0 = xs.lo[x] as number;
      const c1 = xs.hi[x] as number;
      const tx = xs.t[x] as number;
      const top = (values[r0 + c0] as number) * (1 - tx) + (values[r0 + c1] as number) * tx;
      const bottom = (values[r1 + c0] as number) * (1 - tx) + (values[r1 + c1] as number) * tx;
      out[y * outCols + x] = top * (1 - ty) + bottom * ty;
    }
  }
  return out;
}

/**
 * The upsampling factor that draws a grid smoothly: its longer side about
 * `target` values (never below 1, at most `maxValues` values in all).
 */
export function smoothFactor(rows: number, cols: number, target = 256, maxValues = 1 << 20): number {
  const side = Math.max(rows, cols, 1);
  let factor = Math.max(1, Math.ceil(target / side));
  while (factor > 1 && rows * cols * factor * factor > maxValues) factor -= 1;
  return factor;
}

/**
 * RGBA pixels (opaque) of `values` in `scale`'s colours; non-finite values in the missing grey.
 * Equal, pixel for pixel, to `scale.color` (colors.ts `interpolate`), written
 * out here without a closure and an array per pixel: a first render colours
 * every map of the view (about 70,000 pixels each for a 14×14 grid), and the
 * per-pixel allocations were most of its scripting time.
 */
export function colorize(values: ArrayLike<number>, scale: Scale, out = new Uint8ClampedArray(values.length * 4)): Uint8ClampedArray {
  const stops = scale.stops;
  const last = stops.length - 1;
  for (let i = 0; i < values.length; i++) {
    const t = scale.position(values[i] as number);
    const o = 4 * i;
    out[o + 3] = 255;
    if (!Number.isFinite(t)) {
      out[o] = MISSING[0];
      out[o + 1] = MISSING[1];
      out[o + 2] = MISSING[2];
      continue;
    }
    const x = Math.min(1, Math.max(0, t)) * last;
    const k = Math.min(last - 1, Math.floor(x));
    const f = x - k;
    const a = stops[k] as RGB;
    const b = stops[k + 1] as RGB;
    out[o] = Math.round(a[0] + (b[0] - a[0]) * f);
    out[o + 1] = Math.round(a[1] + (b[1] - a[1]) * f);
    out[o + 2] = Math.round(a[2] + (b[2] - a[2]) * f);
  }
  return out;
}

/** A map's colour range: every patch but `focus` (the query patch, drawn clamped). */
export interface MapRange {
  scale: Scale;
  /** The patch index left out of the range, -1 for none. */
  excluded: number;
  /** True where a value lies outside the range (drawn at its end). */
  beyond(value: number): boolean;
}

/**
 * The colour range of a map: symmetric around 0 when `signed`, else 0..max,
 * over every patch but `focus` (-1: none); over all of them when that leaves
 * nothing above 0.
 */
export function mapRange(values: ArrayLike<number>, signed: boolean, focus = -1): MapRange {
  let excluded = focus >= 0 && focus < values.length ? focus : -1;
  let scale = scaleFor(excluded < 0 ? values : Array.from(values).filter((_, i) => i !== excluded), signed);
  if (excluded >= 0 && !(scale.max > 0)) {
    scale = scaleFor(values, signed);
    excluded = -1;
  }
  const max = scale.max;
  return {
    scale,
    excluded,
    // A float32 value equal to the max must not read as beyond it.
    beyond: (value: number) => Number.isFinite(value) && (Math.abs(value) > max * (1 + 1e-6) || (!signed && value < 0)),
  };
}

/** The query row of the maps: 0 (the explanation's query) with no selection, else 1 + the patch's index. */
export function queryRow(selected: readonly number[], cols: number): number {
  return selected.length === 2 ? 1 + (selected[0] as number) * cols + (selected[1] as number) : 0;
}

/** The `selected_patch` trait (a row-major patch index, -1 for none) as a patch inside the grid, or null. */
export function asPatch(value: unknown, rows: number, cols: number): Patch | null {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value >= rows * cols) return null;
  return [Math.floor(value / cols), value % cols];
}

/** A patch (or none: null, []) as the `selected_patch` trait: row * cols + col, -1 for none. */
export function patchIndex(patch: readonly number[] | null, cols: number): number {
  return patch && patch.length === 2 ? (patch[0] as number) * cols + (patch[1] as number) : -1;
}

/**
 * The selection after a key press: arrows move it within the grid (from
 * nothing: the top-left patch), Home / End go to the first / last patch, Esc
 * clears it ([]). null: the key changes nothing.
 */
export function patchAfterKey(key: string, selected: Patch | null, rows: number, cols: number): Patch | [] | null {
  if (rows <= 0 || cols <= 0) return null;
  if (key === "Escape") return selected ? [] : null;
  if (key === "Home") return [0, 0];
  if (key === "End") return [rows - 1, cols - 1];
  const moves: Record<string, Patch> = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  const move = moves[key];
  if (!move) return null;
  if (!selected) return [0, 0];
  const next: Patch = [Math.min(rows - 1, Math.max(0, selected[0] + move[0])), Math.min(cols - 1, Math.max(0, selected[1] + move[1]))];
  return next[0] === selected[0] && next[1] === selected[1] ? null : next;
}

/** The CSS size of an image of `height` × `width` pixels shown with its longer side `side`. */
export function fitSize(height: number, width: number, side: number): { width: number; height: number } {
  if (!(height > 0 && width > 0)) return { width: side, height: side };
  const scale = side / Math.max(height, width);
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}
