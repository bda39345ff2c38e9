/**
 * FlowView's two canvases: the attention graph below (Â ≥ threshold and every
 * node, redrawn only when the data, threshold, colours or size change) and
 * the selection's paths, path nodes, selection ring and layer numbers above
 * (redrawn for every selection). The painter keeps what it drew so hovering
 * can name the line under the pointer (flow_text.ts).
 */
import { formatNumber } from "../core/format";
import {
  bucketByLevel,
  contextBudget,
  contextFade,
  CONTEXT_LINES_PER_TOKEN,
  edgesAbove,
  lineStyle,
  LEVELS,
  strongestCut,
  type Buckets,
} from "./flow_lines";
import { nodeX, nodeY, type FlowGeometry, type PathData } from "./flow_paths";
import type { FlowData, Selection } from "./flow_state";

/** Path colours, Okabe & Ito (colour-blind safe, readable on light and dark). */
const PATH_COLOR = "#d55e00";
const NEGATIVE_COLOR = "#0072b2";
/** Lines drawn at most (background, paths): a software-rendered canvas takes ~10 µs a line. */
const MAX_LINES = 24_000;
const MAX_PATH_LINES = 12_000;
/** Line segments per canvas path (see strokeBuckets). */
const STROKE_BATCH = 64;

/** What is on the canvases, per edge layer: background lines and path lines (flat index -> value). */
export interface Drawn {
  edges: Uint32Array[];
  paths: Map<number, number>[];
}

/** One frame's inputs. */
export interface Frame {
  data: FlowData;
  geometry: FlowGeometry;
  /** The paths to draw (null: none, the graph at full opacity). */
  shown: PathData | null;
  selection: Selection;
  threshold: number;
  /** The text colour and font of the view (lines and numbers take them). */
  fg: string;
  fontFamily: string;
}

/** What a frame drew, for the test hooks and the note under the diagram. */
export interface FrameResult {
  /** Background lines drawn (set only when the graph was redrawn). */
  edges: number | null;
  paths: number;
  /** Why fewer lines than asked are drawn ("" when all are). */
  note: string;
}

export class FlowPainter {
  drawn: Drawn = { edges: [], paths: [] };
  private backgroundKey = "";
  private backgroundNote = "";

  constructor(
    private readonly background: HTMLCanvasElement,
    private readonly foreground: HTMLCanvasElement,
  ) {}

  /** Redraw the graph on the next frame even if nothing it depends on changed (new theme colours). */
  invalidate(): void {
    this.backgroundKey = "";
  }

  draw(frame: Frame): FrameResult {
    const { data, geometry: g, shown, selection: sel, threshold, fg } = frame;
    const edges = this.drawBackground(frame);
    this.background.style.opacity = shown ? "0.35" : "1";
    const ctx = sizeCanvas(this.foreground, g);
    // Test hook: where the nodes are (see flowGeometry).
    this.foreground.dataset.geometry = JSON.stringify({ pad: g.pad, header: g.header, colGap: g.colGap, rowHeight: g.rowHeight });
    this.drawn.paths = [];
    let paths = 0;
    let pathNote = "";
    if (shown) {
      // Shares of each layer's total; above MAX_PATH_LINES only the strongest.
      const shares = shown.edges.map((layer) => {
        const out = new Float32Array(layer.value.length);
        for (let k = 0; k < out.length; k++) out[k] = layer.total > 0 ? Math.abs(layer.value[k] as number) / layer.total : 0;
        return out;
      });
      const cut = strongestCut(shares, threshold, MAX_PATH_LINES);
      if (cut.kept < cut.candidates) pathNote = `Showing the ${cut.kept.toLocaleString("en")} strongest of ${cut.candidates.toLocaleString("en")} path lines.`;
      for (let l = 1; l <= data.layers; l++) {
        const layer = shown.edges[l - 1]!;
        const share = shares[l - 1]!;
        const map = new Map<number, number>();
        const buckets = bucketByLevel(layer.index, (k) => share[k] as number, cut.threshold, (k) => (layer.value[k] as number) < 0);
        for (let k = 0; k < layer.index.length; k++) {
          if ((share[k] as number) >= cut.threshold && (share[k] as number) > 0) map.set(layer.index[k] as number, layer.value[k] as number);
        }
        paths += buckets.count;
        if (ctx) strokeBuckets(ctx, g, l, data.n, buckets, "path", (negative) => (negative ? NEGATIVE_COLOR : PATH_COLOR));
        this.drawn.paths.push(map);
      }
    }
    if (ctx) {
      drawNodes(ctx, g, fg, data, shown, sel, threshold);
      drawHeader(ctx, g, fg, frame.fontFamily, data.layers);
    }
    const note = [shown?.note ?? "", this.backgroundNote, pathNote].filter(Boolean).join(" ");
    return { edges, paths, note };
  }

  /**
   * The attention graph (Â ≥ threshold) and every node, on the lower canvas.
   * Redrawn only when the data, the threshold or the colours change, never
   * for a new selection (the selection only fades it, with CSS opacity).
   * Returns the lines drawn, or null when nothing changed.
   */
  private drawBackground({ data, geometry: g, fg, threshold }: Frame): number | null {
    const { n, layers } = data;
    const key = JSON.stringify([data.version, threshold, fg, data.adjusted.filter(Boolean).length, g.width, g.height, globalThis.devicePixelRatio]);
    if (key === this.backgroundKey) return null;
    this.backgroundKey = key;
    // Keep the line count drawable, and long inputs readable (contextBudget):
    // above the budget only the strongest are drawn.
    const maps = data.adjusted.filter((m): m is Float32Array => m !== undefined);
    const budget = contextBudget(n, layers, MAX_LINES);
    const cut = strongestCut(maps, threshold, budget);
    const why = budget < MAX_LINES ? `, at most ${CONTEXT_LINES_PER_TOKEN} per token and layer for ${n.toLocaleString("en")} tokens` : "";
    this.backgroundNote =
      cut.kept < cut.candidates
        ? `Showing the ${cut.kept.toLocaleString("en")} strongest of ${cut.candidates.toLocaleString("en")} lines with Â ≥ ${formatNumber(threshold)} (Â ≥ ${formatNumber(cut.threshold)}${why}); raise the threshold to see fewer.`
        : "";
    const ctx = sizeCanvas(this.background, g);
    this.drawn.edges = [];
    let count = 0;
    for (let l = 1; l <= layers; l++) {
      const weights = data.adjusted[l - 1];
      const flats = weights ? edgesAbove(weights, Math.max(cut.threshold, 1e-9)) : new Uint32Array(0);
      this.drawn.edges.push(flats);
      count += flats.length;
      if (ctx && weights) strokeBuckets(ctx, g, l, n, bucketByLevel(flats, (k) => weights[flats[k] as number] as number, cut.threshold), "edge", () => fg, contextFade(n));
    }
    if (ctx) {
      ctx.fillStyle = fg;
      ctx.globalAlpha = 0.6;
      ctx.beginPath();
      const r = Math.min(2.2, g.rowHeight / 6);
      for (let l = 0; l <= layers; l++) {
        for (let i = 0; i < n; i++) {
          ctx.moveTo(nodeX(g, l) + r, nodeY(g, i));
          ctx.arc(nodeX(g, l), nodeY(g, i), r, 0, 2 * Math.PI);
        }
      }
      ctx.fill();
      ctx.globalAlpha = 1;
    }
    return count;
  }
}

/** Size a canvas for the geometry (device pixels, capped so huge inputs still fit) and clear it. */
function sizeCanvas(c: HTMLCanvasElement, g: FlowGeometry): CanvasRenderingContext2D | null {
  const dpr = Math.max(1, Math.min(globalThis.devicePixelRatio || 1, 16000 / Math.max(g.width, g.height, 1)));
  const pixelW = Math.round(g.width * dpr);
  const pixelH = Math.round(g.height * dpr);
  if (c.width !== pixelW || c.height !== pixelH) {
    c.width = pixelW;
    c.height = pixelH;
    c.style.width = `${g.width}px`;
    c.style.height = `${g.height}px`;
  }
  const ctx = c.getContext("2d");
  if (ctx) {
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, g.width, g.height);
    ctx.lineCap = "butt";
  }
  return ctx;
}

/**
 * The layer numbers above the columns, on the upper canvas: on the lower one
 * they faded with the graph whenever a selection showed its paths (the
 * default), to a contrast of 2.6 in VS Code's Dark+ and 2.4 in Light+
 * (tests/test_browser_vscode_theme.py), and below 4.5 in JupyterLab's too.
 */
function drawHeader(ctx: CanvasRenderingContext2D, g: FlowGeometry, fg: string, fontFamily: string, layers: number): void {
  ctx.fillStyle = fg;
  ctx.font = `11px ${fontFamily || "sans-serif"}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let l = 0; l <= layers; l++) ctx.fillText(l === 0 ? "in" : String(l), nodeX(g, l), g.header / 2);
}

/** Nodes on the paths (area by |value| relative to their layer's largest) and the selection's ring. */
function drawNodes(
  ctx: CanvasRenderingContext2D,
  g: FlowGeometry,
  fg: string,
  data: FlowData,
  shown: PathData | null,
  sel: Selection,
  threshold: number,
): void {
  const { n, layers } = data;
  if (shown) {
    for (let l = 0; l <= layers; l++) {
      const values = shown.nodes.subarray(l * n, (l + 1) * n);
      let max = 0;
      for (let i = 0; i < n; i++) max = Math.max(max, Math.abs(values[i] as number));
      if (!(max > 0)) continue;
      for (let i = 0; i < n; i++) {
        const share = Math.abs(values[i] as number) / max;
        if (share < Math.max(threshold, 0.01)) continue;
        ctx.fillStyle = (values[i] as number) < 0 ? NEGATIVE_COLOR : PATH_COLOR;
        ctx.globalAlpha = 0.85;
        ctx.beginPath();
        ctx.arc(nodeX(g, l), nodeY(g, i), 1.2 + (g.rowHeight / 2 - 3) * Math.sqrt(share), 0, 2 * Math.PI);
        ctx.fill();
      }
    }
    ctx.globalAlpha = 1;
  }
  if (sel.token >= 0 && sel.token < n) {
    ctx.strokeStyle = fg;
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.arc(nodeX(g, sel.layer), nodeY(g, sel.token), g.rowHeight / 2 - 1, 0, 2 * Math.PI);
    ctx.stroke();
  }
}

/** Stroke grouped lines of edge layer `layer`: from (layer − 1, j) on the left to (layer, i) on the right. */
function strokeBuckets(
  ctx: CanvasRenderingContext2D,
  g: FlowGeometry,
  layer: number,
  n: number,
  buckets: Buckets,
  kind: "edge" | "path",
  color: (negative: boolean) => string,
  fade = 1,
): void {
  const x0 = nodeX(g, layer - 1);
  const x1 = nodeX(g, layer);
  for (let level = 1; level <= LEVELS; level++) {
    const start = buckets.starts[level]!;
    const stop = buckets.starts[level + 1]!;
    if (start === stop) continue;
    const { width, alpha } = lineStyle(level, kind, fade);
    ctx.lineWidth = width;
    ctx.globalAlpha = alpha;
    for (const negative of [false, true]) {
      ctx.strokeStyle = color(negative);
      ctx.beginPath();
      let segments = 0;
      for (let s = start; s < stop; s++) {
        if (Boolean(buckets.negative[s]) !== negative) continue;
        const flat = buckets.items[s]!;
        const i = Math.floor(flat / n);
        const j = flat - i * n;
        ctx.moveTo(x0, nodeY(g, j));
        ctx.lineTo(x1, nodeY(g, i));
        // Short paths: stroking one path of thousands of crossing segments
        // is far slower (the rasteriser resolves their overlaps) than many small ones.
        if (++segments === STROKE_BATCH) {
          ctx.stroke();
          ctx.beginPath();
          segments = 0;
        }
      }
      if (segments > 0) ctx.stroke();
    }
  }
  ctx.globalAlpha = 1;
}
