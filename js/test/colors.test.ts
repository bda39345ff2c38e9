import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  BLACK,
  MISSING,
  PUOR,
  VIRIDIS,
  WHITE,
  contrast,
  formatFloat32,
  interpolate,
  scaleFor,
  textColorFor,
  type RGB,
} from "../src/colors";

describe("interpolate", () => {
  test("hits the end stops and clamps outside [0, 1]", () => {
    assert.deepEqual(interpolate(VIRIDIS, 0), VIRIDIS[0]);
    assert.deepEqual(interpolate(VIRIDIS, 1), VIRIDIS[VIRIDIS.length - 1]);
    assert.deepEqual(interpolate(VIRIDIS, -3), VIRIDIS[0]);
    assert.deepEqual(interpolate(VIRIDIS, 7), VIRIDIS[VIRIDIS.length - 1]);
  });

  test("is halfway between neighbouring stops", () => {
    const stops: RGB[] = [[0, 0, 0], [200, 100, 50]];
    assert.deepEqual(interpolate(stops, 0.5), [100, 50, 25]);
  });

  test("non-finite positions get the missing colour", () => {
    assert.deepEqual(interpolate(VIRIDIS, Number.NaN), MISSING);
  });
});

describe("scaleFor", () => {
  test("sequential: 0 -> first stop, row max -> last stop", () => {
    const scale = scaleFor([0, 0.5, 2], false);
    assert.equal(scale.max, 2);
    assert.equal(scale.position(0), 0);
    assert.equal(scale.position(1), 0.5);
    assert.equal(scale.position(2), 1);
    assert.deepEqual(scale.color(2), VIRIDIS[VIRIDIS.length - 1]);
    assert.deepEqual(scale.color(0), VIRIDIS[0]);
  });

  test("diverging: symmetric around 0 by max |score|", () => {
    const scale = scaleFor([-4, 1, 2], true);
    assert.equal(scale.max, 4);
    assert.equal(scale.position(0), 0.5);
    assert.equal(scale.position(-4), 0);
    assert.equal(scale.position(4), 1);
    assert.equal(scale.position(2), 0.75);
    assert.deepEqual(scale.color(0), PUOR[5]); // the neutral centre
    assert.deepEqual(scale.color(-4), PUOR[0]); // purple for negative
    assert.deepEqual(scale.color(4), PUOR[PUOR.length - 1]); // orange for positive
  });

  test("each row is normalised by its own max |score|", () => {
    assert.equal(scaleFor([0.001, 0.002], false).position(0.002), 1);
    assert.equal(scaleFor([100, 200], false).position(200), 1);
  });

  test("an all-zero row maps to the neutral end without dividing by zero", () => {
    const seq = scaleFor([0, 0, 0], false);
    assert.equal(seq.max, 0);
    assert.equal(seq.position(0), 0);
    const div = scaleFor([0, 0], true);
    assert.equal(div.position(0), 0.5);
  });

  test("non-finite scores do not set the max and get the missing colour", () => {
    const scale = scaleFor([1, Number.NaN, Number.POSITIVE_INFINITY, 0.5], false);
    assert.equal(scale.max, 1);
    assert.deepEqual(scale.color(Number.NaN), MISSING);
  });
});

describe("text colour", () => {
  test("picks black on light and white on dark backgrounds", () => {
    assert.deepEqual(textColorFor(PUOR[5]!), BLACK);
    assert.deepEqual(textColorFor(VIRIDIS[VIRIDIS.length - 1]!), BLACK);
    assert.deepEqual(textColorFor(VIRIDIS[0]!), WHITE);
    assert.deepEqual(textColorFor(PUOR[0]!), WHITE);
  });

  test("every colour of both maps keeps text at WCAG AA contrast (4.5:1)", () => {
    for (const stops of [VIRIDIS, PUOR]) {
      for (let k = 0; k <= 100; k++) {
        const bg = interpolate(stops, k / 100);
        assert.ok(contrast(bg, textColorFor(bg)) >= 4.5, `contrast too low at ${k}% of the map`);
      }
    }
  });
});

describe("formatFloat32", () => {
  test("shortest decimal that round-trips the float32 (as numpy prints)", () => {
    assert.equal(formatFloat32(Math.fround(0.1)), "0.1");
    assert.equal(formatFloat32(Math.fround(1 / 3)), "0.33333334");
    assert.equal(formatFloat32(Math.fround(-2.5)), "-2.5");
    assert.equal(formatFloat32(1), "1");
    assert.equal(formatFloat32(Math.fround(1e-7)), "1e-7");
    assert.equal(formatFloat32(Math.fround(123456.78)), "123456.78");
  });

  test("round-trips exactly", () => {
    for (const x of [0.1, 0.2, 0.7, 1 / 3, 2 / 3, 1e-5, 12345.678, -0.0042]) {
      const f = Math.fround(x);
      assert.equal(Math.fround(Number(formatFloat32(f))), f);
    }
  });

  test("special values", () => {
    assert.equal(formatFloat32(0), "0");
    assert.equal(formatFloat32(-0), "-0");
    assert.equal(formatFloat32(Number.NaN), "NaN");
    assert.equal(formatFloat32(Number.POSITIVE_INFINITY), "inf");
    assert.equal(formatFloat32(Number.NEGATIVE_INFINITY), "-inf");
  });
});
