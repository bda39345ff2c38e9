/**
 * The attention a HeadView/ModelView page holds: chunks from the initial
 * state and from the kernel's replies, stored per (matrix, layer, head) as
 * float16 bit patterns, widened to float32 when drawn (a small cache keeps
 * the heads of the current layer widened for hover redraws).
 */
import type { ChunkDescriptor, IndexedChunk, MatrixInfo } from "./attention_types";
import { asBytes, decodeFloat16Bits, widen } from "../core/buffers";
import type { Binary } from "../core/types";

interface HeadSlot {
  bits: Uint16Array;
  /** Rows received so far (chunks never overlap, so complete when === rows). */
  filled: number;
}

/** Widened heads kept (n=512: 1 MiB each). */
const CACHE_HEADS = 48;

export class AttentionStore {
  private readonly info = new Map<string, MatrixInfo>();
  private readonly slots = new Map<string, HeadSlot>();
  private readonly widened = new Map<string, Float32Array>();

  constructor(matrices: readonly MatrixInfo[]) {
    for (const m of matrices) this.info.set(m.key, m);
  }

  /** Store one chunk. Throws (with the reason) when it does not fit its matrix. */
  ingest(chunk: ChunkDescriptor, data: Binary | Uint8Array): void {
    const m = this.info.get(chunk.matrix);
    if (!m) throw new RangeError(`attention chunk for unknown matrix ${JSON.stringify(chunk.matrix)}`);
    const [layers, heads, rows, cols] = m.shape;
    const [h0, h1] = chunk.heads;
    const [r0, r1] = chunk.rows;
    if (!(chunk.layer >= 0 && chunk.layer < layers && h0 >= 0 && h1 <= heads && h0 < h1 && r0 >= 0 && r1 <= rows && r0 < r1)) {
      throw new RangeError(`attention chunk out of range: ${JSON.stringify(chunk)} for shape [${m.shape.join(", ")}]`);
    }
    const bits = decodeFloat16Bits(data, `${chunk.matrix} layer ${chunk.layer}`);
    const per = (r1 - r0) * cols;
    if (bits.length !== (h1 - h0) * per) {
      throw new RangeError(`attention chunk ${JSON.stringify(chunk)}: ${bits.length} values, expected ${(h1 - h0) * per}`);
    }
    for (let h = h0; h < h1; h++) {
      const key = slotKey(chunk.matrix, chunk.layer, h);
      let slot = this.slots.get(key);
      if (!slot) {
        slot = { bits: new Uint16Array(rows * cols), filled: 0 };
        this.slots.set(key, slot);
      }
      if (slot.filled >= rows) continue; // already complete: a repeated reply
      const start = (h - h0) * per;
      slot.bits.set(bits.subarray(start, start + per), r0 * cols);
      slot.filled += r1 - r0;
      this.widened.delete(key);
    }
  }

  /** Store the chunks of a binary trait (`preload`) described by `index`. */
  ingestIndexed(data: Binary | null | undefined, index: readonly IndexedChunk[]): void {
    if (!data || index.length === 0) return;
    const bytes = asBytes(data);
    for (const chunk of index) {
      if (chunk.offset < 0 || chunk.offset + chunk.nbytes > bytes.byteLength) {
        throw new RangeError(`preloaded chunk ${JSON.stringify(chunk)} lies outside its ${bytes.byteLength} bytes`);
      }
      this.ingest(chunk, bytes.subarray(chunk.offset, chunk.offset + chunk.nbytes));
    }
  }

  /** Whether every row of (matrix, layer position, head position) has arrived. */
  has(matrix: string, layer: number, head: number): boolean {
    const m = this.info.get(matrix);
    const slot = this.slots.get(slotKey(matrix, layer, head));
    return Boolean(m && slot && slot.filled >= m.shape[2]);
  }

  /** The head's (rows × cols) float32 weights, row-major; null until complete. */
  weights(matrix: string, layer: number, head: number): Float32Array | null {
    const key = slotKey(matrix, layer, head);
    const cached = this.widened.get(key);
    if (cached) {
      // Refresh its place in the LRU order.
      this.widened.delete(key);
      this.widened.set(key, cached);
      return cached;
    }
    if (!this.has(matrix, layer, head)) return null;
    const values = widen(this.slots.get(key)!.bits);
    this.widened.set(key, values);
    while (this.widened.size > CACHE_HEADS) {
      const oldest = this.widened.keys().next().value as string;
      this.widened.delete(oldest);
    }
    return values;
  }
}

function slotKey(matrix: string, layer: number, head: number): string {
  return `${matrix}/${layer}/${head}`;
}

/**
 * Sends requests for missing attention, at most once per (matrix, layer,
 * head) until it arrives, so redraws while waiting do not repeat them.
 */
export class Requester {
  private readonly asked = new Set<string>();

  constructor(private readonly send: (content: Record<string, unknown>) => void) {}

  /** Ask for a whole layer (head undefined) or one head; false if already asked. */
  ask(matrix: string, layer: number, head?: number): boolean {
    const key = `${matrix}/${layer}/${head ?? "*"}`;
    if (this.asked.has(key) || this.asked.has(`${matrix}/${layer}/*`)) return false;
    this.asked.add(key);
    const content: Record<string, unknown> = { type: "request", matrix, layer };
    if (head !== undefined) content.head = head;
    this.send(content);
    return true;
  }

  /** Forget what was asked (e.g. after an error, to allow a retry). */
  reset(): void {
    this.asked.clear();
  }
}
