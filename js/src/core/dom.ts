/**
 * Small DOM helpers. Text always goes in through textContent and attribute
 * values through setAttribute: nothing a model sends is ever parsed as HTML.
 */

export interface ElementOptions {
  className?: string;
  /** Text content (set with textContent, never innerHTML). */
  text?: string;
  /** Attributes (values are plain strings, never markup). */
  attrs?: Record<string, string | number | boolean | undefined>;
  /** Inline style properties (CSS property names, e.g. "background-color"). */
  style?: Record<string, string>;
}

/** Create an element with text, attributes and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  options: ElementOptions = {},
  children: Node[] = [],
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (options.className) el.className = options.className;
  if (options.text !== undefined) el.textContent = options.text;
  for (const [name, value] of Object.entries(options.attrs ?? {})) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const [name, value] of Object.entries(options.style ?? {})) {
    el.style.setProperty(name, value);
  }
  for (const child of children) el.appendChild(child);
  return el;
}

/** Remove every child of an element. */
export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** A <style> element holding a bundled stylesheet (text, not markup). */
export function styleElement(cssText: string): HTMLStyleElement {
  const style = document.createElement("style");
  style.textContent = cssText;
  return style;
}

/**
 * How a token is shown: the token text itself, except that an empty token
 * shows as "∅" and whitespace-only tokens show their whitespace escaped
 * (" " -> "␣", "\n" -> "\\n"), so that no cell is invisible.
 */
export function displayToken(token: string): string {
  if (token === "") return "\u2205";
  if (token.trim() !== "") return token;
  return token.replace(/ /g, "\u2423").replace(/\n/g, "\\n").replace(/\t/g, "\\t").replace(/\r/g, "\\r");
}

/**
 * Run `fn` once the page is idle (requestIdleCallback; a short timer where
 * it is missing, e.g. Safari). Returns a function that cancels the call.
 */
export function whenIdle(fn: () => void, timeout = 2000): () => void {
  const g = globalThis as {
    requestIdleCallback?: (cb: () => void, opts?: { timeout: number }) => number;
    cancelIdleCallback?: (handle: number) => void;
  };
  if (g.requestIdleCallback) {
    const handle = g.requestIdleCallback(fn, { timeout });
    return () => g.cancelIdleCallback?.(handle);
  }
  const timer = setTimeout(fn, 50);
  return () => clearTimeout(timer);
}

/**
 * Coalesce redraw requests into one per microtask: several trait changes
 * from one kernel message then cost a single draw. A draw that throws puts
 * `onError` in charge (the view shows the message instead of going blank).
 */
export function microtaskScheduler(draw: () => void, onError: (err: unknown) => void): () => void {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      try {
        draw();
      } catch (err) {
        onError(err);
      }
    });
  };
}

/** Set several traits and sync them in ONE save, so the kernel validates them together. */
export function saveTraits<T extends object>(
  model: { set(key: never, value: never): void; save_changes(): void },
  patch: Partial<T>,
): void {
  for (const [key, value] of Object.entries(patch)) model.set(key as never, value as never);
  model.save_changes();
}

/**
 * Put a stylesheet in the page once, first in <body>: the rules every view
 * shares (core/base.css). One copy that comes before every view's own sheet
 * keeps the cascade of a page with many views the same as with one: a
 * second copy after a view's sheet would override that view's rules of equal
 * weight. A sheet of another bundle version replaces the old one.
 */
export function sharedStyle(doc: Document, name: string, cssText: string): void {
  const current = doc.querySelector(`style[data-attnw-shared="${name}"]`);
  if (current?.textContent === cssText) return;
  const style = styleElement(cssText);
  style.dataset.attnwShared = name;
  if (current) current.replaceWith(style);
  else (doc.body ?? doc.documentElement).prepend(style);
}

/**
 * A token as tooltips and status lines name it: its shown text, quoted, and
 * the tokenizer's own string when that differs (`"ing" (token "##ing")`), so
 * a subword's marker stays one hover away while every view shows it alike.
 */
export function tokenName(shown: string, raw?: string): string {
  const name = JSON.stringify(shown);
  return raw !== undefined && raw !== "" && raw !== shown ? `${name} (token ${JSON.stringify(raw)})` : name;
}

/**
 * Scroll `el` into sight, as little as needed (nothing when it is already
 * visible): what a view does when Python selects a token out of view.
 */
export function reveal(el: Element | null | undefined): void {
  el?.scrollIntoView?.({ block: "nearest", inline: "nearest" });
}
