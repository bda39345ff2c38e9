/**
 * NeuronView's messages to the kernel: the page changes only the three
 * synced traits (layer, head, selected_token), each saved at once; Python
 * answers a new layer by replacing the arrays (data_layer says which).
 */
import type { AnyModel } from "@anywidget/types";

import { saveTraits } from "../core/dom";
import type { NeuronTraits } from "./neuron_types";

type Synced = Pick<NeuronTraits, "layer" | "head" | "selected_token">;
/** A change the page makes. */
export type NeuronPick = Partial<Synced>;

/** Save a pick from the page; values equal to the model's are not sent. */
export function savePick(model: AnyModel<NeuronTraits>, pick: NeuronPick): boolean {
  const changed: NeuronPick = {};
  for (const [key, value] of Object.entries(pick) as [keyof Synced, number][]) {
    if (model.get(key) !== value) changed[key] = value;
  }
  if (Object.keys(changed).length === 0) return false;
  saveTraits<Synced>(model as never, changed);
  return true;
}

/** The traits whose change means new data, and those that only redraw. */
export const DATA_TRAITS = ["data_layer", "q", "k", "q_rotated", "k_rotated", "scores", "weights", "shape", "tokens", "rotary", "causal", "scale"] as const;
export const VIEW_TRAITS = ["layer", "head", "selected_token", "num_layers", "num_heads"] as const;
