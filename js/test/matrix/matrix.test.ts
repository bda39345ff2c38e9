/**
 * AttentionMatrixView's maths (matrix_state.ts), pictures (matrix_draw.ts,
 * the pure parts) and messages (matrix_messages.ts), partly against the
 * fixture Python writes (tests/test_attention_matrix_view.py): a real tile
 * reply, the overview, the levels and the trait names.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { colorIndex, colorPosition, legendText, LUT, niceStep, tilePixels } from "../../src/matrix/matrix_draw";
import { formatNumber } from "../../src/core/format";
import { decodeTile, decodeTiles, isTileReply, MAX_TILES_PER_REQUEST, tileRequests } from "../../src/matrix/matrix_messages";
import {
  blockOf, cellAt, clampViewport, fitViewport, levelFor, MAX_SCALE, panBy, screenRect, TileCache, tileCells,
  valueAt, visibleTiles, zoomAt, type Tile,
} from "../../src/matrix/matrix_state";
import { MATRIX_TRAITS, type TileReply } from "../../src/matrix/matrix_types";
import fixture from "../fixtures/matrix.json";

const bytes = (b64: string): Uint8Array => Uint8Array.from(Buffer.from(b64, "base64"));
const near = (a: number, b: number, tol = 1e-9): void => assert.ok(Math.abs(a - b) <= tol, `${a} vs ${b}`);

describe("viewport: fit, zoom, pan", () => {
  test("fit shows the whole matrix; zoom keeps the cell under the pointer", () => {
    const vp = fitViewport(4096, 4096, 512, 512);
    near(vp.scale, 0.125);
    const zoomed = zoomAt(vp, 4, 128, 256, 4096, 4096);
    near(zoomed.scale, 0.5);
    // Cell under (128, 256) before: (x 1024, y 2048); after, still.
    near(zoomed.x + 128 / zoomed.scale, 1024);
    near(zoomed.y + 256 / zoomed.scale, 2048);
    // Never out past fit, never in past MAX_SCALE.
    near(zoomAt(vp, 0.1, 0, 0, 4096, 4096).scale, 0.125);
    near(zoomAt(vp, 1e6, 0, 0, 4096, 4096).scale, MAX_SCALE);
  });

  test("panning follows the pointer and stops at the edges", () => {
    const vp = { x: 100, y: 100, scale: 2, width: 200, height: 100 };
    const moved = panBy(vp, 20, -10, 1000, 1000);
    near(moved.x, 90);
    near(moved.y, 105);
    assert.deepEqual(panBy(vp, 1e6, 1e6, 1000, 1000), { ...vp, x: 0, y: 0 });
    const far = panBy(vp, -1e6, -1e6, 1000, 1000);
    near(far.x, 1000 - 100); // 200 px / 2 px per cell
    near(far.y, 1000 - 50);
    near(clampViewport({ ...vp, scale: 0.01 }, 1000, 1000).scale, 0.1); // fit: 100 px / 1000 cells
  });

  test("the level drawn has cells of at least about a pixel", () => {
    assert.equal(levelFor(0.125, 7), 3); // 8 cells per px -> level 3 (8 × 8 blocks)
    assert.equal(levelFor(0.13, 7), 3);
    assert.equal(levelFor(0.1, 7), 4);
    assert.equal(levelFor(1, 7), 0);
    assert.equal(levelFor(20, 7), 0);
    assert.equal(levelFor(1e-4, 7), 6); // never past the overview
  });

  test("the tiles in view, nearest the centre first", () => {
    const levels = [[4096, 4096], [2048, 2048], [1024, 1024], [512, 512], [256, 256], [128, 128], [64, 64]];
    const all = fitViewport(4096, 4096, 512, 512);
    const tiles = visibleTiles(all, 3, levels[3] as number[], 128, 4096, 4096);
    assert.equal(tiles.length, 16); // 512 cells = 4 × 4 tiles
    assert.ok(tiles.slice(0, 4).every(([i, j]) => i >= 1 && i <= 2 && j >= 1 && j <= 2));
    // Zoomed to 4 px per cell at cell (1000, 2000): 128 × 128 cells of level 0 -> 2 × 2 tiles at most.
    const vp = { x: 2000, y: 1000, scale: 4, width: 512, height: 512 };
    const near0 = visibleTiles(vp, 0, levels[0] as number[], 128, 4096, 4096);
    assert.deepEqual(near0.map(([i, j]) => `${i},${j}`).sort(), ["7,15", "7,16", "8,15", "8,16"]);
    // A tile's place on screen.
    const cells = tileCells(1, 2, 3, 128, 128, 64);
    assert.deepEqual(cells, { row: 512, col: 768, rows: 256, cols: 128 });
    assert.deepEqual(screenRect(vp, cells.row, cells.col, cells.rows, cells.cols), [(768 - 2000) * 4, (512 - 1000) * 4, 512, 1024]);
  });

  test("the cell under the pointer and the block it pools", () => {
    const vp = { x: 10.5, y: 20, scale: 2, width: 100, height: 100 };
    assert.deepEqual(cellAt(vp, 3, 5, 100, 100), { row: 22, col: 12 });
    assert.equal(cellAt(vp, -1, 5, 100, 100), null);
    assert.equal(cellAt({ ...vp, x: 90 }, 99, 5, 100, 100), null); // past the last column
    assert.deepEqual(blockOf(3, 12, 1, 100, 100), { r0: 96, r1: 99, c0: 8, c1: 15 });
  });
});

describe("tiles from Python (fixture)", () => {
  const reply = fixture.reply.content as unknown as TileReply;
  const buffers = fixture.reply.buffers.map((b) => bytes(b));

  test("the trait names match Python's", () => {
    assert.deepEqual([...MATRIX_TRAITS].sort(), fixture.traits);
  });

  test("a reply decodes into tiles with Python's values", () => {
    assert.ok(isTileReply(reply));
    const tiles = decodeTiles(reply, buffers);
    assert.deepEqual(tiles.map((t) => [t.i, t.j, t.rows, t.cols]), [[1, 0, fixture.n - 128, 128], [0, 1, ...fixture.expected.tile_0_1_shape]]);
    const first = tiles[0] as Tile;
    fixture.expected.tile_1_0_first_row.forEach((want, k) => {
      const got = first.values[k] as number;
      assert.ok(Math.abs(got - want) <= Math.max(want * 2 ** -10, 2 ** -24), `${k}: ${got} vs ${want}`);
    });
    assert.throws(() => decodeTiles(reply, buffers.slice(1)), /2 tiles but 1 buffers/);
  });

  test("valueAt reads the finest tile held, else the overview", () => {
    const cache = new TileCache();
    cache.reset(reply.version);
    for (const t of decodeTiles(reply, buffers)) cache.put(t);
    const o = fixture.overview;
    const overview = decodeTile(fixture.levels.length - 1, 0, 0, bytes(o.base64), o as never);
    const at = valueAt(cache, overview, 0, fixture.levels.length, fixture.tile, 140, 3);
    assert.equal(at?.level, 0);
    near(at?.value ?? NaN, fixture.expected.cell_140_3, fixture.expected.cell_140_3 * 2 ** -10);
    const coarse = valueAt(cache, overview, 0, fixture.levels.length, fixture.tile, 1, 2); // tile (0, 0) not held
    assert.equal(coarse?.level, 2);
    near(coarse?.value ?? NaN, fixture.overview_cell_0_0, fixture.overview_cell_0_0 * 2 ** -10);
  });
});

describe("tile cache and requests", () => {
  const tile = (level: number, i: number, j: number): Tile => ({ level, i, j, rows: 1, cols: 1, values: new Float32Array(1), image: null, colorKey: "" });

  test("claims each missing tile once, keeps the most recently used", () => {
    const cache = new TileCache(2);
    cache.reset(3);
    assert.deepEqual(cache.claim(0, [[0, 0], [0, 1]]), [[0, 0], [0, 1]]);
    assert.deepEqual(cache.claim(0, [[0, 0], [1, 1]]), [[1, 1]]); // (0, 0) is in flight
    assert.equal(cache.inFlight, 3);
    cache.put(tile(0, 0, 0));
    cache.put(tile(0, 0, 1));
    cache.get(0, 0, 0); // used: (0, 1) is now the oldest
    cache.put(tile(0, 1, 1));
    assert.deepEqual([cache.has(0, 0, 0), cache.has(0, 0, 1), cache.has(0, 1, 1)], [true, false, true]);
    cache.release(0, [[5, 5]]);
    cache.reset(4);
    assert.equal(cache.size + cache.inFlight, 0);
  });

  test("requests are split to what the kernel accepts", () => {
    const many = Array.from({ length: MAX_TILES_PER_REQUEST + 3 }, (_, k) => [k, 0] as [number, number]);
    const requests = tileRequests(7, 2, many);
    assert.deepEqual(requests.map((r) => [r.type, r.version, r.level, r.tiles.length]), [["tiles", 7, 2, MAX_TILES_PER_REQUEST], ["tiles", 7, 2, 3]]);
  });
});

describe("colours", () => {
  test("linear and log positions; pixels from the lookup table", () => {
    const linear = { lo: 0, hi: 0.5, log: false };
    near(colorPosition(linear, 0.25), 0.5);
    assert.equal(colorPosition(linear, 2), 1);
    assert.equal(colorPosition(linear, Number.NaN), 0);
    const log = { lo: 1e-4, hi: 1, log: true };
    near(colorPosition(log, 1e-2), 0.5); // 4 decades: 1e-4 … 1
    assert.equal(colorPosition(log, 0), 0);
    assert.equal(colorPosition(log, 1e-5), 0); // under the floor: the bottom colour
    const pixels = tilePixels(Float32Array.from([0, 0.25, 0.5, 9]), linear);
    assert.deepEqual(Array.from(pixels), [LUT[0], LUT[colorIndex(linear, 0.25)], LUT[255], LUT[255]]);
    assert.deepEqual(Array.from(tilePixels(Float32Array.from([1e-2]), log)), [LUT[colorIndex(log, Math.fround(1e-2))]]);
    assert.equal((LUT[0] as number) >>> 24, 255); // opaque
    assert.deepEqual([niceStep(0.5), niceStep(3), niceStep(40), niceStep(320)], [1, 5, 50, 500]);
  });
});

describe("colour scales from Python (fixture)", () => {
  test("each weight gets Python's position and lookup index", () => {
    assert.ok(fixture.colors.length >= 3);
    for (const { map, values, positions, indices } of fixture.colors) {
      const scale = { lo: map.lo, hi: map.hi, log: map.scale === "log" };
      values.forEach((v, k) => {
        near(colorPosition(scale, v), positions[k] as number, 1e-12);
        assert.equal(colorIndex(scale, v), indices[k], `${map.label}: ${v}`);
      });
      // The tile path (linear inlined) colours the same.
      const pixels = tilePixels(Float32Array.from(values), scale);
      assert.deepEqual(Array.from(pixels), indices.map((k) => LUT[k]), map.label);
    }
  });

  test("the legend names the scale and its range", () => {
    for (const { map } of fixture.colors) {
      const text = legendText(map, 2, "max");
      assert.equal(text.scale, map.label);
      assert.match(text.scale, map.scale === "log" ? /log scale/ : /linear/);
      assert.ok(text.lo.endsWith(formatNumber(map.lo)) && text.hi.endsWith(formatNumber(map.hi)), JSON.stringify(text));
      assert.equal(text.lo.startsWith("≤"), map.scale === "log"); // under the floor: its colour
      assert.equal(text.hi.startsWith("≥"), map.clipped); // clipped cells: the top colour
      assert.match(text.note, /largest weight of 4 × 4 tokens/);
    }
    assert.ok(fixture.colors.some((c) => c.map.clipped && c.map.above > 0));
  });
});
