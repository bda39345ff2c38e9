/**
 * Annotator's requests to the kernel and their replies.
 *
 * One request at a time: while a save or a move is out, the page takes no
 * new marks (a click could otherwise land on the next item before it is
 * drawn). A request settles with its reply: "saved" (a save with `advance`
 * is answered after the next item's state, so the page unblocks on the new
 * item), "shown", or "refused" (nothing changed: the page keeps its marks
 * and shows why). A kernel that never answers settles it after `timeoutMs`
 * as refused, so the page never stays blocked.
 */
import type { AnnotatorReply, AnnotatorRequest, FirstRequest, GoRequest, SaveRequest, StepRequest } from "./annotator_types";

/** How a request ended. */
export type Outcome =
  | { kind: "saved"; request: AnnotatorRequest; revision: number; progress: number[] }
  | { kind: "shown"; request: AnnotatorRequest }
  | { kind: "refused"; request: AnnotatorRequest; message: string };

export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const DEFAULT_TIMERS: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export const NO_REPLY =
  "no answer from the kernel: nothing is known to be saved. Is the notebook's kernel running? " +
  "Your marks are kept here; press Enter to try again.";

export class Requests {
  private counter = 0;
  private out: AnnotatorRequest | null = null;
  private timer: unknown = null;

  constructor(
    private readonly send: (message: AnnotatorRequest) => void,
    private readonly settled: (outcome: Outcome) => void,
    private readonly timeoutMs = 10000,
    private readonly timers: Timers = DEFAULT_TIMERS,
  ) {}

  /** Whether a request is out (the page takes no new marks meanwhile). */
  get busy(): boolean {
    return this.out !== null;
  }

  /** The request that is out, if any. */
  get pending(): AnnotatorRequest | null {
    return this.out;
  }

  /** Send a save of `fields` (false when another request is still out). */
  save(fields: Omit<SaveRequest, "type" | "request">): boolean {
    return this.start({ type: "save", request: 0, ...fields });
  }

  /** Ask for item `index` (false when another request is still out). */
  go(index: number): boolean {
    return this.start({ type: "go", request: 0, index } as GoRequest);
  }

  /** Ask for the first item not saved yet. */
  first(): boolean {
    return this.start({ type: "first", request: 0 } as FirstRequest);
  }

  /** Undo or redo the item's last change (false when another request is still out). */
  step(kind: "undo" | "redo", index: number, item_id: string): boolean {
    return this.start({ type: kind, request: 0, index, item_id } as StepRequest);
  }

  /** A message from the kernel; returns whether it settled the request that is out. */
  reply(message: unknown): boolean {
    const msg = message as AnnotatorReply | null | undefined;
    const out = this.out;
    if (!out || !msg || typeof msg !== "object") return false;
    // A saved page's answer carries the whole request (replies.ts) and refuses it.
    const asked = msg.request;
    const number = typeof asked === "object" && asked !== null ? (asked as { request?: unknown }).request : asked;
    if (number !== undefined && number !== out.request) return false;
    if (msg.type === "saved") this.finish({ kind: "saved", request: out, revision: msg.revision, progress: msg.progress });
    else if (msg.type === "shown") this.finish({ kind: "shown", request: out });
    else if (msg.type === "refused") this.finish({ kind: "refused", request: out, message: String(msg.message) });
    else return false;
    return true;
  }

  /** Drop what is out without an outcome (the view is going away). */
  dispose(): void {
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
    this.out = null;
  }

  private start(message: AnnotatorRequest): boolean {
    if (this.out) return false;
    this.counter += 1;
    const sent = { ...message, request: this.counter } as AnnotatorRequest;
    this.out = sent;
    this.timer = this.timers.set(() => {
      if (this.out === sent) this.finish({ kind: "refused", request: sent, message: NO_REPLY });
    }, this.timeoutMs);
    try {
      this.send(sent);
    } catch (err) {
      this.finish({ kind: "refused", request: sent, message: err instanceof Error ? err.message : String(err) });
    }
    return true;
  }

  private finish(outcome: Outcome): void {
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
    this.out = null;
    this.settled(outcome);
  }
}
