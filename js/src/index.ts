/**
 * attnwidget's front end: ONE ES module for every view. The Python widget
 * sets the `_view` trait; `render` dispatches on it.
 */
import type { AnyModel, RenderProps } from "@anywidget/types";

import { renderSaliency } from "./saliency";
import type { BaseTraits, SaliencyTraits } from "./types";

type Cleanup = () => void;
type ViewRenderer = (props: { model: AnyModel<any>; el: HTMLElement }) => Cleanup | void;

/** Views by the value of their `_view` trait. */
const VIEWS: Record<string, ViewRenderer> = {
  saliency: (props) => renderSaliency(props as { model: AnyModel<SaliencyTraits>; el: HTMLElement }),
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
  return view({ model, el });
}

export default { render };
