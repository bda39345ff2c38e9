/**
 * FlowView's custom messages (Python: attnwidget/views/flow/_messages.py):
 * their typed schemas both ways, and what a reply from the kernel does to
 * the page's state (FlowStore). No DOM here: the wiring module turns the
 * returned Outcome into drawing, status text and timers.
 *
 * L attention layers, n tokens, both of the shown stack; edge layer l
 * (1 … L) links node (l, i) to node (l − 1, j).
 */
import { decodeFloats } from "../core/buffers";
import { decodePathsReply } from "./flow_paths";
import type { FlowStore } from "./flow_state";
import type { Binary } from "../core/types";

/** page -> kernel: the paths of `method` for node (layer, token). */
export interface ComputeRequest {
  type: "compute";
  id: number;
  version: number;
  method: string;
  layer: number;
  token: number;
}

/** page -> kernel: one attention layer (0-based) that `fused` lacks. */
export interface LayerRequest {
  type: "request";
  version: number;
  layer: number;
}

/** kernel -> page while a computation runs. */
export interface ProgressReply {
  type: "progress";
  id: number;
  done: number;
  total: number;
}

/**
 * kernel -> page: paths. Buffers: nodes float32 (L+1, n); edge index uint32
 * (E) = i·n + j grouped by edge layer (counts); edge value float32 (E);
 * totals float32 (L) = Σ |contribution| of each edge layer.
 */
export interface PathsReply {
  type: "paths";
  id: number;
  version: number;
  method: string;
  layer: number;
  token: number;
  shape: [number, number];
  counts: number[];
  signed: boolean;
  note: string;
  floor: number;
  dropped: number;
  /** The buffers' float type (always "float32"; the index is uint32). */
  dtype: "float32";
  /** False when the paths are the same for every selected node (lrp explains the target). */
  per_selection: boolean;
}

/** kernel -> page: one layer's float32 (n, n) W as the single buffer. */
export interface LayerReply {
  type: "layer";
  version: number;
  layer: number;
}

/**
 * kernel -> page: the compute request `id` was for an older version (the
 * explanation or stack changed meanwhile); the page drops it and asks again.
 */
export interface StaleReply {
  type: "stale";
  id: number;
  version: number;
}

export interface ErrorReply {
  type: "error";
  id?: number | null;
  message: string;
}

export type KernelMessage = ProgressReply | PathsReply | LayerReply | StaleReply | ErrorReply;

const KINDS: ReadonlySet<string> = new Set(["progress", "paths", "layer", "stale", "error"]);

/** The message if `content` is one of the kernel's (by its `type`), else null. */
export function asKernelMessage(content: unknown): KernelMessage | null {
  if (!content || typeof content !== "object") return null;
  const type = (content as { type?: unknown }).type;
  return typeof type === "string" && KINDS.has(type) ? (content as KernelMessage) : null;
}

/** What a kernel message means for the view. */
export type Outcome =
  /** Not for this view's current state: nothing changes. */
  | { kind: "ignored" }
  /** An attention layer arrived; `complete`: every layer is there now. */
  | { kind: "layer"; complete: boolean }
  /** The request in flight progresses. */
  | { kind: "progress"; done: number; total: number }
  /** The request in flight is over (its paths are cached, or it was stale): ask for the selection again. */
  | { kind: "done" }
  /** Something failed; `request`: it ended the request in flight. */
  | { kind: "failed"; error: Error; request: boolean };

/**
 * Apply a kernel message to the store. Replies to requests other than the
 * one in flight, and layers of another data version, are ignored.
 */
export function receive(store: FlowStore, content: unknown, buffers: readonly Binary[] | undefined, now: number): Outcome {
  const msg = asKernelMessage(content);
  if (!msg) return { kind: "ignored" };
  const data = store.data;
  if (msg.type === "layer") {
    if (!data || msg.version !== data.version || !buffers?.[0]) return { kind: "ignored" };
    try {
      const n = data.n;
      const w = decodeFloats(buffers[0], { dtype: "float32", shape: [n, n] }, `layer ${msg.layer}`);
      store.putLayer(msg.layer, w.slice());
    } catch (err) {
      return { kind: "failed", error: asError(err), request: false };
    }
    return { kind: "layer", complete: store.complete() };
  }
  const inflight = store.inflight;
  if (!inflight) return { kind: "ignored" };
  switch (msg.type) {
    case "progress":
      if (msg.id !== inflight.id) return { kind: "ignored" };
      inflight.heard = now;
      return { kind: "progress", done: msg.done, total: msg.total };
    case "paths":
      if (msg.id !== inflight.id) return { kind: "ignored" };
      // A reply for an older version is dropped: the selection is asked again.
      if (data && msg.version === data.version) {
        try {
          store.remember(inflight.key, decodePathsReply(msg, buffers ?? []));
        } catch (err) {
          store.inflight = null;
          return { kind: "failed", error: asError(err), request: true };
        }
      }
      store.inflight = null;
      return { kind: "done" };
    case "stale":
      if (msg.id !== inflight.id) return { kind: "ignored" };
      store.inflight = null;
      return { kind: "done" };
    case "error":
      if (msg.id != null && msg.id !== inflight.id) return { kind: "ignored" };
      store.inflight = null;
      return { kind: "failed", error: new Error(String(msg.message)), request: true };
  }
  return { kind: "ignored" };
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
