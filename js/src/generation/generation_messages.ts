/**
 * GenerationView's messaging with the kernel: which traits redraw what, and
 * the synced changes a click or a menu makes (one save each).
 */
import type { AnyModel } from "@anywidget/types";

import { saveTraits } from "../core/dom";
import type { Aggregate } from "./generation_state";
import type { GenerationTraits } from "./generation_types";

type Model = AnyModel<GenerationTraits>;

/** Traits whose change re-reads the data. */
export const DATA_TRAITS = ["scores", "shape", "methods", "signed", "columns", "generated_tokens", "prompt_length", "prefix_lengths", "words", "word_labels", "caption"] as const;
/** Synced view state: a change redraws from the data already read. */
export const VIEW_TRAITS = ["selected_method", "selected_step", "aggregate"] as const;

/** Select a step (synced to Python). */
export function saveStep(model: Model, step: number): void {
  if (step === model.get("selected_step")) return;
  saveTraits<Pick<GenerationTraits, "selected_step">>(model as never, { selected_step: step });
}

/** Show a method (synced to Python). */
export function saveMethod(model: Model, method: string): void {
  if (method === model.get("selected_method")) return;
  saveTraits<Pick<GenerationTraits, "selected_method">>(model as never, { selected_method: method });
}

/** Tokens or words (synced to Python). */
export function saveAggregate(model: Model, mode: Aggregate): void {
  if (mode === model.get("aggregate")) return;
  saveTraits<Pick<GenerationTraits, "aggregate">>(model as never, { aggregate: mode });
}
