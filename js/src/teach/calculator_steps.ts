/**
 * The calculator's steps as figures: a caption, the formula (MathML), a note
 * and a labelled matrix each. Built once per structure (shapes, names, local-p
 * or not, positions); while only values change the cells are refilled in
 * place and only the score formula is swapped when the kind changes.
 */
import { h } from "../core/dom";
import { fillMatrix, matrixTable, type Colouring } from "./calculator_draw";
import { gaussianFormula, localFormula, maskFormula, outputFormula, scoreFormula, softmaxFormula } from "./calculator_mathml";
import { labels, type Inputs, type Mat, type Steps } from "./calculator_state";
import { num } from "./calculator_text";
import type { StepName } from "./calculator_types";

/** A drawer of steps into `stepsEl`. */
export function stepView(stepsEl: HTMLElement): (data: Steps, inputs: Inputs) => void {
  /** The drawn figures, reused while only values change (their structure key holds). */
  let figureKey = "";
  let drawnFormula = "";
  let scoreMath: Element | null = null;
  let fills: (() => void)[] = [];
  const figure = (step: StepName, title: string, formula: Element, note: () => string, table: HTMLTableElement, fill: () => void): HTMLElement => {
    const noteEl = h("div", { className: "attnw-calc-note" });
    const refresh = (): void => {
      const text = note();
      if (noteEl.textContent !== text) noteEl.textContent = text;
      noteEl.hidden = !text;
    };
    refresh();
    fills.push(() => {
      refresh();
      fill();
    });
    return h("figure", { className: "attnw-calc-step", attrs: { "data-step": step } }, [
      h("figcaption", { text: title }),
      formula as unknown as HTMLElement,
      noteEl,
      h("div", { className: "attnw-scroll" }, [table]),
    ]);
  };
  let current: Steps | null = null; // what the fills read
  return (data: Steps, inputs: Inputs): void => {
    current = data;
    const m = data.scores.shape[0] ?? 0;
    const n = data.scores.shape[1] ?? 0;
    const dv = data.output.shape[1] ?? 0;
    const local = data.gaussian !== null && data.local !== null && data.positions !== null;
    const key = JSON.stringify([m, n, dv, local, inputs.queryTokens, inputs.keyTokens, local ? Array.from(data.positions!.data) : null]);
    const formulaKey = `${data.info.score_kind} ${data.info.d}`;
    if (key === figureKey) {
      for (const fill of fills) fill();
      if (formulaKey !== drawnFormula && scoreMath) {
        const next = scoreFormula(data.info.score_kind, data.info.d);
        scoreMath.replaceWith(next);
        scoreMath = next;
        drawnFormula = formulaKey;
      }
      return;
    }
    drawnFormula = formulaKey;
    figureKey = key;
    fills = [];
    const rows = labels(inputs.queryTokens, m);
    const cols = labels(inputs.keyTokens, n);
    const step = (name: StepName, mat: (d: Steps) => Mat | null, colouring: Colouring, columns = cols, rowLabels = rows): [HTMLTableElement, () => void] => {
      const table = matrixTable(name, mat(data) as Mat, rowLabels, columns, colouring);
      return [table, () => fillMatrix(table, mat(current as Steps) as Mat, colouring)];
    };
    const info = (): Steps["info"] => (current as Steps).info;
    const maskNote = (): string => {
      const i = info();
      const notes: Record<string, string> = {
        none: "No mask: global attention over every key.",
        causal: "Causal: query i (at position i + n − m) sees keys j ≤ i + n − m.",
        padding: `Padding: keys 0..${(i.lengths ?? n) - 1} are real, the rest are hidden.`,
        local: `Local window |j − p| ≤ D, p = i + n − m, D = ${i.window}.`,
        "local-m": `Luong's local-m: p = i (monotonic), window |j − p| ≤ D, D = ${i.window}.`,
        "local-p": `Luong's local-p: p_i = (n − 1)·sigmoid(v_pᵀ tanh(W_p q_i)), window |j − p_i| ≤ D, D = ${i.window}.`,
      };
      return notes[i.mask_kind] ?? "";
    };
    const figures = [
      figure("scores", "1 · Scores s (queries × keys)", (scoreMath = scoreFormula(data.info.score_kind, data.info.d)), () => "", ...step("scores", (d) => d.scores, "signed")),
      figure("masked_scores", "2 · Masked scores s̃", maskFormula(), maskNote, ...step("masked_scores", (d) => d.masked, "signed")),
      figure("weights", "3 · Weights a = softmax over the keys", softmaxFormula(), () => `T = ${num(info().temperature)}; each row sums to 1.`, ...step("weights", (d) => d.weights, "probability")),
    ];
    if (local) {
      const pRows = rows.map((r, i) => `${r} (p = ${num(data.positions!.data[i] as number)})`);
      figures.push(
        figure("gaussian", "3b · Gaussian around p", gaussianFormula(), () => `σ = ${num(info().sigma ?? info().window / 2)}.`, ...step("gaussian", (d) => d.gaussian, "probability", cols, pRows)),
        figure("local_weights", "3c · Weights × Gaussian", localFormula(), () => "Rows sum to less than 1 (Luong et al. 2015 do not renormalise).", ...step("local_weights", (d) => d.local, "probability")),
      );
    }
    const outCols = Array.from({ length: dv }, (_, c) => String(c));
    figures.push(figure("output", "4 · Output o (queries × d_v)", outputFormula(local), () => "", ...step("output", (d) => d.output, "signed", outCols)));
    stepsEl.replaceChildren(...figures);
  };
}
