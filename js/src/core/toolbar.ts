/**
 * The toolbar every view gets (index.ts wraps each render in it): download
 * the view as SVG or PNG, made in the page (snapshot.ts), nothing fetched.
 * The toolbar sits outside the element the view draws in, so it is never
 * part of the picture.
 */
import { h, styleElement } from "./dom";
import { onFirstPaint } from "./first_paint";
import { snapshot, snapshotToPng } from "./snapshot";
import styles from "./toolbar.css";

type Cleanup = () => void;

/** The image formats the toolbar offers. */
export type ExportFormat = "svg" | "png";

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n';

/** A file name made only of safe characters, from a view name. */
export function exportFileName(viewName: string, format: ExportFormat): string {
  const stem = viewName.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "") || "view";
  return `attnwidget-${stem}.${format}`;
}

/** The view inside `el` as an image file. */
export async function exportView(el: HTMLElement, format: ExportFormat): Promise<Blob> {
  const snap = snapshot(el);
  if (format === "svg") return new Blob([XML_DECLARATION, snap.svg], { type: "image/svg+xml" });
  return snapshotToPng(snap);
}

/** Save a blob as a file through the browser's download. */
export function download(doc: Document, blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const link = doc.createElement("a");
  link.href = url;
  link.download = fileName;
  link.style.display = "none";
  (doc.body ?? doc.documentElement).appendChild(link);
  link.click();
  link.remove();
  // Revoking at once can cancel the download in some browsers.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * Put the toolbar in `el` and let `draw` render the view below it, in an
 * element of its own, once the frame is laid out; the returned cleanup
 * removes both.
 */
export function withToolbar(el: HTMLElement, viewName: string, draw: (viewEl: HTMLElement) => Cleanup | void): Cleanup {
  const doc = el.ownerDocument;
  const message = h("span", { className: "attnw-toolbar-message", attrs: { "aria-live": "polite" } });
  const toolbar = h("div", { className: "attnw-toolbar", attrs: { role: "toolbar", "aria-label": "Export this view" } }, [
    message,
  ]);
  const view = h("div", { className: "attnw-view" });
  const frame = h("div", { className: "attnw-frame" }, [styleElement(styles), toolbar, view]);

  for (const format of ["svg", "png"] as const) {
    const button = h("button", {
      className: "attnw-tool",
      text: format.toUpperCase(),
      attrs: { type: "button", "data-format": format, title: `Download this view as ${format.toUpperCase()}` },
    });
    button.addEventListener("click", () => {
      button.disabled = true;
      message.textContent = "";
      exportView(view, format)
        .then((blob) => download(doc, blob, exportFileName(viewName, format)))
        .catch((error: unknown) => {
          message.textContent = `${format.toUpperCase()} export failed: ${error instanceof Error ? error.message : String(error)}`;
          console.error("attnwidget export:", error);
        })
        .finally(() => {
          button.disabled = false;
        });
    });
    toolbar.appendChild(button);
  }

  el.appendChild(frame);
  // The frame always has a box once shown (the toolbar is in it): the view
  // starts then, so it never measures itself while hidden (first_paint.ts).
  const cleanup = onFirstPaint(frame, () => draw(view));
  return () => {
    cleanup();
    frame.remove();
  };
}
