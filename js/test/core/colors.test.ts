import assert from "node:assert/strict";
import { describe, test } from "node:test";

import styles from "../../src/attention/attention.css";
import {
  BLACK,
  DARK_BACKGROUNDS,
  HEAD_COLORS_DARK,
  HEAD_COLORS_LIGHT,
  LIGHT_BACKGROUNDS,
  MISSING,
  PUOR,
  VIRIDIS,
  WHITE,
  contrast,
  formatFloat32,
  headColor,
  interpolate,
  isDarkText,
  parseCssRgb,
  parseHex,
  scaleFor,
  textColorFor,
  type RGB,
} from "../../src/core/colors";

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

describe("head palettes: WCAG contrast in light and dark themes", () => {
  const palettes = [
    ["light", HEAD_COLORS_LIGHT, LIGHT_BACKGROUNDS],
    ["dark", HEAD_COLORS_DARK, DARK_BACKGROUNDS],
  ] as const;

  test("every head colour is a line: >= 3:1 against each background of its theme", () => {
    for (const [theme, colors, backgrounds] of palettes) {
      for (const color of colors) {
        for (const background of backgrounds) {
          const ratio = contrast(parseHex(color), parseHex(background));
          assert.ok(ratio >= 3, `${theme}: head ${color} on ${background}: ${ratio.toFixed(2)}:1`);
        }
      }
    }
  });

  test("head 3 (Okabe-Ito yellow) no longer vanishes on white", () => {
    assert.ok(contrast(parseHex("#f0e442"), WHITE) < 1.5, "the old colour was the problem");
    assert.ok(contrast(parseHex(headColor(3)), WHITE) >= 3);
  });

  test("head box labels (black or white on the head's colour) read at >= 4.5:1", () => {
    for (const [theme, colors] of palettes) {
      for (const color of colors) {
        const background = parseHex(color);
        const ratio = contrast(textColorFor(background), background);
        assert.ok(ratio >= 4.5, `${theme}: label on ${color}: ${ratio.toFixed(2)}:1`);
      }
    }
    // Navy and dark green carry white labels, not black.
    assert.deepEqual(textColorFor(parseHex("#332288")), WHITE);
    assert.deepEqual(textColorFor(parseHex("#117733")), WHITE);
  });

  test("distinct colours for the first 17 heads of each theme, then repeating", () => {
    for (const [, colors] of palettes) assert.equal(new Set(colors).size, colors.length);
    assert.equal(headColor(0, true), HEAD_COLORS_DARK[0]);
    assert.equal(headColor(HEAD_COLORS_LIGHT.length), HEAD_COLORS_LIGHT[0]);
    assert.equal(headColor(-1), HEAD_COLORS_LIGHT[HEAD_COLORS_LIGHT.length - 1]);
  });

  test("the forced themes' text colours read at >= 4.5:1 on their background", () => {
    const expand = (c: string): string => (c.length === 4 ? `#${[...c.slice(1)].map((d) => d + d).join("")}` : c);
    for (const theme of ["light", "dark"]) {
      const block = new RegExp(`\\.attnw-attention\\[data-theme="${theme}"\\] \\{([^}]*)\\}`).exec(styles)?.[1];
      assert.ok(block, `attention.css has a ${theme} block`);
      const value = (name: string): string => {
        const found = new RegExp(`--attnw-${name}:\\s*(#[0-9a-f]+);`, "i").exec(block!)?.[1];
        assert.ok(found, `${theme}: --attnw-${name}`);
        return expand(found!);
      };
      const bg = parseHex(value("bg"));
      for (const name of ["fg", "fg-muted"]) {
        const ratio = contrast(parseHex(value(name)), bg);
        assert.ok(ratio >= 4.5, `${theme}: --attnw-${name} on --attnw-bg: ${ratio.toFixed(2)}:1`);
      }
      assert.ok(contrast(parseHex(value("accent")), bg) >= 3, `${theme}: the accent (focus ring, pin)`);
      // And the head palette made for that background is the one the view picks.
      const palette = theme === "dark" ? HEAD_COLORS_DARK : HEAD_COLORS_LIGHT;
      assert.equal(isDarkText(`rgb(${parseHex(value("fg")).join(", ")})`), theme === "dark");
      for (const color of palette) assert.ok(contrast(parseHex(color), bg) >= 3, `${theme}: ${color}`);
    }
  });

  test("colour parsing: what getComputedStyle returns, bad input refused", () => {
    assert.deepEqual(parseCssRgb("rgb(232, 232, 232)"), [232, 232, 232]);
    assert.deepEqual(parseCssRgb("rgba(0, 0, 0, 0.87)"), [0, 0, 0]);
    assert.equal(parseCssRgb(""), null);
    assert.equal(isDarkText(""), false); // unknown: light theme
    assert.equal(isDarkText("rgb(20, 20, 20)"), false);
    assert.throws(() => parseHex("#abc"), /expected "#rrggbb", got "#abc"/);
  });
});
