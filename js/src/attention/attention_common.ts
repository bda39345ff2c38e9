/**
 * What HeadView and ModelView share in the page: reading their traits into a
 * consistent picture (matrix, tokens, pair block), the matrix / pair-filter
 * selectors, the attention store fed by preload and kernel replies, the
 * pinned token (`selected_token`: keys, matrix switches, status text), and
 * the forced theme.
 */
import type { AnyModel } from "@anywidget/types";

import { pairBlock, type Range } from "./attention_layout";
import { AttentionStore, Requester } from "./attention_state";
import type { AttentionError, AttentionReply, AttentionTraits, MatrixInfo, PairFilter } from "./attention_types";
import { Listeners } from "../core/listeners";
import { h } from "../core/dom";
import type { Binary } from "../core/types";

export const PAIR_LABELS: Record<PairFilter, string> = {
  all: "All",
  "A->A": "Sentence A → Sentence A",
  "B->B": "Sentence B → Sentence B",
  "A->B": "Sentence A → Sentence B",
  "B->A": "Sentence B → Sentence A",
};

/** The current matrix and the part of it the pair filter keeps. */
export interface Shown {
  info: MatrixInfo;
  rowTokens: string[];
  colTokens: string[];
  /** The tokenizer's strings of rowTokens / colTokens ([] where unknown: decoder tokens). */
  rowRaw: string[];
  colRaw: string[];
  /** Whether sentence-pair filters apply to this matrix. */
  pairs: boolean;
  filter: PairFilter;
  rows: Range;
  cols: Range;
}

export function shownOf(model: AnyModel<AttentionTraits>): Shown | null {
  const matrices = model.get("matrices") ?? [];
  const info = matrices.find((m) => m.key === model.get("matrix")) ?? matrices[0];
  if (!info) return null;
  const list = (name: string): string[] => (model.get(name === "decoder_tokens" ? "decoder_tokens" : "tokens") ?? []).map(String);
  const split = model.get("sentence_b_start") ?? -1;
  const pairs = split > 0 && info.rows === "tokens" && info.cols === "tokens";
  const filter: PairFilter = pairs ? (model.get("pair_filter") ?? "all") : "all";
  const block = pairBlock(filter, info.shape[2], info.shape[3], pairs ? split : null);
  const raw = (name: string): string[] => (name === "tokens" ? (model.get("raw_tokens") ?? []).map(String) : []);
  return { info, rowTokens: list(info.rows), colTokens: list(info.cols), rowRaw: raw(info.rows), colRaw: raw(info.cols), pairs, filter, ...block };
}

/** A labelled <select>; `onChange` gets the chosen option's value. */
export function select(label: string, className: string, onChange: (value: string) => void): { wrap: HTMLElement; el: HTMLSelectElement } {
  const el = h("select", { className });
  el.addEventListener("change", () => onChange(el.value));
  const wrap = h("label", { className: "attnw-control" }, [h("span", { text: `${label} ` }), el]);
  return { wrap, el };
}

/** Set a select's options (value, text) only when they differ, then its value. */
export function setOptions(el: HTMLSelectElement, options: readonly [string, string][], value: string): void {
  const current = Array.from(el.options, (o) => [o.value, o.text]);
  if (JSON.stringify(current) !== JSON.stringify(options)) {
    el.replaceChildren(...options.map(([v, text]) => h("option", { text, attrs: { value: v } })));
  }
  el.value = value;
}

/**
 * The pinned query row after a key press: Esc unpins, ↓/↑ move the pin within
 * `rows` (from nothing: the first / last row). null: the key changes nothing
 * (any other key, Esc with nothing pinned, ↓ on the last row ...).
 */
export function pinAfterKey(key: string, pinned: number, rows: Range): number | null {
  let next: number | null = null;
  if (key === "Escape") next = -1;
  else if (key === "ArrowDown") next = pinned < 0 ? rows[0] : Math.min(rows[1] - 1, pinned + 1);
  else if (key === "ArrowUp") next = pinned < 0 ? rows[1] - 1 : Math.max(rows[0], pinned - 1);
  return next === null || next === pinned || (next >= 0 && rows[1] <= rows[0]) ? null : next;
}

/**
 * Whether a pinned query stays pinned when the shown matrix switches from
 * `from` to `to`: only when both have the same query tokens (decoder <->
 * cross), as in Python (_AttentionView._unpin_other_queries).
 */
export function pinSurvives(from: MatrixInfo | undefined, to: MatrixInfo | undefined, pinned: number): boolean {
  return pinned < 0 || (from !== undefined && to !== undefined && from.rows === to.rows && pinned < to.shape[2]);
}

/** The status line's hint about pinning (which query is pinned, or how to pin one) and causal masking. */
export function pinHint(tokens: readonly string[], pinned: number, causal: boolean): string {
  const hint =
    pinned >= 0 && pinned < tokens.length
      ? `Pinned #${pinned} ${JSON.stringify(tokens[pinned])} (click it again or Esc to unpin).`
      : "Hover a token to see only its lines; click a query token to pin it.";
  return causal ? `${hint} Causal: a query sees only itself and earlier tokens.` : hint;
}

/**
 * The line under the controls for a matrix with left-out keys (its `note`),
 * "" for none: "Attention with keys #0 '[CLS]' left out, rows renormalised (ignore_keys)."
 */
export function keysNote(info: MatrixInfo | undefined): string {
  const note = info?.note ?? "";
  return note ? `Attention with ${note} (ignore_keys).` : "";
}

/**
 * Matrix and pair-filter selectors, kept in step with the model, and the
 * line that says which keys the shown matrix leaves out (`note`). Switching
 * to a matrix with other query tokens unpins `selected_token` in the same save.
 */
export function attentionControls(
  model: AnyModel<AttentionTraits>,
  onChange: (patch: { matrix?: string; pair_filter?: PairFilter; selected_token?: number }) => void,
) {
  const matrix = select("Attention:", "attnw-matrix", (key) => {
    const matrices = model.get("matrices") ?? [];
    const from = shownOf(model)?.info;
    const keep = pinSurvives(from, matrices.find((m) => m.key === key), model.get("selected_token") ?? -1);
    onChange(keep ? { matrix: key } : { matrix: key, selected_token: -1 });
  });
  const filter = select("Filter:", "attnw-filter", (value) => onChange({ pair_filter: value as PairFilter }));
  const note = h("div", { className: "attnw-keys-note" });
  const sync = (shown: Shown | null): void => {
    note.textContent = keysNote(shown?.info);
    const matrices = model.get("matrices") ?? [];
    setOptions(matrix.el, matrices.map((m) => [m.key, m.label]), shown?.info.key ?? "");
    matrix.wrap.hidden = matrices.length < 2;
    const split = model.get("sentence_b_start") ?? -1;
    setOptions(filter.el, (Object.keys(PAIR_LABELS) as PairFilter[]).map((k) => [k, PAIR_LABELS[k]]), shown?.filter ?? "all");
    filter.wrap.hidden = split <= 0;
    // Cross/decoder attention has no sentence pair: the filter stays visible but off.
    filter.el.disabled = !shown?.pairs;
  };
  return { elements: [matrix.wrap, filter.wrap], note, sync };
}

/**
 * The store of a view's attention: filled from the `preload` trait, then
 * from kernel replies (`msg:custom`); `onData` runs after each reply and
 * `onError` when the kernel could not serve a request.
 */
export function attentionFeed(
  model: AnyModel<AttentionTraits>,
  onData: () => void,
  onError: (message: string) => void,
): { store: () => AttentionStore; requester: Requester; dispose: () => void } {
  let store = new AttentionStore([]);
  // A page without a kernel (an exported HTML file) drops requests: say so
  // instead of "loading" forever.
  let replies = 0;
  let failed = false; // the last reply was an error (see onNavigate)
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const requester = new Requester((content) => {
    model.send(content);
    const before = replies;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (replies === before) onError(NO_REPLY_TEXT);
    }, NO_REPLY_MS);
    timers.add(timer);
  });
  const reload = (): void => {
    store = new AttentionStore(model.get("matrices") ?? []);
    requester.reset();
    try {
      store.ingestIndexed(model.get("preload"), model.get("preload_index") ?? []);
    } catch (error) {
      onError(error instanceof Error ? error.message : String(error));
    }
  };
  const onMessage = (content: unknown, buffers?: readonly Binary[]): void => {
    // The kernel's replies (attention_types.ts); anything else is ignored.
    const msg = content as AttentionReply | AttentionError | null | undefined;
    replies += 1;
    if (msg?.type === "attention") {
      try {
        const buffer = buffers?.[0];
        if (!buffer) throw new RangeError("attention reply without its data buffer");
        store.ingest(msg, buffer);
      } catch (error) {
        onError(error instanceof Error ? error.message : String(error));
        return;
      }
      onData();
    } else if (msg?.type === "error") {
      // Retry after the user navigates, not at once: the redraw that shows
      // the error would ask again, get the same error, and loop.
      failed = true;
      onError(String(msg.message ?? "the kernel could not send this attention"));
    }
  };
  const onNavigate = (): void => {
    if (!failed) return;
    failed = false;
    requester.reset();
  };
  const onStructure = (): void => {
    reload();
    onData();
  };
  reload();
  const listeners = new Listeners()
    .add(() => {
      for (const timer of timers) clearTimeout(timer);
    })
    .model(model, "msg:custom", onMessage)
    .model(model, NAVIGATION_EVENTS, onNavigate)
    // A new explanation may come with the same matrix shapes and no preload
    // (both unchanged), so only _generation says that the stored attention is stale.
    .traits(model, ["preload", "matrices", "_generation"], onStructure);
  return { store: () => store, requester, dispose: listeners.dispose };
}

/** Trait changes that show other attention (ModelView has `head`, HeadView does not). */
const NAVIGATION_EVENTS = "change:layer change:head change:matrix";

/** Apply the `theme` trait: "auto" follows the host's CSS variables. */
export function applyTheme(root: HTMLElement, theme: string | undefined): void {
  if (theme === "light" || theme === "dark") root.dataset.theme = theme;
  else delete root.dataset.theme;
}

/** Status text when attention is awaited from the kernel. */
export const LOADING_TEXT = "Loading attention from the kernel…";
const NO_REPLY_MS = 10000;
const NO_REPLY_TEXT =
  "no reply from the kernel for this attention. If this page is a saved export, it holds only " +
  "the attention that was loaded when it was saved; rerun the notebook to explore the rest.";
