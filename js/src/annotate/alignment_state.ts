/**
 * AlignmentView's pure logic: read the matrix, say which row and column a
 * pointer or a selection lights, colour a cell, and what a click selects.
 */
import { decodeMatrix, type Matrix } from "../core/buffers";
import { css, interpolate, luminance, VIRIDIS } from "../core/colors";
import type { Binary } from "../core/types";

export interface AlignmentData {
  matrix: Matrix;
  inputs: string[];
  outputs: string[];
}

/** Decode and check the matrix against the token lists. */
export function readAlignment(traits: {
  alignment: Binary | null;
  shape: number[];
  input_tokens: string[];
  output_tokens: string[];
}): AlignmentData {
  const matrix = decodeMatrix(traits.alignment, traits.shape ?? [], "alignment");
  const inputs = traits.input_tokens ?? [];
  const outputs = traits.output_tokens ?? [];
  if (matrix.rows !== outputs.length || matrix.cols !== inputs.length) {
    throw new RangeError(
      `alignment: shape [${matrix.rows}, ${matrix.cols}] does not match ${outputs.length} output and ${inputs.length} input tokens`,
    );
  }
  return { matrix, inputs, outputs };
}

/** A row and a column (-1: none), as hovered or selected. */
export interface Spot {
  row: number;
  col: number;
}

export const NONE: Spot = { row: -1, col: -1 };

/** What a pointer over an element points at: a cell (row and column), an output token (row) or an input token (column). */
export function spotOf(dataset: DOMStringMap): Spot | null {
  const row = dataset.row === undefined ? -1 : Number(dataset.row);
  const col = dataset.col === undefined ? -1 : Number(dataset.col);
  if (!Number.isInteger(row) || !Number.isInteger(col) || (row < 0 && col < 0)) return null;
  return { row, col };
}

/** What a click on `spot` selects: a cell sets both, a token its own axis only (the other cleared). */
export function clickSelection(spot: Spot): { selected_output: number; selected_input: number } {
  return { selected_output: spot.row, selected_input: spot.col };
}

/** The highlight classes of cell (i, j) for the hovered and the selected spots. */
export function cellClasses(i: number, j: number, hover: Spot, selected: Spot): string[] {
  const out: string[] = [];
  if (hover.row === i || hover.col === j) out.push("attnw-align-hover");
  if (selected.row === i || selected.col === j) out.push("attnw-align-lit");
  if (selected.row === i && selected.col === j) out.push("attnw-align-selected");
  return out;
}

/** Fill and text colours of a weight in [0, 1] (viridis; dark text on light cells). */
export function cellColor(value: number): { fill: string; text: string } {
  const t = Number.isFinite(value) ? Math.min(1, Math.max(0, value)) : 0;
  const rgb = interpolate(VIRIDIS, t);
  return { fill: css(rgb), text: luminance(rgb) > 0.35 ? "#000" : "#fff" };
}
