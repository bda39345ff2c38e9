import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { MINUS, formatNumber, formatPercent, formatRange } from "../../src/core/format";

// Expected strings are worked out by hand from the rules in format.ts.
describe("formatNumber", () => {
  test("the issue's raw numbers", () => {
    assert.equal(formatNumber(0.41894618), "0.419");
    assert.equal(formatNumber(1.0000008), "1");
    assert.equal(formatNumber(1.8924047e-9), "1.89e-9");
    assert.equal(formatNumber(0.09724), "0.0972");
    assert.equal(formatNumber(0.049329925), "0.0493");
  });

  test("zero, signs and non-finite values", () => {
    assert.equal(formatNumber(0), "0");
    assert.equal(formatNumber(-0), "0");
    assert.equal(formatNumber(-0.5), `${MINUS}0.5`);
    assert.equal(formatNumber(-2.5e-7), `${MINUS}2.5e-7`);
    assert.equal(formatNumber(Number.NaN), "NaN");
    assert.equal(formatNumber(Infinity), "∞");
    assert.equal(formatNumber(-Infinity), `${MINUS}∞`);
  });

  test("trailing zeros trimmed, integers kept whole", () => {
    assert.equal(formatNumber(2.5), "2.5");
    assert.equal(formatNumber(3), "3");
    assert.equal(formatNumber(120), "120");
    assert.equal(formatNumber(0.1), "0.1");
    assert.equal(formatNumber(123.456), "123");
    assert.equal(formatNumber(12.345678), "12.3");
  });

  test("thousands separators; big numbers keep their integer digits", () => {
    assert.equal(formatNumber(1234), "1,234");
    assert.equal(formatNumber(123456.7), "123,457");
    assert.equal(formatNumber(-99999.4), `${MINUS}99,999`);
    assert.equal(formatNumber(1000), "1,000");
  });

  test("scientific notation only below 1e-3 and from 1e6", () => {
    assert.equal(formatNumber(0.001), "0.001");
    assert.equal(formatNumber(0.00123456), "0.00123");
    assert.equal(formatNumber(0.000999), "9.99e-4");
    assert.equal(formatNumber(1e6), "1e6");
    assert.equal(formatNumber(2.5e6), "2.5e6");
    assert.equal(formatNumber(3e-45), "3e-45");
    assert.equal(formatNumber(1.7976931348623157e308), "1.8e308");
  });

  test("the notation follows the rounded value", () => {
    assert.equal(formatNumber(0.00099996), "0.001"); // rounds up into plain decimals
    assert.equal(formatNumber(999999.7), "1e6"); // rounds up into scientific
    assert.equal(formatNumber(9.996), "10");
    assert.equal(formatNumber(0.09996), "0.1");
  });

  test("ties round half away from zero on the exact binary value", () => {
    assert.equal(formatNumber(1.125), "1.13"); // 1.125 is exact in binary
    assert.equal(formatNumber(-1.125), `${MINUS}1.13`);
    assert.equal(formatNumber(1.005, { digits: 3 }), "1"); // 1.00499999999999989...
  });

  test("digits", () => {
    assert.equal(formatNumber(Math.PI, { digits: 1 }), "3");
    assert.equal(formatNumber(Math.PI, { digits: 6 }), "3.14159");
    assert.throws(() => formatNumber(1, { digits: 0 }), /digits must be an integer 1\.\.15, got 0/);
    assert.throws(() => formatNumber(1, { digits: 2.5 }), /got 2\.5/);
  });
});

describe("formatRange and formatPercent", () => {
  test("legend ranges", () => {
    assert.equal(formatRange(0, 0.41894618), "0 … 0.419");
    assert.equal(formatRange(-0.3, 0.3, { middle: 0 }), `${MINUS}0.3 … 0 … 0.3`);
    assert.equal(formatRange(0.0123, 1.0000008), "0.0123 … 1");
  });

  test("percentages", () => {
    assert.equal(formatPercent(0.1234), "12.3%");
    assert.equal(formatPercent(1), "100%");
    assert.equal(formatPercent(0), "0%");
  });
});
