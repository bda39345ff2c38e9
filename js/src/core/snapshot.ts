/**
 * A view as an image, made in the page with no library and no network.
 *
 * SVG: the view's DOM is copied with every computed style written inline
 * (so the copy looks the same without the page's stylesheets and CSS
 * variables) and wrapped in an SVG <foreignObject>. Canvases become <img>
 * with their pixels as a data: URL; form controls keep their current values.
 * Scroll areas are shown whole, so a long input is in the picture entirely.
 *
 * PNG: that SVG drawn onto a canvas (SVG images render fully offline: a
 * browser never fetches anything for an SVG used as an image).
 */

/**
 * Sent (synchronously, not bubbling) to each canvas before its pixels are
 * copied: a canvas that draws only its visible part (the attention lines of
 * a long input) draws everything for the picture.
 */
export const DRAW_ALL_EVENT = "attnw-draw-all";

const SVG_NS = "http://www.w3.org/2000/svg";
const XHTML_NS = "http://www.w3.org/1999/xhtml";

/** Elements whose content is not part of the picture. */
const SKIPPED = new Set(["script", "style", "noscript", "template", "link", "meta"]);

/**
 * CSS properties that inherit: a child whose value equals its parent's needs
 * no inline copy of them (keeps the SVG small). Others are always compared
 * with the element type's defaults.
 */
const INHERITED = new Set([
  "color", "cursor", "direction", "font-family", "font-feature-settings", "font-kerning",
  "font-optical-sizing", "font-size", "font-size-adjust", "font-stretch", "font-style",
  "font-variant", "font-variant-caps", "font-variant-east-asian", "font-variant-ligatures",
  "font-variant-numeric", "font-variation-settings", "font-weight", "hyphens", "letter-spacing",
  "line-break", "line-height", "list-style-image", "list-style-position", "list-style-type",
  "orphans", "overflow-wrap", "quotes", "tab-size", "text-align", "text-align-last",
  "text-indent", "text-rendering", "text-shadow", "text-transform", "visibility",
  "white-space", "white-space-collapse", "text-wrap", "text-wrap-mode", "widows", "word-break",
  "word-spacing", "writing-mode", "-webkit-font-smoothing", "-webkit-text-fill-color",
  "-webkit-text-stroke-color", "-webkit-text-stroke-width", "caret-color", "color-scheme",
  "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width", "stroke-opacity",
  "stroke-dasharray", "stroke-linecap", "stroke-linejoin", "paint-order", "text-anchor",
  "dominant-baseline", "pointer-events",
]);

/** Always written out: the frozen box sizes are what keeps the layout as on screen. */
const ALWAYS = new Set(["width", "height"]);

/**
 * Properties never written out: logical aliases (Chrome reports both
 * `padding-inline-start` and `padding-left`; the physical ones alone fix the
 * box in any writing mode) and browser-internal ones.
 */
const NOT_COPIED =
  /^(?:(?:border|padding|margin|inset|scroll-margin|scroll-padding|overflow|contain-intrinsic)-(?:block|inline)(?:-.*)?|(?:min-|max-)?(?:block|inline)-size|border-(?:start|end)-(?:start|end)-radius|-webkit-locale|-webkit-text-decorations-in-effect)$/;

/** An SVG rendering of a part of the page. */
export interface Snapshot {
  /** The SVG document as text. */
  svg: string;
  /** Size in CSS pixels. */
  width: number;
  height: number;
}

type Styles = Map<string, string>;

function readStyles(style: CSSStyleDeclaration): Styles {
  const out: Styles = new Map();
  for (let i = 0; i < style.length; i++) {
    const name = style.item(i);
    // Custom properties are already resolved into the properties using them.
    if (!name.startsWith("--")) out.set(name, style.getPropertyValue(name));
  }
  return out;
}

/**
 * The computed styles elements get from nothing but the browser's own
 * stylesheet, per element type: measured in a hidden sandbox that resets
 * every inherited value.
 */
class Defaults {
  private readonly sandbox: HTMLElement;
  private readonly svgSandbox: SVGSVGElement;
  private readonly cache = new Map<string, Styles>();
  readonly root: Styles;

  constructor(private readonly doc: Document) {
    this.sandbox = doc.createElement("div");
    this.sandbox.setAttribute("aria-hidden", "true");
    // `all: initial` cuts inheritance from the page, so what is measured inside
    // is the browser default of each element type.
    this.sandbox.style.setProperty("all", "initial");
    this.sandbox.style.setProperty("position", "absolute");
    this.sandbox.style.setProperty("left", "-100000px");
    this.sandbox.style.setProperty("top", "0");
    this.svgSandbox = doc.createElementNS(SVG_NS, "svg");
    this.sandbox.appendChild(this.svgSandbox);
    (doc.body ?? doc.documentElement).appendChild(this.sandbox);
    this.root = readStyles(getComputedStyle(this.sandbox));
  }

  of(element: Element): Styles {
    const ns = element.namespaceURI ?? XHTML_NS;
    const key = `${ns} ${element.localName}`;
    let styles = this.cache.get(key);
    if (!styles) {
      const probe = this.doc.createElementNS(ns, element.localName);
      (ns === SVG_NS ? this.svgSandbox : this.sandbox).appendChild(probe);
      styles = readStyles(getComputedStyle(probe));
      probe.remove();
      this.cache.set(key, styles);
    }
    return styles;
  }

  dispose(): void {
    this.sandbox.remove();
  }
}

/** Write `computed` inline on `copy`, skipping what the copy gets anyway. */
function inlineStyles(
  copy: Element,
  computed: Styles,
  parent: Styles | null,
  typeDefaults: Styles,
  rootDefaults: Styles,
): void {
  const out: Styles = new Map();
  const color = computed.get("color");
  for (const [name, value] of computed) {
    if (NOT_COPIED.test(name)) continue;
    // Origins are only meaningful with a transform or perspective to apply.
    if (name === "transform-origin" && computed.get("transform") === "none") continue;
    if (name === "perspective-origin" && computed.get("perspective") === "none") continue;
    // Colours that default to the text colour need no copy when they are it.
    if (CURRENT_COLOR.test(name) && value === color && typeDefaults.get(name) === typeDefaults.get("color")) continue;
    if (INHERITED.has(name)) {
      // Inherited from the copied parent, unless the element type's own
      // browser style (e.g. <button>'s font) would replace it.
      const typeOverrides = typeDefaults.get(name) !== rootDefaults.get(name);
      if (parent ? parent.get(name) === value && !typeOverrides : typeDefaults.get(name) === value) continue;
    } else if (typeDefaults.get(name) === value && !(ALWAYS.has(name) && value !== "auto")) {
      continue;
    }
    out.set(name, value);
  }
  compact(out);
  const declarations = Array.from(out, ([name, value]) => `${name}: ${value}`);
  if (declarations.length > 0) copy.setAttribute("style", declarations.join("; "));
  else copy.removeAttribute("style");
}

/** Properties whose initial value is `currentcolor`. */
const CURRENT_COLOR =
  /^(?:caret-color|-webkit-text-fill-color|-webkit-text-stroke-color|-webkit-text-emphasis-color|text-emphasis-color|text-decoration-color|column-rule-color|outline-color|border-(?:top|right|bottom|left)-color)$/;

const SIDES = ["top", "right", "bottom", "left"] as const;

/** Four equal longhands become one shorthand (the SVG gets much smaller). */
function compact(styles: Styles): void {
  const collapse = (shorthand: string, names: string[]): void => {
    const values = names.map((n) => styles.get(n));
    const first = values[0];
    // Space-free values only: "3px 5px" means something else in a shorthand.
    if (first === undefined || (first.includes(" ") && !first.startsWith("rgb"))) return;
    if (!values.every((v) => v === first)) return;
    for (const n of names) styles.delete(n);
    styles.set(shorthand, first);
  };
  collapse("padding", SIDES.map((s) => `padding-${s}`));
  collapse("margin", SIDES.map((s) => `margin-${s}`));
  collapse("border-width", SIDES.map((s) => `border-${s}-width`));
  collapse("border-style", SIDES.map((s) => `border-${s}-style`));
  collapse("border-color", SIDES.map((s) => `border-${s}-color`));
  collapse("border-radius", ["top-left", "top-right", "bottom-right", "bottom-left"].map((c) => `border-${c}-radius`));
}

/** The text of a pseudo-element's `content` when it is a plain string, else null. */
export function pseudoText(content: string): string | null {
  const match = /^"((?:[^"\\]|\\.)*)"$/.exec(content.trim());
  if (!match) return null;
  return (match[1] ?? "").replace(/\\([0-9a-fA-F]{1,6}) ?|\\(.)/g, (_, hex: string | undefined, ch: string | undefined) =>
    hex ? String.fromCodePoint(Number.parseInt(hex, 16)) : (ch ?? ""),
  );
}

/** A copied element and how much bigger than on screen it became. */
interface Copied {
  copy: Element;
  /** Extra width and height (CSS px) from scroll areas shown whole. */
  grow: [number, number];
}

const SCROLLING = new Set(["auto", "scroll", "overlay"]);

class Copier {
  constructor(
    private readonly doc: Document,
    private readonly defaults: Defaults,
  ) {}

  element(original: Element, parentStyles: Styles | null): Copied | null {
    const tag = original.localName;
    if (SKIPPED.has(tag) && original.namespaceURI === XHTML_NS) return null;
    const computed = readStyles(getComputedStyle(original));
    if (computed.get("display") === "none") return null;

    let copy: Element;
    if (original instanceof HTMLCanvasElement) {
      copy = this.doc.createElement("img");
      copy.setAttribute("alt", "");
      original.dispatchEvent(new Event(DRAW_ALL_EVENT));
      try {
        copy.setAttribute("src", original.toDataURL("image/png"));
      } catch {
        // A canvas holding cross-origin pixels cannot be read: leave it blank.
      }
    } else {
      copy = original.cloneNode(false) as Element;
      copyFormValue(original, copy);
    }
    for (const attribute of Array.from(copy.attributes)) {
      // No event handlers in the picture (views never set any; be sure).
      if (attribute.name.toLowerCase().startsWith("on")) copy.removeAttribute(attribute.name);
    }

    // A picture cannot scroll: a scroll area is shown whole (its hidden part
    // widens it and every box around it), and never with scroll bars.
    let [growX, growY] = [0, 0];
    const scrollsX = SCROLLING.has(computed.get("overflow-x") ?? "");
    const scrollsY = SCROLLING.has(computed.get("overflow-y") ?? "");
    const ownX = scrollsX ? Math.max(0, original.scrollWidth - original.clientWidth) : 0;
    const ownY = scrollsY ? Math.max(0, original.scrollHeight - original.clientHeight) : 0;
    if (scrollsX) computed.set("overflow-x", ownX > 0 ? "visible" : "hidden");
    if (scrollsY) computed.set("overflow-y", ownY > 0 ? "visible" : "hidden");

    const children: Node[] = [];
    const before = this.pseudo(original, "::before", computed);
    if (before) children.push(before);
    for (const child of Array.from(original.childNodes)) {
      if (child.nodeType === Node.TEXT_NODE) children.push(this.doc.createTextNode(child.nodeValue ?? ""));
      else if (child.nodeType === Node.ELEMENT_NODE) {
        const inner = this.element(child as Element, computed);
        if (inner) {
          children.push(inner.copy);
          growX = Math.max(growX, inner.grow[0]);
          growY = Math.max(growY, inner.grow[1]);
        }
      }
    }
    const after = this.pseudo(original, "::after", computed);
    if (after) children.push(after);
    growX += ownX;
    growY += ownY;
    if (growX > 0) grow(computed, "width", growX);
    if (growY > 0) grow(computed, "height", growY);

    const typeDefaults = this.defaults.of(copy);
    inlineStyles(copy, computed, parentStyles, typeDefaults, this.defaults.root);
    for (const child of children) copy.appendChild(child);
    return { copy, grow: [growX, growY] };
  }

  /** ::before/::after with string content, as a real <span>. */
  private pseudo(original: Element, which: "::before" | "::after", parent: Styles): Element | null {
    if (original.namespaceURI !== XHTML_NS) return null;
    const style = getComputedStyle(original, which);
    const text = pseudoText(style.getPropertyValue("content"));
    if (text === null || style.getPropertyValue("display") === "none") return null;
    const span = this.doc.createElement("span");
    const computed = readStyles(style);
    computed.delete("content");
    inlineStyles(span, computed, parent, this.defaults.of(span), this.defaults.root);
    span.textContent = text;
    return span;
  }
}

/** Widen (or heighten) a box with a frozen pixel size, lifting its cap. */
function grow(styles: Styles, side: "width" | "height", by: number): void {
  const value = styles.get(side) ?? "";
  if (!value.endsWith("px")) return; // auto-sized: grows with its content
  styles.set(side, `${Number.parseFloat(value) + by}px`);
  styles.set(`max-${side}`, "none");
}

/** Current values of form controls are properties, not attributes: copy them over. */
function copyFormValue(original: Element, copy: Element): void {
  if (original instanceof HTMLInputElement) {
    if (original.type === "checkbox" || original.type === "radio") {
      if (original.checked) copy.setAttribute("checked", "");
      else copy.removeAttribute("checked");
    } else {
      copy.setAttribute("value", original.value);
    }
  } else if (original instanceof HTMLTextAreaElement) {
    copy.textContent = original.value;
  } else if (original instanceof HTMLOptionElement) {
    if (original.selected) copy.setAttribute("selected", "");
    else copy.removeAttribute("selected");
  }
}

/** The first opaque background at or above `el` (white when none is). */
export function backgroundOf(el: Element): string {
  for (let node: Element | null = el; node; node = node.parentElement) {
    const color = getComputedStyle(node).backgroundColor;
    if (color && color !== "transparent" && !/^rgba\(.*,\s*0\)$/.test(color)) return color;
  }
  return "rgb(255, 255, 255)";
}

function attributeText(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

/** The element as it looks now, as an SVG document. */
export function snapshot(el: HTMLElement): Snapshot {
  const doc = el.ownerDocument;
  const rect = el.getBoundingClientRect();
  if (rect.width <= 0 || rect.height <= 0) throw new RangeError("attnwidget: the view has no size to export (is it hidden?)");

  const defaults = new Defaults(doc);
  let copied: Copied | null;
  try {
    copied = new Copier(doc, defaults).element(el, null);
  } finally {
    defaults.dispose();
  }
  if (!copied) throw new RangeError("attnwidget: the view is not displayed");
  const copy = copied.copy as HTMLElement;
  const width = Math.ceil(rect.width + copied.grow[0]);
  const height = Math.ceil(rect.height + copied.grow[1]);
  // The copy sits at the origin of the picture, at its measured size.
  copy.style.setProperty("margin", "0");
  copy.style.setProperty("box-sizing", "border-box");
  copy.style.setProperty("width", `${rect.width + copied.grow[0]}px`);
  copy.style.setProperty("height", `${rect.height + copied.grow[1]}px`);

  // XMLSerializer escapes text and attribute values, so token text such as
  // "</foreignObject><script>" stays text in the SVG.
  const body = new XMLSerializer().serializeToString(copy);
  const svg =
    `<svg xmlns="${SVG_NS}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<rect width="100%" height="100%" fill="${attributeText(backgroundOf(el))}"/>` +
    `<foreignObject x="0" y="0" width="100%" height="100%">${body}</foreignObject></svg>`;
  return { svg, width, height };
}

/** Browsers refuse canvases beyond about this many pixels per side. */
const MAX_CANVAS_SIDE = 16384;

/** The snapshot as PNG, at `scale` device pixels per CSS pixel. */
export async function snapshotToPng(snap: Snapshot, scale = 2): Promise<Blob> {
  const image = new Image();
  image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(snap.svg)}`;
  await image.decode();
  const s = Math.min(scale, MAX_CANVAS_SIDE / snap.width, MAX_CANVAS_SIDE / snap.height);
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.round(snap.width * s));
  canvas.height = Math.max(1, Math.round(snap.height * s));
  const context = canvas.getContext("2d");
  if (!context) throw new Error("attnwidget: this browser has no 2D canvas");
  context.scale(s, s);
  context.drawImage(image, 0, 0, snap.width, snap.height);
  return new Promise<Blob>((resolve, reject) => {
    canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("attnwidget: PNG encoding failed"))), "image/png");
  });
}
