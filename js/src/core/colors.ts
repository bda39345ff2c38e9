/**
 * Colour maps and score scales, all colour-blind safe.
 *
 * - Sequential (non-negative scores): viridis, dark purple (0) to yellow (max).
 * - Diverging (signed scores): PuOr, purple (most negative) through near-white
 *   (0) to orange (most positive), centred at 0 with a symmetric scale.
 *
 * Each row of scores is normalised by its own max |score|.
 */

export type RGB = readonly [number, number, number];

function hex(code: string): RGB {
  const n = Number.parseInt(code.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** matplotlib's viridis at 10 evenly spaced positions. */
export const VIRIDIS: readonly RGB[] = [
  "#440154", "#482878", "#3e4989", "#31688e", "#26828e",
  "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725",
].map(hex);

/** ColorBrewer PuOr (11 classes), ordered purple (t=0) -> orange (t=1). */
export const PUOR: readonly RGB[] = [
  "#2d004b", "#542788", "#8073ac", "#b2abd2", "#d8daeb", "#f7f7f7",
  "#fee0b6", "#fdb863", "#e08214", "#b35806", "#7f3b08",
].map(hex);

/** Colour of values that are not finite (NaN, +-Infinity). */
export const MISSING: RGB = [160, 160, 160];

/** Linear interpolation between evenly spaced stops; t is clamped to [0, 1]. */
export function interpolate(stops: readonly RGB[], t: number): RGB {
  if (!Number.isFinite(t)) return MISSING;
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = stops[i] as RGB;
  const b = stops[i + 1] as RGB;
  return [
    Math.round(a[0] + (b[0] - a[0]) * f),
    Math.round(a[1] + (b[1] - a[1]) * f),
    Math.round(a[2] + (b[2] - a[2]) * f),
  ];
}

/** The colour scale of one row of scores. */
export interface Scale {
  /** true: diverging map centred at 0; false: sequential from 0. */
  signed: boolean;
  /** max |score| over the finite scores of the row (0 when none is non-zero). */
  max: number;
  /** Position in [0, 1] on the colour map (0.5 = zero for diverging); NaN for non-finite. */
  position(value: number): number;
  /** Background colour of a score. */
  color(value: number): RGB;
  /** The map's stops (for a legend gradient). */
  stops: readonly RGB[];
}

/** Scale for a row: normalised by the row's max |score|. */
export function scaleFor(values: ArrayLike<number>, signed: boolean): Scale {
  let max = 0;
  for (let i = 0; i < values.length; i++) {
    const v = Math.abs(values[i] as number);
    if (Number.isFinite(v) && v > max) max = v;
  }
  const stops = signed ? PUOR : VIRIDIS;
  const position = (value: number): number => {
    if (!Number.isFinite(value)) return Number.NaN;
    const r = max > 0 ? value / max : 0;
    return signed ? 0.5 + 0.5 * Math.max(-1, Math.min(1, r)) : Math.max(0, Math.min(1, r));
  };
  return {
    signed,
    max,
    position,
    color: (value: number) => interpolate(stops, position(value)),
    stops,
  };
}

/** CSS colour string. */
export function css(rgb: RGB): string {
  return `rgb(${rgb[0]}, ${rgb[1]}, ${rgb[2]})`;
}

/** CSS linear-gradient (left to right) through a map's stops. */
export function gradient(stops: readonly RGB[]): string {
  return `linear-gradient(to right, ${stops.map(css).join(", ")})`;
}

/** WCAG 2 relative luminance of an sRGB colour, in [0, 1]. */
export function luminance(rgb: RGB): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
}

/** WCAG 2 contrast ratio of two colours, in [1, 21]. */
export function contrast(a: RGB, b: RGB): number {
  const la = luminance(a);
  const lb = luminance(b);
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

export const BLACK: RGB = [0, 0, 0];
export const WHITE: RGB = [255, 255, 255];

/** Black or white, whichever contrasts more with the background. */
export function textColorFor(background: RGB): RGB {
  return contrast(background, BLACK) >= contrast(background, WHITE) ? BLACK : WHITE;
}

/**
 * Head colours (HeadView lines and head boxes, ModelView thumbnails): the
 * hues of Okabe & Ito's eight (black swapped for grey), then Paul Tol's
 * "muted" set, each moved in HSL lightness only as far as WCAG's 3:1
 * non-text contrast needs against the view's background: one set for light
 * backgrounds (white .. #f5f5f5: Okabe-Ito's yellow becomes olive), one for
 * dark ones (#111 .. #2b2b2b: JupyterLab's #212121, VS Code's #1e1e1e;
 * Tol's indigo becomes violet). js/test/colors.test.ts checks every colour
 * against those backgrounds. Beyond 17 heads the colours repeat; head boxes
 * also carry the head's number.
 */
export const HEAD_COLORS_LIGHT: readonly string[] = [
  "#b87f00", "#1c93d7", "#009e73", "#978e0c", "#0072b2", "#d55e00", "#c86ea0", "#8b8b8b",
  "#cc6677", "#332288", "#9e8a27", "#117733", "#2a8a9e", "#882255", "#3d9a8a", "#8f8f30", "#aa4499",
];
export const HEAD_COLORS_DARK: readonly string[] = [
  "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#007cc1", "#d55e00", "#cc79a7", "#999999",
  "#cc6677", "#7965d9", "#ddcc77", "#14893b", "#88ccee", "#ce3d85", "#44aa99", "#999933", "#b84da6",
];
/** The backgrounds each head palette is made for (and tested against). */
export const LIGHT_BACKGROUNDS: readonly string[] = ["#ffffff", "#f5f5f5"];
export const DARK_BACKGROUNDS: readonly string[] = ["#111111", "#1e1e1e", "#212121", "#2b2b2b"];

/** Colour of the head at position `i` (positions, not ids, so colours stay stable per view). */
export function headColor(i: number, dark = false): string {
  const palette = dark ? HEAD_COLORS_DARK : HEAD_COLORS_LIGHT;
  return palette[((i % palette.length) + palette.length) % palette.length] as string;
}

/** "#rrggbb" -> RGB. */
export function parseHex(code: string): RGB {
  if (!/^#[0-9a-f]{6}$/i.test(code)) throw new RangeError(`parseHex: expected "#rrggbb", got ${JSON.stringify(code)}`);
  return hex(code);
}

/** "rgb(r, g, b)" / "rgba(r, g, b, a)" (getComputedStyle's form) -> RGB, or null for anything else. */
export function parseCssRgb(text: string): RGB | null {
  const m = /^rgba?\(\s*(\d+(?:\.\d+)?)[,\s]+(\d+(?:\.\d+)?)[,\s]+(\d+(?:\.\d+)?)/.exec(text.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/**
 * Whether a view is on a dark background, judged from its text colour (its
 * background may be transparent, showing the host's): light text means a
 * dark theme. Unknown colours count as light.
 */
export function isDarkText(foreground: string): boolean {
  const rgb = parseCssRgb(foreground);
  return rgb !== null && luminance(rgb) > 0.4;
}

/**
 * The shortest decimal that reads back as the same float32, as numpy prints
 * it (e.g. 0.1 for float32(0.1), not 0.10000000149011612).
 */
export function formatFloat32(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "inf";
  if (value === -Infinity) return "-inf";
  if (value === 0) return Object.is(value, -0) ? "-0" : "0";
  const target = Math.fround(value);
  for (let p = 1; p <= 9; p++) {
    const text = target.toPrecision(p);
    if (Math.fround(Number(text)) === target) return tidy(text);
  }
  return tidy(target.toPrecision(9));
}

/** "1.50e-7" -> "1.5e-7", "2.500" -> "2.5", "1.0e+5" -> "1e+5". */
function tidy(text: string): string {
  const [mantissa = text, exponent] = text.split("e");
  const m = mantissa.includes(".") ? mantissa.replace(/0+$/, "").replace(/\.$/, "") : mantissa;
  return exponent === undefined ? m : `${m}e${exponent}`;
}
