/**
 * AdjudicationView's pure logic: cut an item's text into runs where every
 * row's marks are constant (so each row draws the same runs, character
 * exact), say which characters the annotators disagree on, read the filter
 * bar, map keys to actions, and keep one request to the kernel out at a time.
 */
import type { AnnotatorRow, CharSpan, Filters } from "./adjudication_types";

/** A run of characters `[start, end)` with the same marks in every row. */
export interface Segment {
  start: number;
  end: number;
  /** Per row given: whether it marks this run. */
  marked: boolean[];
  /** How many of the annotated rows (status not "missing") mark it. */
  count: number;
  /** Marked by some annotated rows but not all of them. */
  disputed: boolean;
}

function inside(spans: CharSpan[], at: number): boolean {
  return spans.some(([s, e]) => s <= at && at < e);
}

/**
 * The runs of `text` for `rows` (the annotators' rows, then any others such
 * as the gold row). `compared` rows (the first `compared` of them) decide
 * what is disputed: characters some annotated ones mark and others do not.
 */
export function segments(text: string, rows: Pick<AnnotatorRow, "status" | "char_spans">[], compared = rows.length): Segment[] {
  const n = text.length;
  const cuts = new Set<number>([0, n]);
  for (const row of rows) {
    for (const [s, e] of row.char_spans ?? []) {
      cuts.add(Math.max(0, Math.min(n, s)));
      cuts.add(Math.max(0, Math.min(n, e)));
    }
  }
  const points = [...cuts].sort((a, b) => a - b);
  const annotated = rows.slice(0, compared).filter((row) => row.status !== "missing").length;
  const out: Segment[] = [];
  for (let k = 0; k + 1 < points.length; k++) {
    const start = points[k] as number;
    const end = points[k + 1] as number;
    if (end <= start) continue;
    const marked = rows.map((row) => row.status === "saved" && inside(row.char_spans ?? [], start));
    const count = marked.slice(0, compared).filter((m, i) => m && rows[i]?.status !== "missing").length;
    out.push({ start, end, marked, count, disputed: count > 0 && count < annotated });
  }
  return out;
}

/** How many characters are disputed (visible ones: whitespace does not count). */
export function disputedChars(text: string, runs: Segment[]): number {
  let total = 0;
  for (const run of runs) if (run.disputed) total += text.slice(run.start, run.end).replace(/\s/g, "").length;
  return total;
}

/** The raw values of the filter bar's controls. */
export interface FilterInputs {
  text: string;
  label: string;
  annotator: string;
  maxF1: string;
  /** "" (any), "yes" or "no". */
  noEvidence: string;
}

/** The filters the bar says, or an error naming what is wrong. */
export function readFilters(inputs: FilterInputs): { filters: Filters } | { error: string } {
  const filters: Filters = {};
  if (inputs.text) filters.text = inputs.text;
  if (inputs.label) filters.label = inputs.label;
  if (inputs.annotator) filters.annotator = inputs.annotator;
  const raw = inputs.maxF1.trim();
  if (raw) {
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0 || value > 1) return { error: `token F1 ≤ ${JSON.stringify(raw)}: give a number from 0 to 1` };
    filters.max_token_f1 = value;
  }
  if (inputs.noEvidence === "yes") filters.no_evidence = true;
  else if (inputs.noEvidence === "no") filters.no_evidence = false;
  return { filters };
}

/** What a rule does, in words, for the gold row and buttons. */
export function ruleText(rule: string): string {
  if (rule === "majority") return "majority";
  if (rule === "union") return "union";
  if (rule === "intersection") return "intersection";
  return rule ? `accepted ${rule}` : "";
}

export type KeyAction = "previous" | "next" | null;

/** The key's action; none from inside a text field or a menu. */
export function keyAction(key: string, modified: boolean, inField: boolean): KeyAction {
  if (inField || modified) return null;
  if (key === "ArrowLeft") return "previous";
  if (key === "ArrowRight") return "next";
  return null;
}

export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const DEFAULT_TIMERS: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export const NO_REPLY = "no answer from the kernel: nothing is known to be saved. Is the notebook's kernel running?";

/** The outcome of a request: its reply type, and the refusal's message. */
export interface Outcome {
  type: string;
  message: string;
}

/**
 * One request to the kernel at a time, settled by its reply (matched by
 * number) or, after `timeoutMs`, as refused.
 */
export class OneRequest<R extends { type: string }> {
  private counter = 0;
  private out: (R & { request: number }) | null = null;
  private timer: unknown = null;

  constructor(
    private readonly send: (message: R & { request: number }) => void,
    private readonly settled: (outcome: Outcome, request: R) => void,
    private readonly timeoutMs = 10000,
    private readonly timers: Timers = DEFAULT_TIMERS,
  ) {}

  get busy(): boolean {
    return this.out !== null;
  }

  get pending(): R | null {
    return this.out;
  }

  start(message: R): boolean {
    if (this.out) return false;
    this.counter += 1;
    const sent = { ...message, request: this.counter };
    this.out = sent;
    this.timer = this.timers.set(() => {
      if (this.out === sent) this.finish({ type: "refused", message: NO_REPLY });
    }, this.timeoutMs);
    try {
      this.send(sent);
    } catch (err) {
      this.finish({ type: "refused", message: err instanceof Error ? err.message : String(err) });
    }
    return true;
  }

  /** A message from the kernel; whether it settled the request that is out. */
  reply(content: unknown): boolean {
    const out = this.out;
    if (!out || typeof content !== "object" || content === null) return false;
    const msg = content as { type?: unknown; request?: unknown; message?: unknown };
    // A saved page's refusal echoes the whole request (replies.ts).
    const asked = msg.request;
    const number = typeof asked === "object" && asked !== null ? (asked as { request?: unknown }).request : asked;
    if (number !== undefined && number !== out.request) return false;
    if (typeof msg.type !== "string" || !["shown", "saved", "filtered", "refused"].includes(msg.type)) return false;
    this.finish({ type: msg.type, message: msg.type === "refused" ? String(msg.message ?? "") : "" });
    return true;
  }

  dispose(): void {
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
    this.out = null;
  }

  private finish(outcome: Outcome): void {
    const request = this.out as R;
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
    this.out = null;
    this.settled(outcome, request);
  }
}
