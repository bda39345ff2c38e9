/**
 * FlowView's words: how a node, the selection and the thing under the
 * pointer are described (status line and tooltip). Pure functions of the
 * store's data, the geometry and what was drawn, so they are tested in node.
 */
import { formatNumber, formatPercent } from "../core/format";
import { edgeLayerAt, nearestEdge, nodeAt, type FlowGeometry, type PathData } from "./flow_paths";
import type { Drawn } from "./flow_draw";
import type { FlowData, Selection } from "./flow_state";

export const HINT = "Click a token (left: input, right: top layer) or a node to see its paths; hover lines for numbers.";

/** "input #2 "keys"", "layer 3 #0 …" or "top layer #…". */
export function describeNode(data: FlowData, layer: number, token: number): string {
  const where = layer === 0 ? "input" : layer === data.layers ? "top layer" : `layer ${layer}`;
  return `${where} #${token} ${JSON.stringify(data.tokens[token])}`;
}

/** The status line for a selection (the hint when nothing is selected). */
export function describeSelection(data: FlowData | null, sel: Selection): string {
  if (!data || sel.token < 0) return HINT;
  const parts = [`Selected ${describeNode(data, sel.layer, sel.token)}.`];
  if (sel.layer > 0) parts.push("Down: how its information reaches the input tokens (left, coloured by score).");
  if (sel.layer < data.layers) parts.push("Up: which top nodes it reaches (right, coloured).");
  return parts.join(" ");
}

/**
 * What is under (x, y) on the canvas: a node (with its path value), else the
 * nearest drawn line (Â, and its path value and share when it is on the
 * paths); "" for nothing.
 */
export function hoverText(data: FlowData, g: FlowGeometry, paths: PathData | null, drawn: Drawn, x: number, y: number): string {
  const { n } = data;
  const node = nodeAt(g, x, y);
  if (node) {
    const value = paths ? (paths.nodes[node.layer * n + node.token] as number) : Number.NaN;
    const extra = paths && Number.isFinite(value) ? ` · ${paths.method} ${formatNumber(value)}` : "";
    return `Node ${describeNode(data, node.layer, node.token)}${extra} (click to select)`;
  }
  const at = edgeLayerAt(g, x);
  if (!at) return "";
  const pathMap = drawn.paths[at.layer - 1];
  const pathEdge = pathMap && pathMap.size ? nearestEdge(g, Uint32Array.from(pathMap.keys()), x, y) : null;
  const lineEdge = nearestEdge(g, drawn.edges[at.layer - 1] ?? new Uint32Array(0), x, y);
  // The nearest line; a path line wins unless another line is clearly nearer.
  const edge = pathEdge && (!lineEdge || pathEdge.distance <= lineEdge.distance + 1.5) ? pathEdge : lineEdge;
  if (!edge) return "";
  const i = Math.floor(edge.flat / n);
  const j = edge.flat - i * n;
  const weight = data.adjusted[at.layer - 1]?.[edge.flat] as number | undefined;
  const token = (k: number): string => `#${k} ${JSON.stringify(data.tokens[k])}`;
  let text = `Layer ${at.layer}: ${token(i)} → ${token(j)} (node layers ${at.layer} → ${at.layer - 1}): Â = ${formatNumber(weight ?? Number.NaN)}`;
  if (paths && pathMap?.has(edge.flat)) {
    const value = pathMap.get(edge.flat)!;
    const total = paths.edges[at.layer - 1]!.total;
    const share = total > 0 ? Math.abs(value) / total : 0;
    text += ` · ${paths.method} ${formatNumber(value)} (${formatPercent(share)} of this layer)`;
  }
  return text;
}
