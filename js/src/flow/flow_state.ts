/**
 * FlowView's page-side state, apart from the DOM (so it is unit-tested in
 * node): the shown stack's data (tokens, W_l and Â_l per layer as they
 * arrive), the paths drawn now, a small cache of paths by (version, method,
 * node), and the one kernel request in flight. The wiring module
 * (flow_view.ts) reads traits into it and draws from it; flow_messages.ts
 * applies the kernel's replies to it.
 */
import { decodeFloat32 } from "../core/buffers";
import { productPaths, rawPaths, residualAdjust, toPathData, type PathData } from "./flow_paths";
import type { ComputeRequest, LayerRequest } from "./flow_messages";
import type { Binary } from "../core/types";

/** Kernel and page results kept in the page. */
export const CACHE_SIZE = 24;

/** The methods the page computes itself, with the note shown under the diagram. */
const LOCAL_NOTES: Record<string, string> = {
  raw: "raw: the selected layer's attention (no residual); straight lanes assume node (l, j) is token j.",
  rollout: "rollout: edge (l,i)→(l−1,j) carries mass(l,i) × Â_l[i,j]; each layer sums to 1.",
};

/** One stack of one explanation, as far as it has arrived. */
export interface FlowData {
  version: number;
  /** The stack these tokens and layers belong to. */
  stack: string;
  layers: number;
  n: number;
  tokens: string[];
  /** The tokenizer's strings of `tokens`, shown on hover ([] when unknown). */
  rawTokens: string[];
  /** W_l per layer (undefined until it arrives). */
  fused: (Float32Array | undefined)[];
  /** Â_l per layer. */
  adjusted: (Float32Array | undefined)[];
}

/** A node: layer 0 (input) … L (top), token -1 for none. */
export interface Selection {
  layer: number;
  token: number;
}

/** The data traits `load` reads (FlowTraits' names). */
export interface DataTraits {
  shape: readonly number[];
  tokens: readonly string[];
  /** The tokenizer's strings of `tokens` ([] when unknown; optional for callers that have none). */
  raw_tokens?: readonly string[];
  version: number;
  stack: string;
  fused: Binary | null;
  fused_layers: number;
}

/** The compute request waiting for the kernel. */
export interface InFlight {
  id: number;
  /** The cache key its reply is stored under. */
  key: string;
  method: string;
  /** When the kernel last reported on it (ms; 0: not yet): the page says when it stays silent. */
  heard: number;
}

/** Cache key of a method's paths at a node of one data version. */
export function pathKey(method: string, layer: number, token: number, version: number): string {
  return `${version}/${method}/${layer}/${token}`;
}

export class FlowStore {
  data: FlowData | null = null;
  /** The paths drawn for the selection, null for none (yet). */
  paths: PathData | null = null;
  /** The last error's message ("" when none). */
  error = "";
  inflight: InFlight | null = null;
  private readonly cache = new Map<string, PathData>();
  private nextId = 1;

  /**
   * Replace the data from the traits (a new explanation, stack or version):
   * forgets paths and cached results. Returns the requests for the layers
   * `fused` lacks. Throws when the traits contradict each other.
   */
  load(traits: DataTraits): LayerRequest[] {
    this.cache.clear();
    this.paths = null;
    this.error = "";
    const [layers = 0, n = 0] = traits.shape;
    const tokens = traits.tokens.map(String);
    if (tokens.length !== n) throw new RangeError(`shape says ${n} tokens but there are ${tokens.length}`);
    // Filled arrays, not `new Array(layers)`: `every` skips holes.
    const next: FlowData = {
      version: traits.version,
      stack: traits.stack,
      layers,
      n,
      tokens,
      rawTokens: (traits.raw_tokens ?? []).map(String),
      fused: Array.from({ length: layers }, () => undefined),
      adjusted: Array.from({ length: layers }, () => undefined),
    };
    const have = Math.min(layers, traits.fused_layers);
    if (have > 0 && traits.fused) {
      const values = decodeFloat32(traits.fused, "fused");
      if (values.length < have * n * n) throw new RangeError(`fused holds ${values.length} values, expected ${have * n * n}`);
      // A copy per layer: the message's buffer can then be released.
      for (let l = 0; l < have; l++) putLayer(next, l, values.slice(l * n * n, (l + 1) * n * n));
    }
    this.data = next;
    const requests: LayerRequest[] = [];
    for (let l = have; l < layers; l++) requests.push({ type: "request", version: next.version, layer: l });
    return requests;
  }

  /** Store attention layer `layer` (0-based) of the current data. */
  putLayer(layer: number, w: Float32Array): void {
    if (!this.data) throw new RangeError("no data to add a layer to");
    if (!(Number.isInteger(layer) && layer >= 0 && layer < this.data.layers)) throw new RangeError(`layer ${layer} out of range`);
    putLayer(this.data, layer, w);
  }

  /** Whether every layer has arrived. */
  complete(): boolean {
    const d = this.data;
    return Boolean(d && d.adjusted.length === d.layers && d.adjusted.every((a) => a !== undefined));
  }

  /** Layers that have arrived. */
  loadedLayers(): number {
    return this.data ? this.data.adjusted.filter(Boolean).length : 0;
  }

  /** Whether `sel` names a node of the data. */
  inRange(sel: Selection): boolean {
    const d = this.data;
    return Boolean(d && sel.token >= 0 && sel.token < d.n && sel.layer >= 0 && sel.layer <= d.layers);
  }

  /** Whether the paths shown now are the cached result for `key`. */
  shows(key: string): boolean {
    const p = this.paths;
    return Boolean(p && this.data && pathKey(p.method, p.layer, p.token, this.data.version) === key && this.cache.get(key) === p);
  }

  cached(key: string): PathData | undefined {
    return this.cache.get(key);
  }

  /** Keep a result (least recently stored leave first). */
  remember(key: string, value: PathData): void {
    this.cache.delete(key);
    this.cache.set(key, value);
    while (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string);
  }

  /**
   * Compute a local method's paths for `sel` (every layer must have arrived),
   * make them the shown paths and cache them under `key`.
   */
  computeLocal(method: string, sel: Selection, signed: boolean, key: string): PathData {
    const d = this.data;
    if (!d || !this.complete()) throw new RangeError("the attention has not arrived yet");
    const note = LOCAL_NOTES[method];
    if (note === undefined) throw new RangeError(`${method} is not computed in the page`);
    const dense =
      method === "raw"
        ? rawPaths(d.fused as Float32Array[], d.n, sel.layer, sel.token)
        : productPaths(d.adjusted as Float32Array[], d.n, sel.layer, sel.token);
    const paths = toPathData(dense, { method, layer: sel.layer, token: sel.token, n: d.n, note });
    paths.signed = signed;
    this.paths = paths;
    this.remember(key, paths);
    return paths;
  }

  /** Start a compute request for `sel` (the caller sends it); it is the one in flight. */
  request(method: string, sel: Selection, key: string): ComputeRequest {
    if (!this.data) throw new RangeError("no data to compute paths for");
    const id = this.nextId++;
    this.inflight = { id, key, method, heard: 0 };
    return { type: "compute", id, version: this.data.version, method, layer: sel.layer, token: sel.token };
  }
}

function putLayer(d: FlowData, layer: number, w: Float32Array): void {
  if (w.length !== d.n * d.n) throw new RangeError(`layer ${layer}: ${w.length} values, expected ${d.n * d.n}`);
  d.fused[layer] = w;
  d.adjusted[layer] = residualAdjust(w, d.n);
}
