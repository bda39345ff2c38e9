/** The rules every view shares (base.css), in the page once (dom.ts sharedStyle). */
import baseStyles from "./base.css";
import { sharedStyle } from "./dom";

/** Make sure the page holding `el` has the shared base sheet. */
export function useBaseStyles(el: Element): void {
  sharedStyle(el.ownerDocument, "base", baseStyles);
}
