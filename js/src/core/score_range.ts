/**
 * Which scores set a colour scale. Rollout, grad_attention or chefer2021
 * give the query token (and CLS/BOS) a score many times any word's, so a
 * scale over every token paints one bright cell and the words uniformly
 * dark. By default the range is therefore computed over the words only:
 * special tokens and the query position are still drawn, clamped to the
 * range and marked, but do not set it ("all" puts them back).
 */
import { scaleFor, type Scale } from "./colors";
import { formatRange } from "./format";

export type ScaleMode = "words" | "all";

/**
 * Special tokens as tokenizers write them: [CLS], [SEP], [PAD], [MASK],
 * <s>, </s>, <pad>, <extra_id_0>, <|endoftext|>, <|im_start|>... (not byte
 * tokens such as <0x0A>, which stand for text). A word in the text never
 * looks like this after attnwidget's readable-token pass (which keeps
 * special tokens as they are and strips markers from the others). [UNK] and
 * <unk> stand for a word of the text, so they count as words.
 */
const SPECIAL = /^(\[[A-Z][A-Z0-9_]*\]|<\/?[A-Za-z_][A-Za-z0-9_]*>|<\|[^|<>\s]+\|>)$/;
const WORD_PLACEHOLDERS = new Set(["[UNK]", "<unk>"]);

export function isSpecialToken(token: string): boolean {
  return SPECIAL.test(token) && !WORD_PLACEHOLDERS.has(token);
}

export interface ScoreRange {
  scale: Scale;
  /** What set the range: "words" (specials and `focus` left out) or "all". */
  covers: ScaleMode;
  /** Indices drawn but left out of the range (empty for "all"). */
  excluded: number[];
  /** True where a value lies outside the colour range (drawn clamped). */
  beyond(value: number): boolean;
}

/**
 * The colour scale of one row of scores. `focus` is the position the scores
 * are relative to (the query, a selected node), -1 for none. When nothing is
 * left to set the range (every token special, or all words 0), the scale
 * falls back to every token, so a row never goes blank. `words` (optional,
 * mode "words" only): which positions are words, when the caller knows
 * better than the token text (CompareView's compared tokens, from the
 * tokenizer); else special-looking tokens and `focus` are left out.
 */
export function scoreRange(
  values: ArrayLike<number>,
  tokens: readonly string[],
  options: { signed: boolean; mode: ScaleMode; focus: number; words?: readonly boolean[] },
): ScoreRange {
  const excluded: number[] = [];
  if (options.mode === "words") {
    const words = options.words;
    for (let j = 0; j < values.length; j++) {
      const left = words ? !words[j] : j === options.focus || isSpecialToken(tokens[j] ?? "");
      if (left) excluded.push(j);
    }
  }
  const left = new Set(excluded);
  const kept: number[] = [];
  for (let j = 0; j < values.length; j++) if (!left.has(j)) kept.push(values[j] as number);
  let scale = scaleFor(kept, options.signed);
  let covers: ScaleMode = options.mode;
  if (excluded.length > 0 && !(scale.max > 0)) {
    scale = scaleFor(values, options.signed);
    covers = "all";
    excluded.length = 0;
  }
  const max = scale.max;
  return {
    scale,
    covers,
    excluded,
    // A float32 score equal to the max must not read as beyond it.
    beyond: (value: number) => Number.isFinite(value) && (Math.abs(value) > max * (1 + 1e-6) || (!scale.signed && value < 0)),
  };
}

/** The range as a legend shows it: "0 … 0.419" or "−0.3 … 0 … 0.3". */
export function rangeText(scale: Scale): string {
  return scale.signed ? formatRange(-scale.max, scale.max, { middle: 0 }) : formatRange(0, scale.max);
}

/**
 * What a range covers, in words: "range over words; [CLS], [SEP] and the
 * query excluded" or "range over all tokens". `focusName` names the focus
 * position ("the query", "the selected token").
 */
export function coverageText(range: ScoreRange, tokens: readonly string[], focus: number, focusName: string): string {
  if (range.covers === "all") return "range over all tokens";
  const names: string[] = [];
  for (const j of range.excluded) {
    if (j === focus) continue;
    const token = tokens[j] ?? "";
    if (!names.includes(token)) names.push(token);
  }
  if (range.excluded.includes(focus)) names.push(focusName);
  if (names.length === 0) return "range over words";
  const list = names.length === 1 ? names[0]! : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  return `range over words; ${list} excluded`;
}
