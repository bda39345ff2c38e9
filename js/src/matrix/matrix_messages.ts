/**
 * AttentionMatrixView's messages (schema: attnwidget/views/matrix/matrix_view.py):
 * the request for tiles the page lacks, and the kernel's replies decoded
 * into tiles. Pure (no DOM): tested in test/matrix.test.ts.
 */
import { decodeFloats, type WireMeta } from "../core/buffers";
import type { Tile } from "./matrix_state";
import type { TileInfo, TileReply, TileRequest } from "./matrix_types";
import type { Binary } from "../core/types";

/** Tiles one request may ask for (the kernel refuses more). */
export const MAX_TILES_PER_REQUEST = 512;

/** The requests for `tiles` of `level` (at most MAX_TILES_PER_REQUEST each). */
export function tileRequests(version: number, level: number, tiles: readonly [number, number][]): TileRequest[] {
  const out: TileRequest[] = [];
  for (let k = 0; k < tiles.length; k += MAX_TILES_PER_REQUEST) {
    out.push({ type: "tiles", version, level, tiles: tiles.slice(k, k + MAX_TILES_PER_REQUEST) as [number, number][] });
  }
  return out;
}

/** Whether a custom message is a tile reply (else the view ignores it or shows its error). */
export function isTileReply(content: unknown): content is TileReply {
  if (typeof content !== "object" || content === null) return false;
  const c = content as Partial<TileReply>;
  return c.type === "tiles" && typeof c.version === "number" && typeof c.level === "number" && Array.isArray(c.tiles);
}

/** The tiles of a reply, checked against their buffers; throws on a malformed reply. */
export function decodeTiles<Image = unknown>(reply: TileReply, buffers: readonly Binary[]): Tile<Image>[] {
  if (reply.tiles.length !== buffers.length) {
    throw new RangeError(`tile reply: ${reply.tiles.length} tiles but ${buffers.length} buffers`);
  }
  return reply.tiles.map((info: TileInfo, k) => {
    if (!Number.isInteger(info.i) || !Number.isInteger(info.j) || info.i < 0 || info.j < 0) {
      throw new RangeError(`tile reply: bad tile position (${info.i}, ${info.j})`);
    }
    return decodeTile<Image>(reply.level, info.i, info.j, buffers[k] as Binary, info);
  });
}

/** One tile from its buffer and wire meta (also the overview, as tile (0, 0) of the last level). */
export function decodeTile<Image = unknown>(level: number, i: number, j: number, data: Binary, meta: WireMeta): Tile<Image> {
  if (meta.shape.length !== 2) throw new RangeError(`tile (${i}, ${j}): shape must have two sides, got [${meta.shape.join(", ")}]`);
  const [rows, cols] = meta.shape as [number, number];
  const values = decodeFloats(data, meta, `tile (${i}, ${j}) of level ${level}`);
  return { level, i, j, rows, cols, values, image: null, colorKey: "" };
}
