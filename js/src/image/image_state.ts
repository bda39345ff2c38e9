/**
 * ImageView's query maps in the page: float16 layers filled chunk by chunk
 * (from the `preload` trait and the kernel's "chunk" replies), read one query
 * row at a time. Each layer keeps its 16-bit patterns (half the memory of
 * float32); a row is widened when it is drawn. Pure (no DOM): tested in
 * test/image_view.test.ts.
 */
import { asBytes, decodeFloat16Bits, halfTable } from "../core/buffers";
import type { ChunkInfo, MapName, PreloadEntry } from "./image_types";
import type { Binary } from "../core/types";

interface Layer {
  bits: Uint16Array;
  /** covered[h * rows + r]: query row r of head h has arrived. */
  covered: Uint8Array;
}

export class QueryMapStore {
  private readonly layers = new Map<string, Layer>();

  /**
   * @param heads heads of the attention map (rollout has one)
   * @param rows query rows (1 + patches)
   * @param cols patch columns
   */
  constructor(
    readonly heads: number,
    readonly rows: number,
    readonly cols: number,
  ) {}

  headsOf(map: MapName): number {
    return map === "attention" ? this.heads : 1;
  }

  /** Store one chunk (float16 bytes); throws when it does not fit the maps. */
  ingest(info: ChunkInfo, data: Binary | Uint8Array): void {
    const heads = this.headsOf(info.map);
    const [h0, h1] = info.heads;
    const [r0, r1] = info.rows;
    if (!(info.map === "attention" || info.map === "rollout")) throw new RangeError(`unknown map ${JSON.stringify(info.map)}`);
    if (!(Number.isInteger(info.layer) && info.layer >= 0)) throw new RangeError(`chunk layer ${info.layer} is not a layer`);
    if (!(0 <= h0 && h0 < h1 && h1 <= heads && 0 <= r0 && r0 < r1 && r1 <= this.rows)) {
      throw new RangeError(`chunk heads [${h0}, ${h1}) rows [${r0}, ${r1}) do not fit ${heads} heads × ${this.rows} rows`);
    }
    const bits = decodeFloat16Bits(data, `${info.map} chunk`);
    const expected = (h1 - h0) * (r1 - r0) * this.cols;
    if (bits.length !== expected) throw new RangeError(`${info.map} chunk: ${bits.length} values, ${expected} expected`);
    const layer = this.layerOf(info.map, info.layer, heads);
    const span = (r1 - r0) * this.cols;
    for (let h = h0; h < h1; h++) {
      const from = (h - h0) * span;
      layer.bits.set(bits.subarray(from, from + span), (h * this.rows + r0) * this.cols);
      layer.covered.fill(1, h * this.rows + r0, h * this.rows + r1);
    }
  }

  /** Store the chunks of the `preload` trait. */
  ingestPreload(data: Binary | null | undefined, index: readonly PreloadEntry[]): void {
    if (!data || index.length === 0) return;
    const bytes = asBytes(data);
    for (const entry of index) {
      if (entry.offset < 0 || entry.offset + entry.nbytes > bytes.byteLength) {
        throw new RangeError(`preload chunk at ${entry.offset} (+${entry.nbytes}) lies outside its ${bytes.byteLength} bytes`);
      }
      this.ingest(entry, bytes.subarray(entry.offset, entry.offset + entry.nbytes));
    }
  }

  /** Whether query row `row` of `map` at `layer` is here, for `head` (-1: every head). */
  has(map: MapName, layer: number, head: number, row: number): boolean {
    const stored = this.layers.get(`${map}/${layer}`);
    if (!stored || row < 0 || row >= this.rows) return false;
    const heads = this.headsOf(map);
    if (head >= 0) return head < heads && stored.covered[head * this.rows + row] === 1;
    for (let h = 0; h < heads; h++) if (stored.covered[h * this.rows + row] !== 1) return false;
    return true;
  }

  /**
   * Query row `row` of `map` at `layer` over the patches: one head's, or with
   * `head` -1 the mean over heads (rollout: its one map); null when missing.
   */
  row(map: MapName, layer: number, head: number, row: number): Float32Array | null {
    const heads = this.headsOf(map);
    const chosen = map === "rollout" ? 0 : head;
    if (!this.has(map, layer, chosen, row)) return null;
    const bits = this.layers.get(`${map}/${layer}`)!.bits;
    const table = halfTable();
    const out = new Float32Array(this.cols);
    const list = chosen >= 0 ? [chosen] : Array.from({ length: heads }, (_, h) => h);
    for (const h of list) {
      const start = (h * this.rows + row) * this.cols;
      for (let j = 0; j < this.cols; j++) out[j] = (out[j] as number) + (table[bits[start + j] as number] as number);
    }
    if (list.length > 1) for (let j = 0; j < this.cols; j++) out[j] = (out[j] as number) / list.length;
    return out;
  }

  private layerOf(map: MapName, layer: number, heads: number): Layer {
    const key = `${map}/${layer}`;
    let stored = this.layers.get(key);
    if (!stored) {
      stored = { bits: new Uint16Array(heads * this.rows * this.cols), covered: new Uint8Array(heads * this.rows) };
      this.layers.set(key, stored);
    }
    return stored;
  }
}

/**
 * Asks the kernel for each (map, layer) once until reset (after an error: to
 * allow a retry); `onSilence` runs when a request got no reply within
 * `waitMs` (no kernel: a saved page without that layer, a dead kernel).
 */
export class MapRequester {
  private readonly asked = new Set<string>();
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private replies = 0;

  constructor(
    private readonly send: (content: Record<string, unknown>) => void,
    private readonly onSilence: () => void = () => {},
    private readonly waitMs = 10000,
  ) {}

  /** Send the request; false when it was sent already. */
  ask(map: MapName, layer: number): boolean {
    const key = `${map}/${layer}`;
    if (this.asked.has(key)) return false;
    this.asked.add(key);
    this.send({ type: "request", map, layer });
    const before = this.replies;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.replies === before) this.onSilence();
    }, this.waitMs);
    this.timers.add(timer);
    return true;
  }

  /** A reply (of any kind) came. */
  replied(): void {
    this.replies += 1;
  }

  reset(): void {
    this.asked.clear();
  }

  dispose(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
