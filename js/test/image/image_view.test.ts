import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { MISSING, PUOR, VIRIDIS } from "../../src/core/colors";
import { formatNumber } from "../../src/core/format";
import {
  asPatch,
  patchIndex,
  colorize,
  fitSize,
  mapRange,
  patchAfterKey,
  patchAt,
  patchBox,
  queryRow,
  smoothFactor,
  upsampleBilinear,
} from "../../src/image/image_maths";
import { MapRequester, QueryMapStore } from "../../src/image/image_state";
import { captionText, methodLabel, patchName, patchText, selectionText, type Shown } from "../../src/image/image_text";
import { QUERY_ATTENTION, QUERY_ROLLOUT } from "../../src/image/image_types";
import { rangeText } from "../../src/core/score_range";

function close(got: ArrayLike<number>, want: readonly number[], tol = 1e-6): void {
  assert.equal(got.length, want.length, "length");
  for (let i = 0; i < want.length; i++) assert.ok(Math.abs((got[i] as number) - want[i]!) <= tol, `at ${i}: ${got[i]} vs ${want[i]}`);
}

describe("patchAt: the patch under the pointer", () => {
  test("maps positions on the drawn image to [row, col]", () => {
    // A 2 × 4 grid drawn at 200 × 100 px: patches are 50 × 50.
    assert.deepEqual(patchAt(0, 0, 200, 100, 2, 4), [0, 0]);
    assert.deepEqual(patchAt(49.9, 49.9, 200, 100, 2, 4), [0, 0]);
    assert.deepEqual(patchAt(50, 50, 200, 100, 2, 4), [1, 1]); // an edge belongs to the patch after it
    assert.deepEqual(patchAt(175, 20, 200, 100, 2, 4), [0, 3]);
    assert.deepEqual(patchAt(200, 100, 200, 100, 2, 4), [1, 3]); // the far edges: the last patch
  });

  test("outside the image, or with nothing drawn, there is no patch", () => {
    assert.equal(patchAt(-1, 10, 200, 100, 2, 4), null);
    assert.equal(patchAt(10, 100.5, 200, 100, 2, 4), null);
    assert.equal(patchAt(Number.NaN, 10, 200, 100, 2, 4), null);
    assert.equal(patchAt(10, 10, 0, 100, 2, 4), null);
    assert.equal(patchAt(10, 10, 200, 100, 0, 4), null);
  });

  test("patchBox is the inverse: a box's centre hits its patch", () => {
    for (let row = 0; row < 3; row++) {
      for (let col = 0; col < 5; col++) {
        const box = patchBox([row, col], 250, 120, 3, 5);
        assert.deepEqual(patchAt(box.x + box.w / 2, box.y + box.h / 2, 250, 120, 3, 5), [row, col]);
        assert.equal(box.w, 50);
        assert.equal(box.h, 40);
      }
    }
  });
});

describe("upsampleBilinear: torch's interpolate(align_corners=False)", () => {
  test("a 2 × 3 grid by 2 matches attnwidget._images.upsample", () => {
    const grid = [0, 1, 2, 4, 8, 16];
    // upsample(np.array([[0, 1, 2], [4, 8, 16]]), 2) in Python (torch).
    const want = [
      [0.0, 0.25, 0.75, 1.25, 1.75, 2.0],
      [1.0, 1.4375, 2.3125, 3.4375, 4.8125, 5.5],
      [3.0, 3.8125, 5.4375, 7.8125, 10.9375, 12.5],
      [4.0, 5.0, 7.0, 10.0, 14.0, 16.0],
    ].flat();
    close(upsampleBilinear(grid, 2, 3, 2), want);
  });

  test("odd factors and a single row", () => {
    // upsample(np.array([[1, 3]]), 3): edges clamp, the middle interpolates.
    const row = [1.0, 1.0, 5 / 3, 7 / 3, 3.0, 3.0];
    close(upsampleBilinear([1, 3], 1, 2, 3), [...row, ...row, ...row], 1e-6);
  });

  test("factor 1 returns the grid; bad arguments throw", () => {
    close(upsampleBilinear([1, 2, 3, 4], 2, 2, 1), [1, 2, 3, 4]);
    assert.throws(() => upsampleBilinear([1, 2, 3], 2, 2, 2), RangeError);
    assert.throws(() => upsampleBilinear([1, 2, 3, 4], 2, 2, 1.5), RangeError);
  });

  test("smoothFactor aims at a 256-value side within a budget", () => {
    assert.equal(smoothFactor(14, 14), 19);
    assert.equal(smoothFactor(8, 8), 32);
    assert.equal(smoothFactor(300, 200), 1);
    assert.ok(64 * 64 * smoothFactor(64, 64, 4096, 1 << 16) ** 2 <= 1 << 16);
  });
});

describe("colours of a patch grid", () => {
  test("colorize writes opaque RGBA in the scale's colours, grey for non-finite values", () => {
    const range = mapRange([0, 0.5, 1, Number.NaN], false);
    const pixels = colorize([0, 1, Number.NaN], range.scale);
    assert.deepEqual(Array.from(pixels.subarray(0, 4)), [...VIRIDIS[0]!, 255]);
    assert.deepEqual(Array.from(pixels.subarray(4, 8)), [...VIRIDIS[VIRIDIS.length - 1]!, 255]);
    assert.deepEqual(Array.from(pixels.subarray(8, 12)), [...MISSING, 255]);
  });

  test("colorize equals scale.color pixel for pixel, signed and unsigned, beyond the range too", () => {
    const values = Array.from({ length: 2001 }, (_, i) => -1.3 + (2.6 * i) / 2000);
    values.push(Number.NaN, Number.POSITIVE_INFINITY, -0);
    for (const signed of [false, true]) {
      const scale = mapRange(values.slice(200, 1800), signed).scale;
      const pixels = colorize(values, scale);
      values.forEach((value, i) => {
        const expected = Number.isFinite(value) ? scale.color(value) : MISSING;
        assert.deepEqual(Array.from(pixels.subarray(4 * i, 4 * i + 4)), [...expected, 255], `value ${value}`);
      });
    }
  });

  test("signed maps are symmetric around 0", () => {
    const range = mapRange([-0.5, 0.25, 0], true);
    assert.equal(range.scale.max, 0.5);
    assert.deepEqual(range.scale.color(0), PUOR[5]);
    assert.equal(rangeText(range.scale), `${formatNumber(-0.5)} … 0 … ${formatNumber(0.5)}`);
  });

  test("the query patch is left out of the range and drawn beyond it", () => {
    const values = [0.1, 0.9, 0.2, 0.05];
    const range = mapRange(values, false, 1);
    assert.equal(range.excluded, 1);
    assert.ok(Math.abs(range.scale.max - 0.2) < 1e-7);
    assert.ok(range.beyond(0.9) && !range.beyond(0.2) && !range.beyond(Math.fround(0.2)));
    assert.equal(rangeText(range.scale), "0 … 0.2");
    assert.deepEqual(range.scale.color(0.9), VIRIDIS[VIRIDIS.length - 1]);
  });

  test("the range falls back to every patch when the others are all 0", () => {
    const range = mapRange([0, 0.7, 0], false, 1);
    assert.equal(range.excluded, -1);
    assert.ok(Math.abs(range.scale.max - 0.7) < 1e-7);
    assert.equal(mapRange([1, 2], false, 5).excluded, -1); // no such patch
  });
});

describe("selection", () => {
  test("queryRow: row 0 is the explanation's query, then the patches row-major", () => {
    assert.equal(queryRow([], 4), 0);
    assert.equal(queryRow([0, 0], 4), 1);
    assert.equal(queryRow([2, 3], 4), 12);
  });

  test("asPatch reads a row-major index inside the grid; patchIndex writes it", () => {
    assert.deepEqual(asPatch(5, 3, 4), [1, 1]);
    assert.deepEqual(asPatch(11, 3, 4), [2, 3]);
    for (const bad of [-1, 12, 1.5, [1, 2], "1", null]) assert.equal(asPatch(bad, 3, 4), null);
    assert.equal(patchIndex([2, 3], 4), 11);
    assert.equal(patchIndex([], 4), -1);
    assert.equal(patchIndex(null, 4), -1);
    for (let k = 0; k < 12; k++) assert.equal(patchIndex(asPatch(k, 3, 4), 4), k);
  });

  test("patchAfterKey moves within the grid and Esc clears", () => {
    assert.deepEqual(patchAfterKey("ArrowRight", null, 3, 4), [0, 0]);
    assert.deepEqual(patchAfterKey("ArrowRight", [1, 1], 3, 4), [1, 2]);
    assert.deepEqual(patchAfterKey("ArrowDown", [1, 1], 3, 4), [2, 1]);
    assert.deepEqual(patchAfterKey("ArrowUp", [1, 1], 3, 4), [0, 1]);
    assert.deepEqual(patchAfterKey("ArrowLeft", [1, 1], 3, 4), [1, 0]);
    assert.equal(patchAfterKey("ArrowLeft", [1, 0], 3, 4), null); // at the edge: nothing changes
    assert.deepEqual(patchAfterKey("End", null, 3, 4), [2, 3]);
    assert.deepEqual(patchAfterKey("Home", [2, 2], 3, 4), [0, 0]);
    assert.deepEqual(patchAfterKey("Escape", [2, 2], 3, 4), []);
    assert.equal(patchAfterKey("Escape", null, 3, 4), null);
    assert.equal(patchAfterKey("a", [0, 0], 3, 4), null);
  });

  test("fitSize keeps the aspect ratio", () => {
    assert.deepEqual(fitSize(40, 48, 384), { width: 384, height: 320 });
    assert.deepEqual(fitSize(1000, 500, 384), { width: 192, height: 384 });
    assert.deepEqual(fitSize(0, 0, 96), { width: 96, height: 96 });
  });
});

/** float16 bit patterns of a few exact values. */
const HALF: Record<number, number> = { 0: 0x0000, 0.125: 0x3000, 0.25: 0x3400, 0.5: 0x3800, 0.75: 0x3a00, 1: 0x3c00 };
const halves = (values: number[]): Uint8Array => new Uint8Array(new Uint16Array(values.map((v) => HALF[v]!)).buffer);

describe("QueryMapStore: float16 chunks in, query rows out", () => {
  // 2 heads, 3 query rows (the query + 2 patches), 2 patch columns.
  const attention = [
    [[1, 0], [0.5, 0.5], [0.25, 0.75]], // head 0
    [[0, 1], [0.75, 0.25], [0.125, 0.125]], // head 1
  ];

  test("a whole layer in one chunk; one head or the mean over heads", () => {
    const store = new QueryMapStore(2, 3, 2);
    assert.equal(store.row("attention", 0, -1, 1), null);
    store.ingest({ map: "attention", layer: 4, heads: [0, 2], rows: [0, 3] }, halves(attention.flat(2)));
    close(store.row("attention", 4, 0, 1)!, [0.5, 0.5]);
    close(store.row("attention", 4, 1, 2)!, [0.125, 0.125]);
    close(store.row("attention", 4, -1, 0)!, [0.5, 0.5]);
    close(store.row("attention", 4, -1, 2)!, [0.1875, 0.4375]);
    assert.equal(store.row("attention", 3, -1, 0), null); // another layer: not here
    assert.equal(store.row("rollout", 4, -1, 0), null);
  });

  test("chunks by head and by rows fill a layer piece by piece", () => {
    const store = new QueryMapStore(2, 3, 2);
    store.ingest({ map: "attention", layer: 0, heads: [1, 2], rows: [1, 3] }, halves(attention[1]!.slice(1).flat()));
    assert.ok(store.has("attention", 0, 1, 2) && !store.has("attention", 0, 1, 0));
    assert.equal(store.row("attention", 0, -1, 2), null); // head 0 is missing
    store.ingest({ map: "attention", layer: 0, heads: [0, 1], rows: [0, 3] }, halves(attention[0]!.flat()));
    close(store.row("attention", 0, -1, 2)!, [0.1875, 0.4375]);
    assert.equal(store.row("attention", 0, 1, 0), null);
  });

  test("rollout has one map per layer, whatever head is asked", () => {
    const store = new QueryMapStore(2, 3, 2);
    store.ingest({ map: "rollout", layer: 1, heads: [0, 1], rows: [0, 3] }, halves([1, 0, 0.5, 0.5, 0, 1]));
    close(store.row("rollout", 1, -1, 2)!, [0, 1]);
    close(store.row("rollout", 1, 1, 1)!, [0.5, 0.5]);
  });

  test("the preload trait: chunks at offsets of one buffer", () => {
    const store = new QueryMapStore(2, 3, 2);
    const rollout = halves([1, 0, 0.5, 0.5, 0, 1]);
    const att = halves(attention.flat(2));
    const bytes = new Uint8Array(rollout.length + att.length);
    bytes.set(rollout, 0);
    bytes.set(att, rollout.length);
    store.ingestPreload(new DataView(bytes.buffer), [
      { map: "rollout", layer: 0, heads: [0, 1], rows: [0, 3], offset: 0, nbytes: rollout.length },
      { map: "attention", layer: 0, heads: [0, 2], rows: [0, 3], offset: rollout.length, nbytes: att.length },
    ]);
    close(store.row("rollout", 0, -1, 1)!, [0.5, 0.5]);
    close(store.row("attention", 0, 0, 2)!, [0.25, 0.75]);
    assert.throws(
      () => store.ingestPreload(bytes, [{ map: "rollout", layer: 1, heads: [0, 1], rows: [0, 3], offset: 30, nbytes: 12 }]),
      RangeError,
    );
  });

  test("chunks that do not fit the maps are refused", () => {
    const store = new QueryMapStore(2, 3, 2);
    assert.throws(() => store.ingest({ map: "attention", layer: 0, heads: [0, 3], rows: [0, 3] }, halves([])), RangeError);
    assert.throws(() => store.ingest({ map: "rollout", layer: 0, heads: [0, 2], rows: [0, 3] }, halves([])), RangeError);
    assert.throws(() => store.ingest({ map: "attention", layer: 0, heads: [0, 1], rows: [0, 3] }, halves([1, 0])), RangeError);
    assert.throws(() => store.ingest({ map: "attention", layer: -1, heads: [0, 1], rows: [0, 1] }, halves([1, 0])), RangeError);
  });
});

describe("MapRequester", () => {
  test("asks once per layer until reset, and reports silence", async () => {
    const sent: unknown[] = [];
    let silent = 0;
    const requester = new MapRequester((c) => sent.push(c), () => (silent += 1), 5);
    assert.ok(requester.ask("attention", 2));
    assert.ok(!requester.ask("attention", 2));
    assert.ok(requester.ask("rollout", 2));
    assert.deepEqual(sent, [
      { type: "request", map: "attention", layer: 2 },
      { type: "request", map: "rollout", layer: 2 },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(silent, 2);
    requester.reset();
    assert.ok(requester.ask("attention", 2));
    requester.replied();
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(silent, 2); // it got a reply
    requester.dispose();
  });
});

describe("ImageView's words", () => {
  const shown = (method: string, selected: [number, number] | null = null): Shown => ({
    method,
    layer: 3,
    head: -1,
    selected,
    queryName: selected ? patchName(selected, `(${selected[0]},${selected[1]})`) : "[CLS]",
    target: "cat",
  });

  test("captions say which map, for which query", () => {
    assert.equal(captionText(shown("rollout")), 'rollout: relevance of each patch for the target "cat".');
    assert.equal(
      captionText(shown(QUERY_ATTENTION)),
      "Attention of [CLS] (click a patch to make it the query) over the patches, layer 3, mean over heads.",
    );
    assert.equal(captionText({ ...shown(QUERY_ROLLOUT, [1, 2]) }), "Attention rollout of patch (1, 2) up to layer 3.");
    assert.equal(methodLabel(QUERY_ATTENTION), "attention of the query");
    assert.equal(methodLabel("raw"), "raw");
  });

  test("patch names add a label only when it says more; labels stay literal text", () => {
    assert.equal(patchName([1, 2], "(1,2)"), "patch (1, 2)");
    assert.equal(patchName([0, 0], "<img src=x onerror=1>"), 'patch (0, 0) "<img src=x onerror=1>"');
  });

  test("hover text formats the value as the views format numbers", () => {
    assert.equal(patchText(shown("raw"), [0, 1], "(0,1)", 0.041894618), `patch (0, 1)\nraw ${formatNumber(0.041894618)}`);
    assert.equal(
      patchText({ ...shown(QUERY_ATTENTION), head: 2 }, [0, 1], "(0,1)", -1.5e-9, ["beyond"]),
      `patch (0, 1)\nattention (layer 3, head 2) ${formatNumber(-1.5e-9)} (beyond)`,
    );
    assert.equal(patchText(shown(QUERY_ROLLOUT), [0, 1], "(0,1)", null), "patch (0, 1)\nrollout (up to layer 3): loading…");
  });

  test("the status line lists the selected patch's scores", () => {
    assert.equal(selectionText([1, 1], "(1,1)", ["raw", "lrp"], (i) => [0.5, -0.25][i]!), "Selected patch (1, 1): raw 0.5 · lrp \u22120.25");
    assert.match(selectionText(null, "", ["raw"], () => 0), /^Click a patch/);
  });
});
