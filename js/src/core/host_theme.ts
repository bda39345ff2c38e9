/**
 * Host theme changes. Colours read from CSS (the --jp-* / VS Code variables)
 * follow a theme switch by themselves in the DOM, but what a view copied onto
 * a canvas does not: such views redraw when this fires.
 */

/** Attributes of <body> that JupyterLab (data-jp-theme-*) and VS Code (class) change with the theme. */
const THEME_ATTRIBUTES = ["data-jp-theme-light", "data-jp-theme-name", "class"];

/** Call `onChange` whenever the host page may have switched theme; returns a function that stops it. */
export function watchHostTheme(onChange: () => void): () => void {
  const body = globalThis.document?.body;
  if (!body || typeof MutationObserver === "undefined") return () => {};
  const observer = new MutationObserver(() => onChange());
  observer.observe(body, { attributes: true, attributeFilter: THEME_ATTRIBUTES });
  return () => observer.disconnect();
}
