/**
 * attnwidget's front end: ONE ES module for every view. The Python widget
 * sets the `_view` trait; `render` dispatches on it.
 */
import type { AnyModel, RenderProps } from "@anywidget/types";

import { renderSaliency } from "./saliency";
// HeadView / ModelView (attention_*.ts, head_view.ts, model_view.ts)
import { renderHeadView } from "./head_view";
import { renderModelView } from "./model_view";
import type { HeadTraits, ModelTraits } from "./attention_types";
// FlowView (flow_*.ts)
import { renderFlowView } from "./flow_view";
import type { FlowTraits } from "./flow_types";
// ImageView (image_*.ts)
import { renderImageView } from "./image_view";
import type { ImageTraits } from "./image_types";
// EvaluationView (evaluation_*.ts)
import { renderEvaluationView } from "./evaluation_view";
import type { EvaluationTraits } from "./evaluation_types";
// Annotator (annotator*.ts)
import { renderAnnotator } from "./annotator";
import type { AnnotatorTraits } from "./annotator_types";
// AttentionCalculator (calculator_*.ts)
import { renderCalculator } from "./calculator_view";
import type { CalculatorTraits } from "./calculator_types";
// NeuronView (neuron_*.ts)
import { renderNeuronView } from "./neuron_view";
import type { NeuronTraits } from "./neuron_types";
// AlignmentView (alignment_*.ts)
import { renderAlignmentView } from "./alignment_view";
import type { AlignmentTraits } from "./alignment_types";
// GenerationView (generation_*.ts)
import { renderGenerationView } from "./generation_view";
import type { GenerationTraits } from "./generation_types";
// AttentionMatrixView (matrix_*.ts)
import { renderMatrixView } from "./matrix_view";
import type { MatrixTraits } from "./matrix_types";
import { mountWhenReady, renderStandalone as renderPayload, type StandaloneView } from "./standalone";
import { withToolbar } from "./toolbar";
import type { BaseTraits, SaliencyTraits } from "./types";

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
  annotator: (props) => renderAnnotator(props as { model: AnyModel<AnnotatorTraits>; el: HTMLElement }),
  calculator: (props) => renderCalculator(props as { model: AnyModel<CalculatorTraits>; el: HTMLElement }),
  neuron: (props) => renderNeuronView(props as { model: AnyModel<NeuronTraits>; el: HTMLElement }),
  alignment: (props) => renderAlignmentView(props as { model: AnyModel<AlignmentTraits>; el: HTMLElement }),
  generation: (props) => renderGenerationView(props as { model: AnyModel<GenerationTraits>; el: HTMLElement }),
  matrix: (props) => renderMatrixView(props as { model: AnyModel<MatrixTraits>; el: HTMLElement }),
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
