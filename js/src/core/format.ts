/**
 * The one number formatter for everything a person reads in the views
 * (legends, tooltips, status lines, notes). Full precision stays in Python;
 * here a score reads at a glance: "0.419", not "0.41894618".
 *
 * Rules (attnwidget/views/core/format.py implements the same ones; the golden
 * fixture js/test/fixtures/format.json holds both sides to the same text):
 * - `digits` significant digits (default 3), trailing zeros trimmed:
 *   1.0000008 -> "1", 0.41894618 -> "0.419".
 * - Numbers that round to 10^digits or more keep every integer digit
 *   (123456.7 -> "123,457"): rounding them further would hide what is there.
 * - Thousands separators (",") from 1,000 up.
 * - Scientific notation only where plain decimals would be long or
 *   misleading: |x| < 1e-3 or |x| >= 1e6 after rounding, as "1.89e-9",
 *   "2.5e6" (no "+", trimmed mantissa).
 * - 0 (and -0) is "0"; a negative number starts with the minus sign U+2212
 *   ("−0.5"), which lines up with digits in proportional fonts; the
 *   exponent keeps the ASCII "-" of scientific notation ("1.89e-9").
 * - NaN is "NaN", ±Infinity "∞" / "−∞".
 * Rounding is half away from zero on the exact binary value, as
 * Number.prototype.toPrecision and toFixed do.
 */

/** U+2212 MINUS SIGN. */
export const MINUS = "\u2212";

export interface FormatOptions {
  /** Significant digits, 1..15 (default 3). */
  digits?: number;
}

/** Format one number for a person (see the rules above). */
export function formatNumber(value: number, options: FormatOptions = {}): string {
  const digits = options.digits ?? 3;
  if (!Number.isInteger(digits) || digits < 1 || digits > 15) {
    throw new RangeError(`formatNumber: digits must be an integer 1..15, got ${String(digits)}`);
  }
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "∞";
  if (value === -Infinity) return `${MINUS}∞`;
  if (value === 0) return "0";
  const sign = value < 0 ? MINUS : "";
  const magnitude = Math.abs(value);
  // Round first, then choose the notation from the rounded value: 0.0009996
  // rounds to 0.001 and reads "0.001"; 999999.7 rounds to 1e6 and reads "1e6".
  const [mantissa, exponentText] = magnitude.toExponential(digits - 1).split("e");
  const exponent = Number(exponentText);
  if (exponent < -3 || exponent >= 6) return `${sign}${trimZeros(mantissa!)}e${exponent}`;
  const decimals = Math.max(0, digits - 1 - exponent);
  const fixed = trimZeros(magnitude.toFixed(decimals));
  return sign + groupThousands(fixed);
}

/**
 * A legend's range: "0 … 0.419", "−0.3 … 0.3", or with a middle value
 * (a diverging map's centre) "−0.3 … 0 … 0.3".
 */
export function formatRange(lo: number, hi: number, options: FormatOptions & { middle?: number } = {}): string {
  const parts = [lo, ...(options.middle === undefined ? [] : [options.middle]), hi];
  return parts.map((x) => formatNumber(x, options)).join(" … ");
}

/** A share in [0, 1] as a percentage: 0.1234 -> "12.3%". */
export function formatPercent(share: number, options: FormatOptions = {}): string {
  return `${formatNumber(share * 100, options)}%`;
}

/** "2.500" -> "2.5", "3.000" -> "3", "120" -> "120" (integers untouched). */
function trimZeros(text: string): string {
  return text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
}

/** "1234567.5" -> "1,234,567.5". */
function groupThousands(text: string): string {
  const dot = text.indexOf(".");
  const whole = dot < 0 ? text : text.slice(0, dot);
  const rest = dot < 0 ? "" : text.slice(dot);
  return whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",") + rest;
}
