/**
 * attnwidget's front end: ONE ES module for every view. The Python widget
 * sets the `_view` trait; `render` dispatches on it. One folder per view
 * family (attention/, matrix/, flow/, saliency/, image/, generation/,
 * annotate/, evaluate/, compare/, teach/), as in attnwidget/views/, and core/ for what
 * they all share.
 */
import type { AnyModel, RenderProps } from "@anywidget/types";

import { renderSaliency } from "./saliency/saliency_view";
// attention/: HeadView, ModelView, NeuronView
import { renderHeadView } from "./attention/head_view";
import { renderModelView } from "./attention/model_view";
import type { HeadTraits, ModelTraits } from "./attention/attention_types";
import { renderFlowView } from "./flow/flow_view";
import type { FlowTraits } from "./flow/flow_types";
import { renderImageView } from "./image/image_view";
import type { ImageTraits } from "./image/image_types";
import { renderEvaluationView } from "./evaluate/evaluation_view";
import type { EvaluationTraits } from "./evaluate/evaluation_types";
import { renderCompareView } from "./compare/compare_view";
import type { CompareTraits } from "./compare/compare_types";
import { renderAnnotator } from "./annotate/annotator_view";
import type { AnnotatorTraits } from "./annotate/annotator_types";
import { renderCalculator } from "./teach/calculator_view";
import type { CalculatorTraits } from "./teach/calculator_types";
import { renderNeuronView } from "./attention/neuron_view";
import type { NeuronTraits } from "./attention/neuron_types";
import { renderAdjudicationView } from "./annotate/adjudication_view";
import type { AdjudicationTraits } from "./annotate/adjudication_types";
import { renderAlignmentView } from "./annotate/alignment_view";
import { renderExplanationRating } from "./annotate/rating_view";
import type { RatingTraits } from "./annotate/rating_types";
import type { AlignmentTraits } from "./annotate/alignment_types";
import { renderGenerationView } from "./generation/generation_view";
import type { GenerationTraits } from "./generation/generation_types";
import { renderMatrixView } from "./matrix/matrix_view";
import type { MatrixTraits } from "./matrix/matrix_types";
import { mountWhenReady, renderStandalone as renderPayload, type StandaloneView } from "./core/standalone";
import { withToolbar } from "./core/toolbar";
import type { BaseTraits } from "./core/types";
import type { SaliencyTraits } from "./saliency/saliency_types";

type Cleanup = () => void;
type ViewRenderer = (props: { model: AnyModel<any>; el: HTMLElement }) => Cleanup | void;

/** Views by the value of their `_view` trait. */
const VIEWS: Record<string, ViewRenderer> = {
  saliency: (props) => renderSaliency(props as { model: AnyModel<SaliencyTraits>; el: HTMLElement }),
  head: (props) => renderHeadView(props as { model: AnyModel<HeadTraits>; el: HTMLElement }),
  model: (props) => renderModelView(props as { model: AnyModel<ModelTraits>; el: HTMLElement }),
  flow: (props) => renderFlowView(props as { model: AnyModel<FlowTraits>; el: HTMLElement }),
  image: (props) => renderImageView(props as { model: AnyModel<ImageTraits>; el: HTMLElement }),
  evaluation: (props) => renderEvaluationView(props as { model: AnyModel<EvaluationTraits>; el: HTMLElement }),
  compare: (props) => renderCompareView(props as { model: AnyModel<CompareTraits>; el: HTMLElement }),
  annotator: (props) => renderAnnotator(props as { model: AnyModel<AnnotatorTraits>; el: HTMLElement }),
  calculator: (props) => renderCalculator(props as { model: AnyModel<CalculatorTraits>; el: HTMLElement }),
  neuron: (props) => renderNeuronView(props as { model: AnyModel<NeuronTraits>; el: HTMLElement }),
  adjudication: (props) => renderAdjudicationView(props as { model: AnyModel<AdjudicationTraits>; el: HTMLElement }),
  alignment: (props) => renderAlignmentView(props as { model: AnyModel<AlignmentTraits>; el: HTMLElement }),
  generation: (props) => renderGenerationView(props as { model: AnyModel<GenerationTraits>; el: HTMLElement }),
  matrix: (props) => renderMatrixView(props as { model: AnyModel<MatrixTraits>; el: HTMLElement }),
  rating: (props) => renderExplanationRating(props as { model: AnyModel<RatingTraits>; el: HTMLElement }),
};

function render({ model, el }: RenderProps<BaseTraits>): Cleanup | void {
  const name = model.get("_view");
  const view = Object.prototype.hasOwnProperty.call(VIEWS, name) ? VIEWS[name] : undefined;
  if (!view) {
    const message =
      `attnwidget: this front-end bundle has no view ${JSON.stringify(name)} ` +
      `(it has: ${Object.keys(VIEWS).join(", ")}). The bundle is older than the Python ` +
      "package: rebuild it with `npm --prefix js run build` or reinstall attnwidget.";
    const div = document.createElement("div");
    div.className = "attnw-error";
    div.textContent = message;
    el.appendChild(div);
    console.error(message);
    return;
  }
  // Every view gets the SVG/PNG export toolbar, drawn once here.
  return withToolbar(el, name, (viewEl) => view({ model, el: viewEl }));
}

export default { render };

/**
 * Draw a view from an exported state payload (the parsed JSON of a
 * `data-attnwidget-state` block) with no kernel: see standalone.ts.
 */
export function renderStandalone(el: HTMLElement, payload: unknown): StandaloneView {
  return renderPayload(el, payload, render);
}

// Pages written by `to_html()` / scripts/run_notebook.py hold state blocks:
// draw them when this module loads. In Jupyter there are none: nothing happens.
if (typeof document !== "undefined") mountWhenReady(document, render);
