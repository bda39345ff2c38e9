/**
 * Every view's stylesheet applies only inside that view's root element: each
 * selector starts with the root class (or `:where(root)`, which adds no
 * weight). A rule that did not would reach every view on the page (a
 * HeadView's `.attnw-lines { width: max-content }` once stopped a
 * SaliencyView beside it from wrapping). tests/test_browser_views_together.py
 * checks the layouts themselves in Chromium.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import adjudication from "../../src/annotate/adjudication.css";
import alignment from "../../src/annotate/alignment.css";
import annotator from "../../src/annotate/annotator.css";
import attention from "../../src/attention/attention.css";
import neuron from "../../src/attention/neuron.css";
import base from "../../src/core/base.css";
import toolbar from "../../src/core/toolbar.css";
import evaluation from "../../src/evaluate/evaluation.css";
import compare from "../../src/compare/compare.css";
import flow from "../../src/flow/flow.css";
import generation from "../../src/generation/generation.css";
import image from "../../src/image/image.css";
import matrix from "../../src/matrix/matrix.css";
import saliency from "../../src/saliency/saliency.css";
import calculator from "../../src/teach/calculator.css";

/** Each sheet and the root class(es) its selectors must start with. */
const SHEETS: [string, string, string[]][] = [
  ["core/base.css", base, [".attnw"]],
  ["core/toolbar.css", toolbar, [".attnw-frame"]],
  ["attention/attention.css", attention, [".attnw-attention", ".attnw-modelview"]],
  ["attention/neuron.css", neuron, [".attnw-neuronview"]],
  ["saliency/saliency.css", saliency, [".attnw-saliency"]],
  ["flow/flow.css", flow, [".attnw-flow"]],
  ["matrix/matrix.css", matrix, [".attnw-matrixview"]],
  ["image/image.css", image, [".attnw-imageview"]],
  ["generation/generation.css", generation, [".attnw-generationview"]],
  ["annotate/alignment.css", alignment, [".attnw-alignmentview"]],
  ["annotate/annotator.css", annotator, [".attnw-annotator"]],
  ["annotate/adjudication.css", adjudication, [".attnw-adjudication"]],
  ["evaluate/evaluation.css", evaluation, [".attnw-evaluation"]],
  ["compare/compare.css", compare, [".attnw-compare"]],
  ["teach/calculator.css", calculator, [".attnw-calculator"]],
];

/** The selectors of a sheet (comments dropped; no nested at-rules in ours). */
export function selectors(css: string): string[] {
  const text = css.replace(/\/\*[\s\S]*?\*\//g, "");
  const out: string[] = [];
  for (const match of text.matchAll(/([^{}]+)\{[^}]*\}/g)) {
    for (const sel of (match[1] as string).split(",")) if (sel.trim()) out.push(sel.trim());
  }
  return out;
}

function scoped(sel: string, roots: string[]): boolean {
  return roots.some((root) => {
    for (const head of [root, `:where(${root})`]) {
      if (sel.startsWith(head) && !/[\w-]/.test(sel.charAt(head.length))) return true;
    }
    return false;
  });
}

describe("every stylesheet is scoped to its view's root", () => {
  for (const [name, css, roots] of SHEETS) {
    test(name, () => {
      const all = selectors(css);
      assert.ok(all.length > 0, `${name} has rules`);
      assert.deepEqual(all.filter((sel) => !scoped(sel, roots)), [], `${name}: selectors outside ${roots.join(" / ")}`);
      assert.ok(!/@/.test(css.replace(/\/\*[\s\S]*?\*\//g, "")), `${name}: at-rules are not checked here`);
    });
  }
  test("the check itself refuses an unscoped rule", () => {
    assert.equal(scoped(".attnw-lines", [".attnw-attention"]), false);
    assert.equal(scoped(".attnw-attention-x .a", [".attnw-attention"]), false);
    assert.equal(scoped(":where(.attnw-attention) .attnw-lines", [".attnw-attention"]), true);
    assert.deepEqual(selectors("/* a { } */ .a, .b:hover { x: 1 }\n.c{}"), [".a", ".b:hover", ".c"]);
  });
});
