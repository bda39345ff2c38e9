/**
 * Pure helpers of FlowView (no DOM; unit-tested in node): the residual
 * adjustment, the path contributions of raw attention and rollout (computed
 * in the page), decoding the kernel's path replies, the diagram's geometry
 * and hit testing (lines grouped by strength: flow_lines.ts).
 *
 * Conventions (as attnwidget/views/flow/_paths.py): node (l, i) is token i after
 * attention layer l; edge layer l (1 … L) links (l, i) to (l − 1, j) and is
 * stored row-major as i·n + j; `maps[l − 1]` is layer l's (n × n) matrix.
 */
import { decodeArray, decodeFloats } from "../core/buffers";
import type { PathsReply } from "./flow_messages";
import type { Binary } from "../core/types";

/** Â = 0.5·W + 0.5·I with rows re-normalised (a zero row stays zero), as Python's add_residual. */
export function residualAdjust(fused: ArrayLike<number>, n: number): Float32Array {
  const out = new Float32Array(n * n);
  for (let i = 0; i < n; i++) {
    let sum = 0;
    for (let j = 0; j < n; j++) {
      const v = 0.5 * (fused[i * n + j] as number) + (i === j ? 0.5 : 0);
      out[i * n + j] = v;
      sum += v;
    }
    if (sum > 0 && sum !== 1) for (let j = 0; j < n; j++) out[i * n + j] = (out[i * n + j] as number) / sum;
    else if (!(sum > 0)) out.fill(0, i * n, (i + 1) * n);
  }
  return out;
}

/** Dense paths: nodes (L+1)·n and one (n × n) contribution array per edge layer. */
export interface DensePaths {
  nodes: Float64Array;
  edges: Float64Array[];
}

function emptyPaths(layers: number, n: number, layer: number, token: number): DensePaths {
  checkNode(layers, n, layer, token);
  const nodes = new Float64Array((layers + 1) * n);
  nodes[layer * n + token] = 1;
  return { nodes, edges: Array.from({ length: layers }, () => new Float64Array(n * n)) };
}

function checkNode(layers: number, n: number, layer: number, token: number): void {
  if (!(Number.isInteger(layer) && layer >= 0 && layer <= layers)) throw new RangeError(`layer ${layer} out of range 0..${layers}`);
  if (!(Number.isInteger(token) && token >= 0 && token < n)) throw new RangeError(`token ${token} out of range 0..${n - 1}`);
}

/**
 * Paths of a product of per-layer matrices (rollout with maps = Â).
 * Down from (s, t): m_s = e_t, edge (l,i)→(l−1,j) carries m_l[i]·M_l[i,j],
 * m_{l−1} = m_l·M_l. Up: u_s = e_t, the edge carries M_l[i,j]·u_{l−1}[j],
 * u_l = M_l·u_{l−1}.
 */
export function productPaths(maps: readonly ArrayLike<number>[], n: number, layer: number, token: number): DensePaths {
  const layers = maps.length;
  const out = emptyPaths(layers, n, layer, token);
  const { nodes, edges } = out;
  for (let l = layer; l >= 1; l--) {
    const m = maps[l - 1]!;
    const e = edges[l - 1]!;
    const above = l * n;
    const below = (l - 1) * n;
    for (let i = 0; i < n; i++) {
      const mass = nodes[above + i] as number;
      if (mass === 0) continue;
      for (let j = 0; j < n; j++) {
        const c = mass * (m[i * n + j] as number);
        e[i * n + j] = c;
        nodes[below + j] = (nodes[below + j] as number) + c;
      }
    }
  }
  for (let l = layer + 1; l <= layers; l++) {
    const m = maps[l - 1]!;
    const e = edges[l - 1]!;
    const below = (l - 1) * n;
    const above = l * n;
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (let j = 0; j < n; j++) {
        const content = nodes[below + j] as number;
        if (content === 0) continue;
        const c = (m[i * n + j] as number) * content;
        e[i * n + j] = c;
        sum += c;
      }
      nodes[above + i] = sum;
    }
  }
  return out;
}

/**
 * Raw attention's paths (`fused` = W_l, no residual): down from (s, t) the
 * edges (s,t)→(s−1,j) = W_s[t,j] and straight lanes below carrying the same
 * amounts; up from (s, t) a lane to (L−1, t), then W_L[i, t] for every top node i.
 */
export function rawPaths(fused: readonly ArrayLike<number>[], n: number, layer: number, token: number): DensePaths {
  const layers = fused.length;
  const out = emptyPaths(layers, n, layer, token);
  const { nodes, edges } = out;
  if (layer > 0) {
    const w = fused[layer - 1]!;
    for (let j = 0; j < n; j++) {
      const v = w[token * n + j] as number;
      edges[layer - 1]![token * n + j] = v;
      for (let l = layer - 1; l >= 1; l--) edges[l - 1]![j * n + j] = v;
      for (let l = 0; l < layer; l++) nodes[l * n + j] = v;
    }
  }
  if (layer < layers) {
    for (let l = layer + 1; l < layers; l++) {
      edges[l - 1]![token * n + token] = 1;
      nodes[l * n + token] = 1;
    }
    const w = fused[layers - 1]!;
    for (let i = 0; i < n; i++) {
      const v = w[i * n + token] as number;
      edges[layers - 1]![i * n + token] = v;
      nodes[layers * n + i] = v;
    }
  }
  return out;
}

/** The edges of one edge layer that matter: flat indices i·n + j, values, and Σ|value| of all. */
export interface EdgeLayer {
  index: Uint32Array;
  value: Float32Array;
  total: number;
}

/** Paths as the view keeps them, from the page or the kernel. */
export interface PathData {
  method: string;
  layer: number;
  token: number;
  signed: boolean;
  layers: number;
  n: number;
  /** (L+1)·n node values. */
  nodes: Float32Array;
  /** edges[l − 1]: edge layer l. */
  edges: EdgeLayer[];
  note: string;
  source: "page" | "kernel";
  /** False when the paths are the same whichever node is selected (lrp: they explain the target). */
  perSelection: boolean;
}

/** Edges whose |value| is at most this share of their layer's total are dropped (as in Python). */
export const EDGE_FLOOR = 1e-6;

/** Keep the edges of a dense layer above `floor` × its Σ|value|. */
export function sparsify(dense: ArrayLike<number>, floor = EDGE_FLOOR): EdgeLayer {
  let total = 0;
  for (let k = 0; k < dense.length; k++) total += Math.abs(dense[k] as number);
  const limit = floor * total;
  let count = 0;
  for (let k = 0; k < dense.length; k++) if (Math.abs(dense[k] as number) > limit) count++;
  const index = new Uint32Array(count);
  const value = new Float32Array(count);
  let c = 0;
  for (let k = 0; k < dense.length; k++) {
    const v = dense[k] as number;
    if (Math.abs(v) > limit) {
      index[c] = k;
      value[c] = v;
      c++;
    }
  }
  return { index, value, total };
}

/** Dense page-side paths as PathData. */
export function toPathData(
  dense: DensePaths,
  meta: { method: string; layer: number; token: number; n: number; note: string },
): PathData {
  return {
    ...meta,
    signed: false,
    layers: dense.edges.length,
    nodes: Float32Array.from(dense.nodes),
    edges: dense.edges.map((e) => sparsify(e)),
    source: "page",
    perSelection: true,
  };
}

/** Decode the kernel's `paths` reply (see flow_messages.ts PathsReply) with the wire decoder. */
export function decodePathsReply(meta: PathsReply, buffers: readonly Binary[]): PathData {
  const [layers, n] = meta.shape;
  if (buffers.length < 4) throw new RangeError(`paths reply has ${buffers.length} buffers, expected 4`);
  if (meta.counts.length !== layers) throw new RangeError("paths reply: counts do not match the layers");
  const sum = meta.counts.reduce((a, b) => a + b, 0);
  const nodes = decodeFloats(buffers[0]!, { dtype: "float32", shape: [layers + 1, n] }, "nodes");
  const index = decodeArray(buffers[1]!, { dtype: "uint32", shape: [sum] }, "edge index");
  const value = decodeFloats(buffers[2]!, { dtype: "float32", shape: [sum] }, "edge values");
  const totals = decodeFloats(buffers[3]!, { dtype: "float32", shape: [layers] }, "totals");
  const edges: EdgeLayer[] = [];
  let start = 0;
  for (let l = 0; l < layers; l++) {
    const count = meta.counts[l]!;
    for (let k = start; k < start + count; k++) {
      if ((index[k] as number) >= n * n) throw new RangeError(`edge index ${index[k]} out of range for n=${n}`);
    }
    edges.push({ index: Uint32Array.from(index.subarray(start, start + count)), value: value.slice(start, start + count), total: totals[l] as number });
    start += count;
  }
  return {
    method: meta.method,
    layer: meta.layer,
    token: meta.token,
    signed: Boolean(meta.signed),
    layers,
    n,
    nodes: Float32Array.from(nodes),
    edges,
    note: String(meta.note ?? ""),
    source: "kernel",
    // Absent (an older kernel): paths from the selection, as before.
    perSelection: meta.per_selection !== false,
  };
}

// -- geometry ------------------------------------------------------------------

/** Where everything is on the canvas (CSS px). */
export interface FlowGeometry {
  layers: number;
  n: number;
  /** Horizontal distance between node layers. */
  colGap: number;
  rowHeight: number;
  /** Left/right margin of the node columns. */
  pad: number;
  /** Height of the layer-number header. */
  header: number;
  width: number;
  height: number;
}

/** Inputs up to this many tokens get roomy 20 px rows. */
export const ROOMY_TOKENS = 40;
/**
 * The smallest row height (CSS px): a 12 px label with a 1 px gap above and
 * below, so coloured labels never touch. Longer inputs scroll (the diagram
 * sits in a scroll box) instead of shrinking their rows: at 12 px rows, 300
 * tokens gave touching labels that were hard to read and to click.
 */
export const MIN_ROW_HEIGHT = 16;

/** Row height: 20 px for short inputs, MIN_ROW_HEIGHT for the rest (they scroll). */
export function rowHeightFor(n: number): number {
  return n <= ROOMY_TOKENS ? 20 : MIN_ROW_HEIGHT;
}

export function flowGeometry(layers: number, n: number, options: { width?: number } = {}): FlowGeometry {
  const pad = 10;
  const header = 18;
  const rowHeight = rowHeightFor(n);
  const target = options.width ?? 760;
  const colGap = Math.max(44, Math.min(120, Math.floor((target - 2 * pad) / Math.max(1, layers))));
  return { layers, n, colGap, rowHeight, pad, header, width: 2 * pad + layers * colGap, height: header + n * rowHeight };
}

export function nodeX(g: FlowGeometry, layer: number): number {
  return g.pad + layer * g.colGap;
}

export function nodeY(g: FlowGeometry, token: number): number {
  return g.header + (token + 0.5) * g.rowHeight;
}

/** The node under (x, y), within `tolerance` px of its column, or null. */
export function nodeAt(g: FlowGeometry, x: number, y: number, tolerance = 7): { layer: number; token: number } | null {
  const layer = Math.round((x - g.pad) / g.colGap);
  if (layer < 0 || layer > g.layers || Math.abs(x - nodeX(g, layer)) > tolerance) return null;
  const token = Math.floor((y - g.header) / g.rowHeight);
  if (token < 0 || token >= g.n) return null;
  return { layer, token };
}

/** The edge layer (1 … L) whose lines cross x, with how far across (0 at node layer l − 1, 1 at l); null outside. */
export function edgeLayerAt(g: FlowGeometry, x: number): { layer: number; f: number } | null {
  const position = (x - g.pad) / g.colGap;
  if (!(position > 0 && position < g.layers)) return null;
  const below = Math.floor(position);
  return { layer: below + 1, f: position - below };
}

/**
 * The line of `edges` (flat i·n + j of edge layer `layer`) closest to (x, y)
 * vertically, if within `tolerance` px. The line runs from (l − 1, j) on the
 * left to (l, i) on the right.
 */
export function nearestEdge(
  g: FlowGeometry,
  edges: ArrayLike<number>,
  x: number,
  y: number,
  tolerance = 4,
): { flat: number; distance: number } | null {
  const at = edgeLayerAt(g, x);
  if (!at) return null;
  let best: { flat: number; distance: number } | null = null;
  for (let k = 0; k < edges.length; k++) {
    const flat = edges[k] as number;
    const i = Math.floor(flat / g.n);
    const j = flat - i * g.n;
    const left = nodeY(g, j);
    const lineY = left + at.f * (nodeY(g, i) - left);
    const distance = Math.abs(lineY - y);
    if (distance <= tolerance && (!best || distance < best.distance)) best = { flat, distance };
  }
  return best;
}
