/**
 * The synced traits of every view, and the keys of FlowView's messages, as
 * runtime name lists, so the JS tests can compare them with Python's
 * (test/fixtures/traits.json and messages.json, written by
 * tests/test_fixtures_js.py). Each list is a Record over `keyof` its
 * interface: the compiler rejects a name the interface lacks and a list that
 * misses one, so interface, list and Python cannot drift apart silently.
 * Only the tests import this module (it is not in the bundle).
 */
import type { AdjudicationTraits } from "../annotate/adjudication_types";
import type { RatingTraits } from "../annotate/rating_types";
import type { AlignmentTraits } from "../annotate/alignment_types";
import type { AnnotatorTraits } from "../annotate/annotator_types";
import type { AttentionTraits, HeadTraits, ModelTraits } from "../attention/attention_types";
import type { CalculatorTraits } from "../teach/calculator_types";
import type { CompareTraits } from "../compare/compare_types";
import type { EvaluationTraits } from "../evaluate/evaluation_types";
import type { ComputeRequest, ErrorReply, LayerReply, LayerRequest, PathsReply, ProgressReply, StaleReply } from "../flow/flow_messages";
import type { FlowTraits } from "../flow/flow_types";
import type { GenerationTraits } from "../generation/generation_types";
import type { ImageTraits } from "../image/image_types";
import type { MatrixTraits } from "../matrix/matrix_types";
import type { NeuronTraits } from "../attention/neuron_types";
import type { SaliencyTraits } from "../saliency/saliency_types";

type Names<T> = Record<keyof T, true>;

const saliency: Names<SaliencyTraits> = {
  _view: true, tokens: true, raw_tokens: true, methods: true, summaries: true, signed: true, scores: true, shape: true,
  query_index: true, scale: true, selected_token: true, pair_tokens: true, pair_scores: true, pair_shape: true,
  target_score: true, pooling: true,
};

// Typed, so a name AttentionTraits lacks fails here (a spread below would hide it).
const attention: Names<AttentionTraits> = {
  _view: true, tokens: true, raw_tokens: true, decoder_tokens: true, matrices: true, sentence_b_start: true, preload: true,
  preload_index: true, _generation: true, theme: true, matrix: true, pair_filter: true, selected_token: true,
};

const head: Names<HeadTraits> = { ...attention, layer: true, heads: true, notes: true };

const model: Names<ModelTraits> = { ...attention, thumbs: true, thumb_index: true, layer: true, head: true, notes: true };

const flow: Names<FlowTraits> = {
  _view: true, stacks: true, stack: true, tokens: true, raw_tokens: true, shape: true, fused: true, fused_layers: true,
  head_fusion: true, query_index: true, caption: true, methods: true, summaries: true, signed: true,
  local_methods: true, version: true, selected_method: true, selected_layer: true, selected_token: true,
  threshold: true, scale: true, notes: true,
};

const image: Names<ImageTraits> = {
  _view: true, image: true, image_size: true, grid: true, patch_size: true, labels: true, special_tokens: true,
  ignored_keys: true, query_token: true, target: true, methods: true, summaries: true, signed: true, scores: true, shape: true,
  num_layers: true, num_heads: true, preload: true, preload_index: true, selected_method: true, layer: true,
  head: true, selected_patch: true, opacity: true,
};

const annotator: Names<AnnotatorTraits> = {
  _view: true, annotator: true, count: true, item: true, labels: true, saved: true, progress: true,
  prediction: true, methods: true, signed: true, scores: true, shape: true, status: true, index: true,
  selection: true, label: true, note: true, confidence: true, overlay: true, selected_method: true,
  history: true, settings: true, suggested: true,
};

const evaluation: Names<EvaluationTraits> = {
  _view: true, methods: true, metrics: true, metric_summaries: true, higher_is_better: true, summary: true,
  summary_shape: true, confidence: true, example_ids: true, example_texts: true, values: true, values_shape: true,
  selected: true, selected_example: true,
};

const compare: Names<CompareTraits> = {
  _view: true, tokens: true, raw_tokens: true, methods: true, summaries: true, signed: true, scores: true, shape: true,
  query_index: true, compared: true, disagreement: true, agreement_metrics: true, agreement_signed: true,
  agreement: true, agreement_shape: true, figure_kinds: true, figure_metrics: true, figure_summaries: true,
  figure_higher_is_better: true, figures: true, figure_shape: true, rationale: true, caption: true, notes: true,
  selected_token: true, selected_pair: true, agreement_metric: true,
};

const calculator: Names<CalculatorTraits> = {
  _view: true, caption: true, query_tokens: true, key_tokens: true, q: true, k: true, v: true, score_kind: true,
  W: true, W1: true, W2: true, v_a: true, beta: true, mask_kind: true, window: true, lengths: true, W_p: true,
  v_p: true, temperature: true, scores: true, masked_scores: true, weights: true, gaussian: true,
  local_weights: true, positions: true, output: true, steps_info: true, error: true, revision: true,
};

const neuron: Names<NeuronTraits> = {
  _view: true, tokens: true, raw_tokens: true, num_layers: true, num_heads: true, num_kv_heads: true, head_dim: true, causal: true,
  rotary: true, data_layer: true, scale: true, shape: true, q: true, k: true, q_rotated: true, k_rotated: true,
  scores: true, weights: true, layer: true, head: true, selected_token: true,
};

const alignment: Names<AlignmentTraits> = {
  _view: true, input_tokens: true, output_tokens: true, caption: true, shape: true, alignment: true,
  selected_output: true, selected_input: true,
};

const adjudication: Names<AdjudicationTraits> = {
  _view: true, annotators: true, as_annotator: true, count: true, labels: true, item: true, index: true, item_id: true,
  rule: true, reason: true, last_saved: true, filters: true, matches: true, match_count: true, status: true,
};

const rating: Names<RatingTraits> = {
  _view: true, mode: true, show_method: true, count: true, position: true, trial: true, scores: true,
  revealed: true, answered: true, status: true,
};

const generation: Names<GenerationTraits> = {
  _view: true, columns: true, prompt_length: true, generated_tokens: true, prefix_lengths: true, words: true,
  word_labels: true, methods: true, signed: true, scores: true, shape: true, caption: true,
  selected_method: true, selected_step: true, aggregate: true,
};

/** Trait names per `_view` value, sorted. */
export const TRAIT_NAMES: Record<string, string[]> = Object.fromEntries(
  Object.entries({ saliency, head, model, flow, image, evaluation, compare, annotator, calculator, neuron, alignment, generation, adjudication, rating }).map(([view, names]) => [view, Object.keys(names).sort()]),
);

const compute: Names<ComputeRequest> = { type: true, id: true, version: true, method: true, layer: true, token: true };
const request: Names<LayerRequest> = { type: true, version: true, layer: true };
const progress: Names<ProgressReply> = { type: true, id: true, done: true, total: true };
const paths: Names<PathsReply> = {
  type: true, id: true, version: true, method: true, layer: true, token: true, shape: true, counts: true,
  signed: true, note: true, floor: true, dropped: true, dtype: true, per_selection: true,
};
const layer: Names<LayerReply> = { type: true, version: true, layer: true };
const stale: Names<StaleReply> = { type: true, id: true, version: true };
const error: Names<ErrorReply> = { type: true, id: true, message: true };

/** FlowView's message keys per `type` value, sorted. */
export const FLOW_MESSAGE_KEYS: Record<string, string[]> = Object.fromEntries(
  Object.entries({ compute, request, progress, paths, layer, stale, error }).map(([type, names]) => [type, Object.keys(names).sort()]),
);

/**
 * The synced selection traits of each view whose "nothing selected" value
 * is NONE (core/types.ts), as in Python's SELECTION_TRAITS
 * (attnwidget/views/core/selection.py; fixture selection.json).
 */
export const SELECTION_TRAITS: Record<string, readonly string[]> = {
  saliency: ["selected_token"] satisfies (keyof SaliencyTraits)[],
  head: ["selected_token"] satisfies (keyof HeadTraits)[],
  model: ["layer", "head", "selected_token"] satisfies (keyof ModelTraits)[],
  flow: ["selected_token"] satisfies (keyof FlowTraits)[],
  matrix: ["head", "selected_token"] satisfies (keyof MatrixTraits)[],
  image: ["head", "selected_patch"] satisfies (keyof ImageTraits)[],
  alignment: ["selected_output", "selected_input"] satisfies (keyof AlignmentTraits)[],
  generation: ["selected_step"] satisfies (keyof GenerationTraits)[],
  compare: ["selected_token"] satisfies (keyof CompareTraits)[],
};
