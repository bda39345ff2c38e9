/**
 * AttentionMatrixView's maths, free of the DOM (tested in node,
 * test/matrix.test.ts): where the viewport is, how it pans and zooms, which
 * pyramid level and tiles it needs (attnwidget/views/matrix/_tiles.py makes
 * them), which cell a pointer is over, and the cache of tiles received.
 *
 * Coordinates: a cell is one (query row, key column) of the full matrix;
 * the viewport's `x` (column) and `y` (row) are the cell coordinates at the
 * plot's top-left corner and `scale` is screen pixels per cell. Level k of
 * the pyramid pools 2**k × 2**k cells into one.
 */

/** What is on screen: cell coordinates of the top-left corner, px per cell, plot size in px. */
export interface Viewport {
  x: number;
  y: number;
  scale: number;
  width: number;
  height: number;
}

/** The most a cell is enlarged to (px per side). */
export const MAX_SCALE = 48;

/** The whole matrix (rows × cols cells) in a plot of width × height px. */
export function fitViewport(rows: number, cols: number, width: number, height: number): Viewport {
  const scale = Math.min(width / Math.max(1, cols), height / Math.max(1, rows));
  return { x: 0, y: 0, scale, width, height };
}

/** Keep the matrix on screen: no panning past its edges, no zooming out past fit or in past MAX_SCALE. */
export function clampViewport(vp: Viewport, rows: number, cols: number): Viewport {
  const fit = fitViewport(rows, cols, vp.width, vp.height).scale;
  const scale = Math.min(Math.max(vp.scale, fit), Math.max(fit, MAX_SCALE));
  const maxX = Math.max(0, cols - vp.width / scale);
  const maxY = Math.max(0, rows - vp.height / scale);
  return { ...vp, scale, x: Math.min(Math.max(vp.x, 0), maxX), y: Math.min(Math.max(vp.y, 0), maxY) };
}

/** Zoom by `factor` about the plot point (px, py): the cell under it stays under it (within the clamps). */
export function zoomAt(vp: Viewport, factor: number, px: number, py: number, rows: number, cols: number): Viewport {
  const target = clampViewport({ ...vp, scale: vp.scale * factor }, rows, cols).scale;
  const cx = vp.x + px / vp.scale;
  const cy = vp.y + py / vp.scale;
  return clampViewport({ ...vp, scale: target, x: cx - px / target, y: cy - py / target }, rows, cols);
}

/** Pan by a drag of (dx, dy) screen px (the content follows the pointer). */
export function panBy(vp: Viewport, dx: number, dy: number, rows: number, cols: number): Viewport {
  return clampViewport({ ...vp, x: vp.x - dx / vp.scale, y: vp.y - dy / vp.scale }, rows, cols);
}

/** Centre the viewport on cell (row, col), keeping the zoom. */
export function centreOn(vp: Viewport, row: number, col: number, rows: number, cols: number): Viewport {
  return clampViewport({ ...vp, x: col - vp.width / vp.scale / 2, y: row - vp.height / vp.scale / 2 }, rows, cols);
}

/**
 * The pyramid level drawn at `scale`: the finest whose cells are at least
 * about one screen pixel (level k cells are 2**k cells wide), so a frame
 * never needs more data than it has pixels.
 */
export function levelFor(scale: number, levels: number): number {
  if (!(scale > 0) || levels <= 0) return 0;
  const k = Math.ceil(Math.log2(1 / scale) - 1e-9);
  return Math.min(levels - 1, Math.max(0, k));
}

/** The [first, last] cells (inclusive) of the full matrix on screen, rows and columns. */
export function visibleCells(vp: Viewport, rows: number, cols: number): { r0: number; r1: number; c0: number; c1: number } {
  return {
    r0: Math.max(0, Math.floor(vp.y)),
    r1: Math.min(rows - 1, Math.ceil(vp.y + vp.height / vp.scale) - 1),
    c0: Math.max(0, Math.floor(vp.x)),
    c1: Math.min(cols - 1, Math.ceil(vp.x + vp.width / vp.scale) - 1),
  };
}

/**
 * The tiles [i, j] of `level` that cover the viewport, nearest the centre
 * first (they are asked for, and arrive, in that order). `size` is the
 * level's [rows, cols] of pooled cells; `tile` cells per tile side.
 */
export function visibleTiles(vp: Viewport, level: number, size: readonly number[], tile: number, rows: number, cols: number): [number, number][] {
  const f = 2 ** level;
  const { r0, r1, c0, c1 } = visibleCells(vp, rows, cols);
  if (r1 < r0 || c1 < c0) return [];
  const [levelRows, levelCols] = size as [number, number];
  const i0 = Math.floor(Math.floor(r0 / f) / tile);
  const i1 = Math.min(Math.ceil(levelRows / tile) - 1, Math.floor(Math.floor(r1 / f) / tile));
  const j0 = Math.floor(Math.floor(c0 / f) / tile);
  const j1 = Math.min(Math.ceil(levelCols / tile) - 1, Math.floor(Math.floor(c1 / f) / tile));
  const out: [number, number][] = [];
  for (let i = i0; i <= i1; i++) for (let j = j0; j <= j1; j++) out.push([i, j]);
  const ci = (i0 + i1) / 2;
  const cj = (j0 + j1) / 2;
  return out.sort((a, b) => Math.hypot(a[0] - ci, a[1] - cj) - Math.hypot(b[0] - ci, b[1] - cj));
}

/** Where tile (i, j) of `level` goes on screen: its first cell and its size in full-matrix cells. */
export function tileCells(level: number, i: number, j: number, tile: number, tileRows: number, tileCols: number): { row: number; col: number; rows: number; cols: number } {
  const f = 2 ** level;
  return { row: i * tile * f, col: j * tile * f, rows: tileRows * f, cols: tileCols * f };
}

/** The screen rectangle of a block of cells (x, y, width, height in plot px). */
export function screenRect(vp: Viewport, row: number, col: number, rows: number, cols: number): [number, number, number, number] {
  return [(col - vp.x) * vp.scale, (row - vp.y) * vp.scale, cols * vp.scale, rows * vp.scale];
}

/** The cell under plot point (px, py), or null outside the matrix. */
export function cellAt(vp: Viewport, px: number, py: number, rows: number, cols: number): { row: number; col: number } | null {
  if (px < 0 || py < 0 || px >= vp.width || py >= vp.height) return null;
  const col = Math.floor(vp.x + px / vp.scale);
  const row = Math.floor(vp.y + py / vp.scale);
  if (row < 0 || col < 0 || row >= rows || col >= cols) return null;
  return { row, col };
}

/** The block of cells that level-`level` cell (a, b) pools, clipped to the matrix. */
export function blockOf(level: number, a: number, b: number, rows: number, cols: number): { r0: number; r1: number; c0: number; c1: number } {
  const f = 2 ** level;
  return { r0: a * f, r1: Math.min(rows, (a + 1) * f) - 1, c0: b * f, c1: Math.min(cols, (b + 1) * f) - 1 };
}

// -- the tiles received ----------------------------------------------------------

/** One received tile: its pooled values (row-major) and, once drawn, its picture. */
export interface Tile<Image = unknown> {
  level: number;
  i: number;
  j: number;
  rows: number;
  cols: number;
  values: Float32Array;
  /** The tile coloured for `colorKey` (made when first drawn). */
  image: Image | null;
  colorKey: string;
}

export const tileKey = (level: number, i: number, j: number): string => `${level}/${i}/${j}`;

/**
 * The tiles of the drawn matrix (one version): received ones, least recently
 * used dropped beyond `limit`, and those asked for and not yet here.
 */
export class TileCache<Image = unknown> {
  private readonly tiles = new Map<string, Tile<Image>>();
  private readonly pending = new Set<string>();
  version = -1;

  constructor(readonly limit = 256) {}

  /** Another matrix: forget everything. */
  reset(version: number): void {
    this.tiles.clear();
    this.pending.clear();
    this.version = version;
  }

  get size(): number {
    return this.tiles.size;
  }

  get inFlight(): number {
    return this.pending.size;
  }

  get(level: number, i: number, j: number): Tile<Image> | undefined {
    const key = tileKey(level, i, j);
    const tile = this.tiles.get(key);
    if (tile) {
      this.tiles.delete(key); // most recently used last
      this.tiles.set(key, tile);
    }
    return tile;
  }

  has(level: number, i: number, j: number): boolean {
    return this.tiles.has(tileKey(level, i, j));
  }

  /** Store a tile (it is no longer pending); the least recently used go beyond the limit. */
  put(tile: Tile<Image>): void {
    const key = tileKey(tile.level, tile.i, tile.j);
    this.pending.delete(key);
    this.tiles.delete(key);
    this.tiles.set(key, tile);
    while (this.tiles.size > this.limit) {
      const oldest = this.tiles.keys().next().value as string;
      this.tiles.delete(oldest);
    }
  }

  /** Of `wanted`, those neither here nor asked for; they are marked asked for. */
  claim(level: number, wanted: readonly [number, number][]): [number, number][] {
    const out: [number, number][] = [];
    for (const [i, j] of wanted) {
      const key = tileKey(level, i, j);
      if (this.tiles.has(key) || this.pending.has(key)) continue;
      this.pending.add(key);
      out.push([i, j]);
    }
    return out;
  }

  /** Forget that these were asked for (the request failed): they may be asked for again. */
  release(level: number, tiles: readonly [number, number][]): void {
    for (const [i, j] of tiles) this.pending.delete(tileKey(level, i, j));
  }

  *all(): IterableIterator<Tile<Image>> {
    yield* this.tiles.values();
  }
}

/**
 * The value drawn at cell (row, col): from the finest tile held at `level`
 * or coarser (else the overview, the last level), with the level it came
 * from; null when nothing covers it.
 */
export function valueAt<Image>(
  cache: TileCache<Image>,
  overview: Tile<Image> | null,
  level: number,
  levels: number,
  tile: number,
  row: number,
  col: number,
): { value: number; level: number } | null {
  for (let k = level; k < levels; k++) {
    const f = 2 ** k;
    const a = Math.floor(row / f);
    const b = Math.floor(col / f);
    // The overview is the last level whole: tile (0, 0) of it.
    const t = k === levels - 1 && overview ? overview : cache.get(k, Math.floor(a / tile), Math.floor(b / tile));
    if (!t) continue;
    const ra = a - t.i * tile;
    const rb = b - t.j * tile;
    if (ra < 0 || rb < 0 || ra >= t.rows || rb >= t.cols) continue;
    return { value: t.values[ra * t.cols + rb] as number, level: k };
  }
  return null;
}
