/**
 * ImageView's words: the caption saying what the map shows, the hover text
 * of a patch and the status line. Pure (tested in test/image_view.test.ts);
 * every number goes through format.ts, every name is shown as text.
 */
import { formatNumber } from "../core/format";
import { QUERY_ATTENTION, QUERY_ROLLOUT } from "./image_types";
import type { Patch } from "./image_maths";

/** What the view draws now. */
export interface Shown {
  method: string;
  layer: number;
  head: number;
  selected: Patch | null;
  /** Name of the selected patch, or of the explanation's query token when none is. */
  queryName: string;
  target: string;
}

/** The method picker's text for a map. */
export function methodLabel(method: string): string {
  if (method === QUERY_ATTENTION) return "attention of the query";
  if (method === QUERY_ROLLOUT) return "rollout of the query";
  return method;
}

/** Whether `method` is one of the two query maps. */
export function isQueryMode(method: string): boolean {
  return method === QUERY_ATTENTION || method === QUERY_ROLLOUT;
}

/** "patch (2, 3)" and its label when that says something else. */
export function patchName(patch: Patch, label: string): string {
  const plain = `(${patch[0]},${patch[1]})`;
  const name = `patch (${patch[0]}, ${patch[1]})`;
  return label === plain ? name : `${name} ${JSON.stringify(label)}`;
}

/** The head as the captions name it. */
export function headName(head: number): string {
  return head < 0 ? "mean over heads" : `head ${head}`;
}

/** The sentence above the image: which map, for which query or target. */
export function captionText(shown: Shown): string {
  const query = shown.selected ? shown.queryName : `${shown.queryName} (click a patch to make it the query)`;
  if (shown.method === QUERY_ATTENTION) {
    return `Attention of ${query} over the patches, layer ${shown.layer}, ${headName(shown.head)}.`;
  }
  if (shown.method === QUERY_ROLLOUT) {
    return `Attention rollout of ${query} up to layer ${shown.layer}.`;
  }
  const target = shown.target ? ` for the target ${JSON.stringify(shown.target)}` : "";
  return `${shown.method}: relevance of each patch${target}.`;
}

/** What a value of the current map is called in the hover text. */
function valueName(shown: Shown): string {
  if (shown.method === QUERY_ATTENTION) return `attention (layer ${shown.layer}, ${headName(shown.head)})`;
  if (shown.method === QUERY_ROLLOUT) return `rollout (up to layer ${shown.layer})`;
  return shown.method;
}

/**
 * A hovered patch: its position and label, then the map's value, e.g.
 * "patch (2, 3)\nraw 0.0123" (notes in brackets when it is drawn clamped).
 */
export function patchText(shown: Shown, patch: Patch, label: string, value: number | null, notes: readonly string[] = []): string {
  const head = patchName(patch, label);
  if (value === null) return `${head}\n${valueName(shown)}: loading…`;
  const extra = notes.length ? ` (${notes.join("; ")})` : "";
  return `${head}\n${valueName(shown)} ${formatNumber(value)}${extra}`;
}

/** The status line: the selection and every method's score of it, or how to select. */
export function selectionText(
  selected: Patch | null,
  label: string,
  methods: readonly string[],
  scoreOf: (method: number) => number,
): string {
  if (!selected) return "Click a patch to select it and make it the query (arrow keys move, Esc clears).";
  const parts = methods.map((name, i) => `${name} ${formatNumber(scoreOf(i))}`);
  return `Selected ${patchName(selected, label)}${parts.length ? `: ${parts.join(" · ")}` : ""}`;
}
