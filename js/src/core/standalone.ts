/**
 * Views without a kernel: pages written by `widget.to_html()` and by
 * scripts/run_notebook.py embed each widget's state as
 *
 *   <script type="application/json" data-attnwidget-state>{payload}</script>
 *
 * plus this bundle once as an inline module. When the bundle loads it draws a
 * view after every such block, through the same `render` Jupyter calls, on a
 * LocalModel: clicks and hovers work, nothing goes to a server.
 */
import type { RenderProps } from "@anywidget/types";

import { LocalModel, decodePayload, type Payload } from "./localmodel";
import { pageReplySources, recordedResponder } from "./replies";

type Cleanup = () => void;
/** The bundle's `render` (passed in: index.ts imports this module). */
export type Render = (props: RenderProps<any>) => Cleanup | void;

/** Attribute of the JSON blocks that hold a widget's state. */
export const STATE_ATTRIBUTE = "data-attnwidget-state";
/** Set on a block once its view is drawn, so a second bundle copy skips it. */
const MOUNTED_ATTRIBUTE = "data-attnwidget-mounted";

/** A drawn standalone view. */
export interface StandaloneView {
  model: LocalModel<any>;
  /** Remove the view and its listeners. */
  destroy(): void;
}

/** Draw a view from an exported payload (parsed JSON) into `el`. */
export function renderStandalone(el: HTMLElement, payload: unknown, render: Render): StandaloneView {
  const state = decodePayload(payload); // validates the payload first
  const { model_id: modelId, unanswered } = payload as Payload;
  // The page's requests go to the replies recorded for this model (replies.ts).
  const respond =
    typeof modelId === "string" && el.ownerDocument
      ? recordedResponder(pageReplySources(el.ownerDocument, modelId), unanswered)
      : undefined;
  const model = new LocalModel<any>(state, { respond });
  const controller = new AbortController();
  // No kernel answers calls and no other widgets exist in a static page.
  const missing = (what: string) => Promise.reject(new Error(`attnwidget: ${what} is not available in a standalone page`));
  const cleanup = render({
    model,
    el,
    signal: controller.signal,
    host: {
      getWidget: (ref: string) => missing(`widget ${JSON.stringify(ref)}`),
      getModel: (ref: string) => missing(`model ${JSON.stringify(ref)}`),
    },
    experimental: { invoke: (name: string) => missing(`the kernel call ${JSON.stringify(name)}`) },
  });
  return {
    model,
    destroy: () => {
      controller.abort();
      if (typeof cleanup === "function") cleanup();
    },
  };
}

/**
 * Draw a view after every state block of `root` that has none yet; returns
 * the views drawn. A block that cannot be read shows an error in its place
 * (and the console) without stopping the others.
 */
export function mountStandalone(root: ParentNode, render: Render): StandaloneView[] {
  const views: StandaloneView[] = [];
  const blocks = root.querySelectorAll<HTMLScriptElement>(`script[type="application/json"][${STATE_ATTRIBUTE}]`);
  for (const block of Array.from(blocks)) {
    if (block.hasAttribute(MOUNTED_ATTRIBUTE)) continue;
    block.setAttribute(MOUNTED_ATTRIBUTE, "");
    const el = block.ownerDocument.createElement("div");
    el.className = "attnw-standalone-view";
    block.after(el);
    try {
      views.push(renderStandalone(el, JSON.parse(block.textContent ?? ""), render));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const div = block.ownerDocument.createElement("div");
      div.className = "attnw-error";
      div.textContent = `attnwidget: cannot draw this exported view: ${message}`;
      el.replaceChildren(div);
      console.error("attnwidget standalone view:", error);
    }
  }
  return views;
}

/**
 * Mount the views whose state blocks are parsed now, and the rest once the
 * whole page is. The bundle is an `async` module: it may run while the
 * parser is still reading the page (a saved page's recorded attention comes
 * after it), and its views draw without waiting for that.
 */
export function mountWhenReady(doc: Document, render: Render): void {
  mountStandalone(doc, render);
  reportFrameSize(doc);
  if (doc.readyState === "loading") {
    doc.addEventListener("DOMContentLoaded", () => mountStandalone(doc, render), { once: true });
  }
}

/** Attribute on `<html>` of a page shown in a notebook's iframe (attnwidget/views/core/fallback.py). */
export const FRAME_ATTRIBUTE = "data-attnwidget-frame";
/** The message that tells the host page the framed page's height. */
export const SIZE_MESSAGE = "attnwidget-frame-size";

/**
 * In a framed page, tell the host page the document's height whenever it
 * changes, so the host sizes the iframe to the view (a sandboxed frame's
 * host cannot read it). The message carries a number only.
 */
export function reportFrameSize(doc: Document): void {
  const win = doc.defaultView;
  const root = doc.documentElement;
  if (!win || win.parent === win || !root.hasAttribute(FRAME_ATTRIBUTE) || typeof ResizeObserver === "undefined") return;
  let last = -1;
  const post = () => {
    const height = Math.ceil(root.getBoundingClientRect().height);
    if (height === last) return;
    last = height;
    win.parent.postMessage({ type: SIZE_MESSAGE, height }, "*");
  };
  new ResizeObserver(post).observe(root);
}
