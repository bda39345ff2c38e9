/**
 * ExplanationRating (Python: attnwidget/views/annotate/rating_view.py, whose
 * docstring has the traits and messages). A hidden method's name is never
 * sent: a panel's label is then "Explanation" or "A"/"B".
 */
import type { BaseTraits, Binary } from "../core/types";

export type RatingMode = "rate" | "compare" | "simulate";

export interface RatingPanel {
  label: string;
  /** "left" | "right" in compare, else "". */
  side: string;
  signed: boolean;
}

export interface RatingTrial {
  position: number;
  tokens: string[];
  query_index: number;
  explanation_shown: boolean;
  panels: RatingPanel[];
  /** simulate: the outputs to pick from. */
  choices: string[];
  /** [panels, tokens] of `scores`. */
  shape: number[];
}

export interface RatingTraits extends BaseTraits {
  _view: "rating";
  mode: RatingMode;
  show_method: boolean;
  count: number;
  position: number;
  /** {} once every trial is answered. */
  trial: Partial<RatingTrial>;
  /** float32 (panels, tokens). */
  scores: Binary | null;
  /** simulate, after an answer: {} before. */
  revealed: { predicted?: string; actual?: string; correct?: boolean };
  answered: number;
  status: string;
}
