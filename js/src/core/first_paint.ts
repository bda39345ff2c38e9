/**
 * Start a view on its first paint, not at render time.
 *
 * A host may call `render` while the output is not laid out: VS Code runs
 * widget code for outputs that are off screen (vscode-jupyter #17132), a
 * JupyterLab tab may be hidden, a page may put the view in a collapsed
 * section. Every size a view reads then is 0 (getBoundingClientRect,
 * clientWidth), and what it draws from them (HeadView's lines, ModelView's
 * thumbnails) stays wrong after the output is shown. So the view's own code
 * runs only once `el` has a box: at once when it already has one, otherwise
 * when a ResizeObserver reports one (display:none -> shown, or a detached
 * element attached), which happens before that frame is painted.
 */

type Cleanup = () => void;

/** Whether `el` is laid out: in the document and not inside `display: none`. */
export function isLaidOut(el: Element): boolean {
  if (!el.isConnected) return false;
  const rects = el.getClientRects();
  if (rects.length === 0) return false;
  const box = el.getBoundingClientRect();
  return box.width > 0 || box.height > 0;
}

/**
 * Call `start` once `el` is laid out (now, or on the first resize that gives
 * it a box); returns a cleanup that undoes `start`'s work or, before it ran,
 * stops waiting. Where the page has no ResizeObserver (node tests, old
 * browsers) `start` runs at once, as it always did.
 */
export function onFirstPaint(el: Element, start: () => Cleanup | void): Cleanup {
  const view = el.ownerDocument?.defaultView as (Window & typeof globalThis) | null | undefined;
  const Observer = view?.ResizeObserver ?? (typeof ResizeObserver === "undefined" ? undefined : ResizeObserver);
  let cleanup: Cleanup | void = undefined;
  let done = false;
  if (!Observer || isLaidOut(el)) {
    cleanup = start();
    return () => {
      if (typeof cleanup === "function") cleanup();
    };
  }
  const observer = new Observer(() => {
    if (done || !isLaidOut(el)) return;
    done = true;
    observer.disconnect();
    cleanup = start();
  });
  observer.observe(el);
  return () => {
    done = true;
    observer.disconnect();
    if (typeof cleanup === "function") cleanup();
  };
}
