/**
 * Annotator's traits and messages (Python: attnwidget/views/annotate/annotator.py,
 * whose docstring holds the schema). Trait names are checked against
 * Python's by test/core/fixtures.test.ts (trait_names.ts).
 */
import type { BaseTraits, Binary } from "../core/types";

/** A run of marked words: [start, end), end exclusive. */
export type Span = [number, number];

/** The item shown: its units (words, tokens or characters) are what spans index (text, never HTML). */
export interface ShownItem {
  index: number;
  id: string;
  words: string[];
  /** Token/char granularity: the text after each unit (absent: one space). */
  gaps?: string[];
  text_pair: string;
  /** The data's own label ("" if none). */
  label: string;
}

/** The stored annotation of the item. */
export interface SavedAnnotation {
  spans: Span[];
  /** Saved as "no evidence" (spans is then empty). */
  no_evidence?: boolean;
  /** The revision an undo/redo restored (null: an ordinary save). */
  reverted_from?: number | null;
  label: string;
  note: string;
  confidence: number | null;
  revision: number;
  saved_at: string;
}

/** The model's prediction ({} without a model, or before it is computed). */
export interface Prediction {
  label?: string;
  probability?: number;
  truncated?: boolean;
}

/** Undo/redo of the item shown. */
export interface HistoryState {
  undo?: boolean;
  redo?: boolean;
  /** The revision whose marks are current (null: nothing saved). */
  shown?: number | null;
}

/** What the page shows, from the Annotator's options. */
export interface Settings {
  guidelines?: string;
  guidelines_version?: string;
  granularity?: "word" | "token" | "char";
  /** The suggestions' method ("" off). */
  suggest?: string;
  show_label?: boolean;
  show_prediction?: boolean;
  /** The queue's length (null: no assignment). */
  queue?: number | null;
}

export interface AnnotatorTraits extends BaseTraits {
  _view: "annotator";
  annotator: string;
  count: number;
  item: ShownItem | Record<string, never>;
  labels: string[];
  saved: SavedAnnotation | null;
  /** [done, total, no_evidence]. */
  progress: number[];
  history: HistoryState;
  settings: Settings;
  /** The suggested units as spans. */
  suggested: Span[];
  prediction: Prediction;
  methods: string[];
  signed: boolean[];
  /** float32 (m, n_words): each method's token scores summed to words. */
  scores: Binary | null;
  shape: number[];
  status: string;
  /** The item shown. Set by Python; the page asks to move with a "go" message. */
  index: number;
  /** Marked words, sorted, not overlapping. Synced both ways. */
  selection: Span[];
  /** The chosen label, "" for none. Synced both ways. */
  label: string;
  note: string;
  /** 0..1, null for not given. */
  confidence: number | null;
  /** Draw the score overlay. Synced both ways. */
  overlay: boolean;
  /** The overlay's method. Synced both ways. */
  selected_method: string;
}

/** page -> kernel: save the page's marks for item `index` (Enter / Save). */
export interface SaveRequest {
  type: "save";
  request: number;
  index: number;
  item_id: string;
  spans: Span[];
  label: string;
  note: string;
  confidence: number | null;
  /** "No evidence": nothing is marked, on purpose. */
  no_evidence: boolean;
  /** Seconds spent on the item (shown to saved, the page hidden left out). */
  seconds: number | null;
  /** Then show the next item. */
  advance: boolean;
}

/** page -> kernel: restore the item's previous (undo) or next (redo) revision. */
export interface StepRequest {
  type: "undo" | "redo";
  request: number;
  index: number;
  item_id: string;
}

/** page -> kernel: show item `index` (arrows, Skip, first unannotated). */
export interface GoRequest {
  type: "go";
  request: number;
  index: number;
}

/** page -> kernel: show the first item not saved yet (the page does not know which). */
export interface FirstRequest {
  type: "first";
  request: number;
}

export type AnnotatorRequest = SaveRequest | GoRequest | FirstRequest | StepRequest;

/** kernel -> page: the save is in the store. */
export interface SavedReply {
  type: "saved";
  request: number;
  index: number;
  item_id: string;
  revision: number;
  progress: number[];
}

/** kernel -> page: the move is done (its item came as state before this). */
export interface ShownReply {
  type: "shown";
  request: number;
  index: number;
}

/** kernel -> page: the request changed nothing (why in `message`). */
export interface RefusedReply {
  type: "refused";
  /** A saved page's answer holds the request itself (replies.ts). */
  request?: number | AnnotatorRequest;
  index?: number;
  message: string;
}

export type AnnotatorReply = SavedReply | ShownReply | RefusedReply;
