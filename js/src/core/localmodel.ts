/**
 * A model that lives in the page only: what a view gets when there is no
 * kernel (pages written by `to_html()` and by scripts/run_notebook.py).
 *
 * It implements the part of anywidget's model interface the views use, with
 * the same event semantics as the Backbone models Jupyter hands out, so a view
 * cannot tell the difference: `set` fires `change:<key>` (then `change`)
 * synchronously and only when the value really changed; `save_changes` has
 * no kernel to talk to and does nothing; `send` goes to the page's recorded
 * replies when it has a responder (replies.ts), which answer as `msg:custom`
 * events, always later (as a kernel's would), never during `send`.
 *
 * Also here: decoding the exported state payload (JSON with base64 buffers),
 * kept free of DOM use so node's test runner can test it.
 */
import type { AnyModel } from "@anywidget/types";

import type { Reply, Responder } from "./replies";

// The handler type AnyModel declares (any: Backbone passes varying arguments).
type Handler = (...args: any[]) => void;

interface Listener {
  callback: Handler;
  context: unknown;
}

/** Identifier of the payload layout; Python writes it (attnwidget/views/core/standalone.py). */
export const PAYLOAD_FORMAT = "attnwidget-state/1";

export class LocalModel<T extends Record<string, any> = Record<string, any>> implements AnyModel<T> {
  private readonly state: Record<string, unknown>;
  private readonly listeners = new Map<string, Listener[]>();

  /** No other models exist in a standalone page, so lookups always fail. */
  readonly widget_manager = {
    get_model: (modelId: string): Promise<never> =>
      Promise.reject(new Error(`attnwidget: no widget manager in a standalone page (model ${modelId})`)),
  };

  private readonly respond: Responder | undefined;

  constructor(state: Partial<T> = {}, options: { respond?: Responder } = {}) {
    this.state = { ...state };
    this.respond = options.respond;
  }

  get<K extends keyof T>(key: K): T[K] {
    return this.state[key as string] as T[K];
  }

  /** Set one key (`set(key, value)`) or several (`set({a, b})`), as Backbone does. */
  set<K extends keyof T>(key: K | Partial<T>, value?: T[K]): void {
    const changes: [string, unknown][] =
      typeof key === "object" && key !== null ? Object.entries(key) : [[key as string, value]];
    const changed: [string, unknown][] = [];
    for (const [name, next] of changes) {
      if (deepEqual(this.state[name], next)) continue;
      this.state[name] = next;
      changed.push([name, next]);
    }
    // Like Backbone: every key is stored before any listener runs, so a
    // listener of one key reads the new values of the others.
    for (const [name, next] of changed) this.emit(`change:${name}`, this, next);
    if (changed.length > 0) this.emit("change", this);
  }

  /** Listen to one or more space-separated events ("change:a change:b"). */
  on(eventName: string, callback: Handler, context?: unknown): void {
    for (const name of splitEvents(eventName)) {
      const list = this.listeners.get(name) ?? [];
      list.push({ callback, context });
      this.listeners.set(name, list);
    }
  }

  /** Remove listeners: by event and callback, by either one, or all (no arguments). */
  off(eventName?: string | null, callback?: Handler | null): void {
    const names = eventName ? splitEvents(eventName) : [...this.listeners.keys()];
    for (const name of names) {
      const list = this.listeners.get(name);
      if (!list) continue;
      const kept = callback ? list.filter((l) => l.callback !== callback) : [];
      if (kept.length > 0) this.listeners.set(name, kept);
      else this.listeners.delete(name);
    }
  }

  /** Nothing to sync with: the page's state is the only state. */
  save_changes(): void {}

  /** Custom messages go to the responder (if any); its replies arrive as `msg:custom`. */
  send(content: unknown, _callbacks?: unknown, _buffers?: ArrayBuffer[] | ArrayBufferView[]): void {
    const respond = this.respond;
    if (!respond) return; // no kernel and nothing recorded: dropped
    const deliver = (reply: Reply): void => this.emit("msg:custom", reply.content, reply.buffers);
    // Started from a microtask: no reply may arrive while `send` runs.
    Promise.resolve()
      .then(() => respond(content, deliver))
      .catch((error) => console.error("attnwidget: a recorded reply cannot be read:", error));
  }

  /** How many listeners are registered (for tests: views must clean up). */
  listenerCount(eventName?: string): number {
    if (eventName !== undefined) return this.listeners.get(eventName)?.length ?? 0;
    let n = 0;
    for (const list of this.listeners.values()) n += list.length;
    return n;
  }

  private emit(name: string, ...args: unknown[]): void {
    // A copy: listeners may add or remove listeners while this runs.
    for (const { callback, context } of [...(this.listeners.get(name) ?? [])]) {
      callback.apply(context ?? this, args);
    }
  }
}

function splitEvents(eventName: string): string[] {
  return eventName.split(/\s+/).filter(Boolean);
}

/** Structural equality for JSON values; binary values compare by identity. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b) || a instanceof ArrayBuffer || b instanceof ArrayBuffer) {
    return false;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((x, i) => deepEqual(x, other[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual((a as any)[k], (b as any)[k]));
}

/** One binary buffer of the payload: where it goes in the state, and its bytes. */
export interface PayloadBuffer {
  /** Keys (object) and indices (list) from the state's root to the buffer. */
  path: (string | number)[];
  /** The bytes, base64-encoded. */
  data: string;
}

/** What Python embeds in the page: a widget's synced state. */
export interface Payload {
  format: string;
  /** The widget's model id: its recorded replies carry it. */
  model_id?: string;
  state: Record<string, unknown>;
  buffers: PayloadBuffer[];
  /** The message for a request no recorded reply answers (absent: no answer). */
  unanswered?: Record<string, unknown>;
}

/** Bytes of a base64 string (standard alphabet, padded). */
export function base64ToBytes(text: string): Uint8Array {
  // The native decoder (recent browsers) is several times faster on MBs.
  const native = (Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array }).fromBase64;
  if (typeof native === "function") return native(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * The widget state of a payload, with every buffer put back at its path as a
 * DataView (the type ipywidgets 8 hands to views), as Jupyter would deliver it.
 */
export function decodePayload(payload: unknown): Record<string, unknown> {
  if (typeof payload !== "object" || payload === null) {
    throw new TypeError("attnwidget: the embedded state is not a JSON object");
  }
  const { format, state, buffers } = payload as Partial<Payload>;
  if (format !== PAYLOAD_FORMAT) {
    throw new TypeError(
      `attnwidget: embedded state has format ${JSON.stringify(format)}; this bundle reads ${JSON.stringify(PAYLOAD_FORMAT)}`,
    );
  }
  if (typeof state !== "object" || state === null || Array.isArray(state)) {
    throw new TypeError("attnwidget: the embedded state has no `state` object");
  }
  const out: Record<string, unknown> = structuredCloneJson(state);
  for (const buffer of buffers ?? []) {
    if (!Array.isArray(buffer.path) || buffer.path.length === 0 || typeof buffer.data !== "string") {
      throw new TypeError("attnwidget: malformed buffer in the embedded state");
    }
    const bytes = base64ToBytes(buffer.data);
    putAt(out, buffer.path, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }
  return out;
}

/** A deep copy of JSON data (so decoding never mutates the parsed payload). */
function structuredCloneJson<V>(value: V): V {
  return JSON.parse(JSON.stringify(value)) as V;
}

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

function putAt(root: Record<string, unknown>, path: (string | number)[], value: unknown): void {
  let node: any = root;
  for (let i = 0; i < path.length; i++) {
    const key = path[i] as string | number;
    // The payload is data, never a way to reach the prototype chain.
    if (FORBIDDEN_KEYS.has(String(key))) throw new TypeError(`attnwidget: bad buffer path ${JSON.stringify(path)}`);
    if (i === path.length - 1) {
      node[key] = value;
      return;
    }
    if (typeof node[key] !== "object" || node[key] === null) {
      node[key] = typeof path[i + 1] === "number" ? [] : {};
    }
    node = node[key];
  }
}
