import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  CURVE_STEPS,
  MIN_WEIGHT,
  alphaLevel,
  binCenter,
  binsWithin,
  bucketLines,
  bucketStrong,
  cellAt,
  cellOrigin,
  gridSize,
  cutoffFromCounts,
  levelCounts,
  levelCutoff,
  levelOf,
  lineCurve,
  lineWidthFor,
  linearCurve,
  stripAlpha,
  stripLayout,
  pairBlock,
  rowHeightFor,
  type GridGeometry,
} from "../../src/attention/attention_layout";
import { keysNote, pinAfterKey, pinHint, pinSurvives } from "../../src/attention/attention_common";
import { AttentionStore, Requester } from "../../src/attention/attention_state";
import type { MatrixInfo } from "../../src/attention/attention_types";
import { decodeFloat16Bits, halfTable, halfToFloat, widen } from "../../src/core/buffers";

/** float16 bit pattern of a value (round to nearest even), for building test buffers. */
function toHalf(x: number): number {
  const f32 = new Float32Array([x]);
  const u32 = new Uint32Array(f32.buffer)[0]!;
  const sign = (u32 >>> 16) & 0x8000;
  const exp = ((u32 >>> 23) & 0xff) - 127 + 15;
  const mant = u32 & 0x7fffff;
  if (exp <= 0) {
    // subnormal half (enough for these tests: no rounding carry cases)
    return sign | Math.round((mant | 0x800000) / 2 ** (14 - exp));
  }
  let half = sign | (exp << 10) | (mant >> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half += 1;
  return half;
}

function halfBytes(values: number[], offset = 0): DataView {
  const buffer = new ArrayBuffer(offset + values.length * 2 + 1);
  const view = new DataView(buffer, offset, values.length * 2);
  values.forEach((v, i) => view.setUint16(i * 2, toHalf(v), true));
  return view;
}

describe("float16 decoding", () => {
  test("special and edge values", () => {
    assert.equal(halfToFloat(0x0000), 0);
    assert.ok(Object.is(halfToFloat(0x8000), -0));
    assert.equal(halfToFloat(0x3c00), 1);
    assert.equal(halfToFloat(0xc000), -2);
    assert.equal(halfToFloat(0x3800), 0.5);
    assert.equal(halfToFloat(0x7bff), 65504); // largest half
    assert.equal(halfToFloat(0x0001), 2 ** -24); // smallest subnormal
    assert.equal(halfToFloat(0x0400), 2 ** -14); // smallest normal
    assert.equal(halfToFloat(0x7c00), Infinity);
    assert.equal(halfToFloat(0xfc00), -Infinity);
    assert.ok(Number.isNaN(halfToFloat(0x7e00)));
  });

  test("the lookup table agrees with the formula", () => {
    const table = halfTable();
    assert.equal(table.length, 65536);
    for (const bits of [0, 1, 0x3555, 0x3c00, 0x7bff, 0x8001, 0xbc00]) {
      assert.equal(table[bits], Math.fround(halfToFloat(bits)));
    }
  });

  test("decodes little-endian bytes, also at an odd offset, within half precision", () => {
    const values = [0, 1, 0.5, 1 / 3, 0.001, 0.999, 2 ** -20];
    for (const offset of [0, 1, 3]) {
      const decoded = widen(decodeFloat16Bits(halfBytes(values, offset)));
      assert.equal(decoded.length, values.length);
      values.forEach((v, i) => {
        const tolerance = Math.max(Math.abs(v) * 2 ** -11, 2 ** -25);
        assert.ok(Math.abs((decoded[i] as number) - v) <= tolerance, `${v} -> ${decoded[i]}`);
      });
    }
  });

  test("rejects an odd number of bytes", () => {
    assert.throws(() => decodeFloat16Bits(new Uint8Array(3)), /whole number of float16/);
  });
});

describe("layout helpers", () => {
  test("pair blocks are bertviz's sentence slices", () => {
    // 7 tokens, sentence B starts at 4.
    assert.deepEqual(pairBlock("all", 7, 7, 4), { rows: [0, 7], cols: [0, 7] });
    assert.deepEqual(pairBlock("A->A", 7, 7, 4), { rows: [0, 4], cols: [0, 4] });
    assert.deepEqual(pairBlock("B->B", 7, 7, 4), { rows: [4, 7], cols: [4, 7] });
    assert.deepEqual(pairBlock("A->B", 7, 7, 4), { rows: [0, 4], cols: [4, 7] });
    assert.deepEqual(pairBlock("B->A", 7, 7, 4), { rows: [4, 7], cols: [0, 4] });
    assert.deepEqual(pairBlock("A->B", 7, 7, null), { rows: [0, 7], cols: [0, 7] });
  });

  test("alpha levels are 8-bit and drop what would be invisible", () => {
    assert.equal(alphaLevel(0), 0);
    assert.equal(alphaLevel(Number.NaN), 0);
    assert.equal(alphaLevel(1 / 600), 0);
    assert.equal(alphaLevel(1 / 255), 1);
    assert.equal(alphaLevel(0.5), 128);
    assert.equal(alphaLevel(3), 255);
  });

  test("row height shrinks so the canvas stays under browser limits", () => {
    assert.equal(rowHeightFor(10), 20);
    assert.equal(rowHeightFor(512), 20);
    assert.equal(rowHeightFor(3000), 10);
    assert.equal(rowHeightFor(100000), 4);
  });
});

describe("bucketLines", () => {
  // 3 x 3 weights, row-major.
  const w = Float32Array.from([0.5, 0.5, 0, 0.25, 0.75, 0, 0.001, 0.099, 0.9]);

  test("groups every visible line by alpha level", () => {
    const b = bucketLines(w, 3, [0, 3], [0, 3], linearCurve(1));
    assert.equal(b.count, 6); // zeros and 0.001 (< 1/510) dropped
    assert.equal(b.starts[256], 6);
    const level = (k: number) => {
      for (let l = 1; l < 256; l++) if (k >= b.starts[l]! && k < b.starts[l + 1]!) return l;
      return -1;
    };
    const found = new Map<number, number>();
    for (let k = 0; k < b.count; k++) found.set(b.items[k]!, level(k));
    assert.deepEqual(
      [...found.entries()].sort((a, b) => a[0] - b[0]),
      [
        [0, 128],
        [1, 128],
        [3, 64],
        [4, 191],
        [7, 25],
        [8, Math.round(Math.fround(0.9) * 255)], // float32(0.9) * 255 = 229.49...
      ],
    );
  });

  test("the curve sets the levels (a linear scale divides them)", () => {
    const b = bucketLines(w, 3, [0, 3], [0, 3], linearCurve(0.5));
    assert.equal(b.count, 6);
    const b2 = bucketLines(w, 3, [0, 3], [0, 3], linearCurve(0.001));
    assert.equal(b2.count, 0);
    // The one-head line curve drops weights under MIN_WEIGHT (0.001 and zeros), keeps 0.099.
    const b3 = bucketLines(w, 3, [0, 3], [0, 3], lineCurve(1));
    assert.equal(b3.count, 6);
    assert.ok(levelOf(lineCurve(1), 0.099) > 25, "0.099 reads stronger than linear");
  });

  test("a block (pair filter) uses local indices", () => {
    const b = bucketLines(w, 3, [1, 3], [1, 3], linearCurve(1));
    assert.equal(b.blockRows, 2);
    assert.equal(b.blockCols, 2);
    // (1,1)=0.75 -> local 0; (2,1)=0.099 -> 2; (2,2)=0.9 -> 3
    assert.deepEqual([...b.items].sort(), [0, 2, 3]);
  });

  test("focus keeps one query's or one key's lines", () => {
    const query = bucketLines(w, 3, [0, 3], [0, 3], linearCurve(1), { side: "query", index: 1 });
    assert.deepEqual([...query.items].sort(), [3, 4]);
    const key = bucketLines(w, 3, [0, 3], [0, 3], linearCurve(1), { side: "key", index: 1 });
    assert.deepEqual([...key.items].sort(), [1, 4, 7]);
  });
});

describe("levelCutoff", () => {
  // Two heads; levels: head A 10 lines at 200, 5 at 100; head B 20 lines at 50.
  const weights = (spec: [number, number][]) => Float32Array.from(spec.flatMap(([n, level]) => Array(n).fill(level / 255)));
  const a = bucketLines(weights([[10, 200], [5, 100]]), 15, [0, 1], [0, 15], linearCurve(1));
  const b = bucketLines(weights([[20, 50]]), 20, [0, 1], [0, 20], linearCurve(1));

  test("keeps the strongest lines within the budget", () => {
    assert.equal(levelCutoff([a, b], 1000), 1); // everything fits
    assert.equal(levelCutoff([a, b], 35), 1);
    assert.equal(levelCutoff([a, b], 34), 51); // the 20 faint lines go
    assert.equal(levelCutoff([a, b], 15), 51);
    assert.equal(levelCutoff([a, b], 14), 101); // then the 5 at level 100
    assert.equal(levelCutoff([a, b], 0), 201);
  });
});

describe("levelCounts / cutoffFromCounts / bucketStrong", () => {
  // A 7 × 9 block of a 10 × 11 matrix, pseudo-random weights incl. 0, NaN, > 1.
  const w = Float32Array.from({ length: 110 }, (_, k) => (k % 17 === 0 ? 0 : k % 23 === 0 ? Number.NaN : ((k * 37) % 101) / 60));
  const rows = [2, 9] as const;
  const cols = [1, 10] as const;
  const scale = lineCurve(5);
  const full = bucketLines(w, 11, rows, cols, scale);
  const counts = levelCounts(w, 11, rows, cols, scale);

  test("counts match bucketLines' levels", () => {
    for (let level = 1; level < 256; level++) assert.equal(counts[level], full.starts[level + 1]! - full.starts[level]!);
  });

  test("the cutoff matches levelCutoff", () => {
    for (const budget of [0, 1, 5, 20, 40, 1000]) assert.equal(cutoffFromCounts(counts, budget), levelCutoff([full], budget));
  });

  test("bucketStrong keeps exactly bucketLines' lines at or above the cutoff", () => {
    for (const minLevel of [1, 30, 120, 255, 256]) {
      const strong = bucketStrong(w, 11, rows, cols, scale, minLevel, counts);
      for (let level = 1; level < 256; level++) {
        const got = [...strong.items.subarray(strong.starts[level]!, strong.starts[level + 1]!)].sort((a, b) => a - b);
        const want = level >= minLevel ? [...full.items.subarray(full.starts[level]!, full.starts[level + 1]!)].sort((a, b) => a - b) : [];
        assert.deepEqual(got, want, `level ${level}, minLevel ${minLevel}`);
      }
      assert.equal(strong.blockCols, full.blockCols);
    }
  });
});

describe("thumbnail bins and grid geometry", () => {
  const edges = [0, 2, 4, 5, 7]; // 4 bins over 7 tokens, split at 4

  test("bins within a token range", () => {
    assert.deepEqual(binsWithin(edges, [0, 7]), [0, 4]);
    assert.deepEqual(binsWithin(edges, [0, 4]), [0, 2]);
    assert.deepEqual(binsWithin(edges, [4, 7]), [2, 4]);
  });

  test("bin centres are proportional to their tokens", () => {
    assert.equal(binCenter(edges, 0, 0, 7, 0, 70), 10);
    assert.equal(binCenter(edges, 3, 0, 7, 0, 70), 60);
    assert.equal(binCenter(edges, 2, 4, 3, 10, 30), 15); // B block: tokens 4..6
  });

  const g: GridGeometry = { layers: 3, heads: 4, labelWidth: 30, labelHeight: 20, cell: 50, gap: 10 };

  test("grid size and cell origins", () => {
    assert.deepEqual(gridSize(g), { width: 30 + 4 * 60, height: 20 + 3 * 60 });
    assert.deepEqual(cellOrigin(g, 2, 1), { x: 90, y: 140 });
  });

  test("hit-testing thumbnails; labels and gaps are no thumbnail", () => {
    assert.deepEqual(cellAt(g, 90 + 25, 140 + 25), { layer: 2, head: 1 });
    assert.deepEqual(cellAt(g, 31, 21), { layer: 0, head: 0 });
    assert.equal(cellAt(g, 10, 50), null); // row label
    assert.equal(cellAt(g, 85, 50), null); // gap between heads 0 and 1
    assert.equal(cellAt(g, 30 + 4 * 60 + 5, 50), null); // right of the grid
  });
});

describe("AttentionStore", () => {
  const info: MatrixInfo = {
    key: "self",
    label: "Self-attention",
    rows: "tokens",
    cols: "tokens",
    shape: [2, 3, 4, 4],
    layer_ids: [0, 1],
    head_ids: [0, 1, 2],
    causal: false,
  };
  const head = (h: number) => Array.from({ length: 16 }, (_, k) => (k + 1 + 16 * h) / 64);

  test("assembles heads from chunks split by heads and rows", () => {
    const store = new AttentionStore([info]);
    assert.equal(store.weights("self", 1, 0), null);
    store.ingest({ matrix: "self", layer: 1, heads: [0, 2], rows: [0, 4] }, halfBytes([...head(0), ...head(1)]));
    store.ingest({ matrix: "self", layer: 1, heads: [2, 3], rows: [0, 3] }, halfBytes(head(2).slice(0, 12)));
    assert.ok(store.has("self", 1, 1));
    assert.ok(!store.has("self", 1, 2)); // one row still missing
    assert.equal(store.weights("self", 1, 2), null);
    store.ingest({ matrix: "self", layer: 1, heads: [2, 3], rows: [3, 4] }, halfBytes(head(2).slice(12)));
    const w = store.weights("self", 1, 2)!;
    assert.equal(w.length, 16);
    head(2).forEach((v, i) => assert.ok(Math.abs((w[i] as number) - v) <= v * 2 ** -11));
    assert.ok(!store.has("self", 0, 0));
  });

  test("reads indexed chunks out of one preload buffer", () => {
    const store = new AttentionStore([info]);
    const a = halfBytes(head(0));
    const b = halfBytes(head(1));
    const bytes = new Uint8Array(64);
    bytes.set(new Uint8Array(a.buffer, a.byteOffset, 32), 0);
    bytes.set(new Uint8Array(b.buffer, b.byteOffset, 32), 32);
    store.ingestIndexed(new DataView(bytes.buffer), [
      { matrix: "self", layer: 0, heads: [0, 1], rows: [0, 4], offset: 0, nbytes: 32 },
      { matrix: "self", layer: 0, heads: [1, 2], rows: [0, 4], offset: 32, nbytes: 32 },
    ]);
    assert.ok(store.has("self", 0, 0) && store.has("self", 0, 1) && !store.has("self", 0, 2));
  });

  test("rejects chunks that do not fit", () => {
    const store = new AttentionStore([info]);
    assert.throws(() => store.ingest({ matrix: "cross", layer: 0, heads: [0, 1], rows: [0, 4] }, halfBytes(head(0))), /unknown matrix/);
    assert.throws(() => store.ingest({ matrix: "self", layer: 2, heads: [0, 1], rows: [0, 4] }, halfBytes(head(0))), /out of range/);
    assert.throws(() => store.ingest({ matrix: "self", layer: 0, heads: [0, 1], rows: [0, 4] }, halfBytes([1, 2])), /expected 16/);
  });
});

describe("Requester", () => {
  test("asks once per layer or head until reset", () => {
    const sent: unknown[] = [];
    const r = new Requester((c) => sent.push(c));
    assert.ok(r.ask("self", 3));
    assert.ok(!r.ask("self", 3));
    assert.ok(!r.ask("self", 3, 1)); // the whole layer is already on its way
    assert.ok(r.ask("cross", 0, 2));
    assert.deepEqual(sent, [
      { type: "request", matrix: "self", layer: 3 },
      { type: "request", matrix: "cross", layer: 0, head: 2 },
    ]);
    r.reset();
    assert.ok(r.ask("self", 3));
  });
});

describe("pinned token (HeadView and ModelView)", () => {
  const matrix = (key: string, rows: MatrixInfo["rows"], n: number): MatrixInfo => ({
    key,
    label: key,
    rows,
    cols: "tokens",
    shape: [2, 2, n, 3],
    layer_ids: [0, 1],
    head_ids: [0, 1],
    causal: false,
  });

  test("keys: Esc unpins, arrows move within the shown rows, else nothing", () => {
    const rows: [number, number] = [4, 7];
    assert.equal(pinAfterKey("Escape", 5, rows), -1);
    assert.equal(pinAfterKey("Escape", -1, rows), null); // nothing to unpin (ModelView then closes)
    assert.equal(pinAfterKey("ArrowDown", -1, rows), 4);
    assert.equal(pinAfterKey("ArrowUp", -1, rows), 6);
    assert.equal(pinAfterKey("ArrowDown", 5, rows), 6);
    assert.equal(pinAfterKey("ArrowDown", 6, rows), null); // the last row stays
    assert.equal(pinAfterKey("ArrowUp", 4, rows), null);
    assert.equal(pinAfterKey("ArrowUp", 5, rows), 4);
    assert.equal(pinAfterKey("Enter", 5, rows), null);
    assert.equal(pinAfterKey("ArrowDown", -1, [3, 3]), null); // no rows shown
  });

  test("a matrix switch keeps the pin only when the queries are the same tokens", () => {
    const encoder = matrix("encoder", "tokens", 3);
    const decoder = matrix("decoder", "decoder_tokens", 4);
    const cross = matrix("cross", "decoder_tokens", 4);
    assert.ok(pinSurvives(decoder, cross, 3));
    assert.ok(!pinSurvives(cross, encoder, 1)); // row 1 exists, but is another token
    assert.ok(!pinSurvives(encoder, decoder, 0));
    assert.ok(!pinSurvives(decoder, undefined, 0));
    assert.ok(pinSurvives(encoder, decoder, -1)); // nothing pinned: nothing to reset
  });

  test("status hint names the pinned token as text", () => {
    assert.equal(pinHint(["a", '"b"'], 1, false), 'Pinned #1 "\\"b\\"" (click it again or Esc to unpin).');
    assert.match(pinHint(["a"], -1, false), /click a query token to pin it\.$/);
    assert.match(pinHint(["a"], 5, true), /^Hover.*Causal: a query sees only itself/);
  });

  test("the left-out keys' line says which keys and that rows were renormalised", () => {
    const plain = matrix("self", "tokens", 3);
    assert.equal(keysNote(plain), ""); // no note: no line (Python sends none without ignore_keys)
    assert.equal(keysNote(undefined), "");
    const left = { ...plain, note: "keys #0 '[CLS]', #2 '[SEP]' left out, rows renormalised" };
    assert.equal(keysNote(left), "Attention with keys #0 '[CLS]', #2 '[SEP]' left out, rows renormalised (ignore_keys).");
  });
});

describe("line curve: strong links stand out, weak ones fade", () => {
  test("weights under MIN_WEIGHT draw nothing, NaN and negatives neither", () => {
    for (const heads of [1, 3, 12, 40]) {
      const curve = lineCurve(heads);
      assert.equal(curve.length, CURVE_STEPS + 1);
      assert.equal(levelOf(curve, MIN_WEIGHT * 0.9), 0);
      assert.equal(levelOf(curve, 0), 0);
      assert.equal(levelOf(curve, -0.5), 0);
      assert.equal(levelOf(curve, Number.NaN), 0);
      assert.ok(levelOf(curve, MIN_WEIGHT * 1.1) >= 1);
      assert.equal(levelOf(curve, 1), 255);
      assert.equal(levelOf(curve, 7), 255);
    }
  });

  test("the curve rises with the weight (bucketStrong relies on it)", () => {
    for (const heads of [1, 2, 12, 100]) {
      const curve = lineCurve(heads);
      for (let k = 1; k < curve.length; k++) assert.ok(curve[k]! >= curve[k - 1]!, `heads ${heads}, step ${k}`);
    }
  });

  test("at 12 heads a strong link is far more opaque than bertviz's weight / heads", () => {
    const curve = lineCurve(12);
    for (const w of [0.3, 0.5, 0.9]) {
      const ours = levelOf(curve, w) / 255;
      assert.ok(ours >= 4 * (w / 12), `weight ${w}: opacity ${ours}`);
      assert.ok(ours >= w * 0.9, `weight ${w}: opacity ${ours}`);
    }
    // ... while weak links stay faint: at most a third opaque below 0.2.
    assert.ok(levelOf(curve, 0.2) / 255 <= 1 / 3);
  });

  test("more heads shown: weak links fainter, strong ones as strong", () => {
    assert.ok(levelOf(lineCurve(12), 0.1) < levelOf(lineCurve(1), 0.1));
    assert.ok(levelOf(lineCurve(12), 0.95) >= 240 && levelOf(lineCurve(1), 0.95) >= 240);
  });

  test("strong links are drawn thicker", () => {
    assert.equal(lineWidthFor(1), 1);
    assert.equal(lineWidthFor(127), 1);
    assert.ok(lineWidthFor(128) > 1);
    assert.ok(lineWidthFor(255) > lineWidthFor(128));
    // At 12 heads a weight of 0.9 is thick, 0.1 a hairline.
    assert.ok(lineWidthFor(levelOf(lineCurve(12), 0.9)) >= 3);
    assert.equal(lineWidthFor(levelOf(lineCurve(12), 0.1)), 1);
  });
});

describe("weight strips", () => {
  test("about 120 px for all heads, at least 4 px and at most 24 a head", () => {
    assert.deepEqual(stripLayout(12), { perHead: 10, width: 120 });
    assert.deepEqual(stripLayout(1), { perHead: 24, width: 24 });
    assert.equal(stripLayout(64).perHead, 4);
    assert.equal(stripLayout(0).width, 24); // no heads: one slot's width
    for (const heads of [1, 4, 12, 16, 25, 32]) assert.ok(stripLayout(heads).perHead >= 4);
  });

  test("block opacity is the square root of the weight, 0 for none", () => {
    assert.equal(stripAlpha(0.25), 0.5);
    assert.equal(stripAlpha(1), 1);
    assert.equal(stripAlpha(3), 1);
    assert.equal(stripAlpha(0), 0);
    assert.equal(stripAlpha(Number.NaN), 0);
    assert.equal(stripAlpha(-1), 0);
  });
});
