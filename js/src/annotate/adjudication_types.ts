/**
 * AdjudicationView's traits and messages (Python:
 * attnwidget/views/annotate/adjudication_view.py, whose module docstring is
 * the message schema). Trait names are checked against Python's by
 * test/core/fixtures.test.ts (trait_names.ts).
 */
import type { BaseTraits } from "../core/types";

/** `[start, end)` character offsets into the item's text. */
export type CharSpan = [number, number];

/** What one annotator did with the item. */
export type RowStatus = "saved" | "no_evidence" | "missing";

export interface AnnotatorRow {
  annotator: string;
  status: RowStatus;
  char_spans: CharSpan[];
  /** "" for none. */
  label: string;
  /** 0 when missing. */
  revision: number;
}

/** The gold row: the same, with how it was made ("" rule: saved by hand or not yet). */
export interface GoldRow extends AnnotatorRow {
  rule: string;
  reason: string;
  /** [annotator, revision] of each source version. */
  sources: [string, number][];
}

export interface AdjudicationItem {
  /** Position in the view's order (most disagreement first). */
  index: number;
  id: string;
  text: string;
  text_pair: string;
  label: string;
  /** Mean pairwise token F1; null with fewer than two annotations. */
  token_f1: number | null;
  rows: AnnotatorRow[];
  gold: GoldRow;
}

export interface LastSaved {
  item_id: string;
  annotator: string;
  rule: string;
  reason: string;
  revision: number;
  no_evidence: boolean;
  char_spans: CharSpan[];
}

/** The filter bar, as attnwidget.annotations.review's keywords (null / "": not filtered on). */
export interface Filters {
  text?: string | null;
  label?: string | null;
  annotator?: string | null;
  max_token_f1?: number | null;
  no_evidence?: boolean | null;
}

/** [index, id, snippet, token_f1 or null]. */
export type Match = [number, string, string, number | null];

export interface AdjudicationTraits extends BaseTraits {
  _view: "adjudication";
  annotators: string[];
  as_annotator: string;
  count: number;
  labels: string[];
  item: AdjudicationItem | Record<string, never>;
  index: number;
  item_id: string;
  rule: string;
  reason: string;
  last_saved: LastSaved | null;
  filters: Filters;
  matches: Match[];
  match_count: number;
  status: string;
}

export interface GoRequest {
  type: "go";
  request: number;
  index: number;
}

export interface AdjudicateRequest {
  type: "adjudicate";
  request: number;
  index: number;
  item_id: string;
  /** "majority" | "union" | "intersection" | an annotator's name. */
  rule: string;
  reason: string;
}

export interface FilterRequest {
  type: "filter";
  request: number;
  filters: Filters;
}

export type AdjudicationRequest = GoRequest | AdjudicateRequest | FilterRequest;

/** The replies: "shown" | "saved" | "filtered" | "refused" (with `message`). */
export interface AdjudicationReply {
  type: "shown" | "saved" | "filtered" | "refused";
  request?: unknown;
  message?: string;
}
