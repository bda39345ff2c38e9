/**
 * What the calculator's page sends: every edit is a trait change saved to the
 * kernel (one array with one entry changed, or a scalar), which recomputes
 * the steps in Python and sends them back with `revision` + 1. A ReplyWatch
 * notices when no reply comes (a saved page has no kernel).
 */
import { saveTraits } from "../core/dom";
import { decodeWire, encodeWire, withEntry } from "./calculator_state";
import type { ArrayName, CalculatorTraits } from "./calculator_types";

interface Model {
  get<K extends keyof CalculatorTraits>(key: K): CalculatorTraits[K];
  set(key: never, value: never): void;
  save_changes(): void;
}

export type Patch = Partial<Omit<CalculatorTraits, "_view">>;

/** Save traits to the kernel in one message. */
export function save(model: Model, patch: Patch): void {
  saveTraits<Patch>(model, patch);
}

/** Set entry `index` of array `name` (NaN allowed: Python says what is wrong). */
export function saveEntry(model: Model, name: ArrayName, index: number, value: number): boolean {
  const current = decodeWire(model.get(name), name);
  if (!current || !(index >= 0 && index < current.data.length)) return false;
  if (Object.is(current.data[index], value)) return false;
  save(model, { [name]: encodeWire(withEntry(current, index, value)) } as Patch);
  return true;
}

/** How long an edit may wait for the kernel's computation before the page says so. */
export const REPLY_MS = 3000;

/** Calls `onSilence` when an edit got no new `revision` within REPLY_MS. */
export class ReplyWatch {
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly onSilence: () => void) {}

  /** An edit was sent. */
  sent(): void {
    if (this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.onSilence();
    }, REPLY_MS);
  }

  /** The kernel computed (a new revision arrived). */
  answered(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  dispose(): void {
    this.answered();
  }
}
