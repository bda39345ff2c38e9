/**
 * ExplanationRating (traits: rating_types.ts): one trial at a time. Each
 * explanation is a row of token chips coloured as SaliencyView colours them
 * (core/score_range.ts scoreRange, core/colors.ts), labelled "Explanation"
 * or "A"/"B" unless the method names are shown. "rate": buttons 1–5 and a
 * note; "compare": a button under each side; "simulate": a button per
 * possible output, then the answer is revealed and "Next" goes on. The time
 * from a trial drawn to its answer is sent as `seconds`.
 *
 * Test hooks: the root's data-mode, data-position, data-state ("ready" |
 * "saving" | "revealed" | "done" | "error"); panels' data-side; buttons'
 * data-rating / data-side / data-choice.
 */
import type { AnyModel } from "@anywidget/types";

import { useBaseStyles } from "../core/base_styles";
import { decodeFloat32 } from "../core/buffers";
import { css, textColorFor } from "../core/colors";
import { displayToken, h, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import { scoreRange } from "../core/score_range";
import type { RatingTraits, RatingTrial } from "./rating_types";

type Model = AnyModel<RatingTraits>;

const STYLES = `
.attnw-rating { font-size: 13px; display: flex; flex-direction: column; gap: 8px; }
.attnw-rating-panels { display: flex; gap: 12px; flex-wrap: wrap; }
.attnw-rating-panel { flex: 1 1 280px; border: 1px solid #8884; border-radius: 4px; padding: 6px; }
.attnw-rating-label { font-weight: 600; margin-bottom: 4px; }
.attnw-rating-tokens { display: flex; flex-wrap: wrap; gap: 2px; }
.attnw-rating-token { padding: 1px 3px; border-radius: 2px; }
.attnw-rating-buttons { display: flex; gap: 6px; flex-wrap: wrap; align-items: center; }
.attnw-rating-note { flex: 1 1 200px; }
.attnw-rating-reveal[data-correct="true"] { color: #1e8449; }
.attnw-rating-reveal[data-correct="false"] { color: #c0392b; }
`;

const PROMPTS = {
  rate: "How well does this explanation show why the model gave its output? (1 = not at all, 5 = fully)",
  compare: "Which explanation is more convincing?",
  simulate: "What will the model output for this input?",
};

function tokenRow(tokens: readonly string[], values: Float32Array | null, signed: boolean, query: number): HTMLElement {
  const row = h("div", { className: "attnw-rating-tokens" });
  const range = values ? scoreRange(values, tokens, { signed, mode: "words", focus: query }) : null;
  tokens.forEach((token, j) => {
    const chip = h("span", { className: "attnw-rating-token", text: displayToken(token) });
    if (range && values) {
      const rgb = range.scale.color(values[j] ?? 0);
      chip.style.background = css(rgb);
      chip.style.color = css(textColorFor(rgb));
    }
    row.append(chip);
  });
  return row;
}

export function renderExplanationRating({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", { className: "attnw attnw-rating", attrs: { role: "group", "aria-label": "Rate explanations", tabindex: 0 } });
  useBaseStyles(root);
  const progress = h("div", { className: "attnw-rating-progress" });
  const prompt = h("div", { className: "attnw-rating-prompt" });
  const panels = h("div", { className: "attnw-rating-panels" });
  const buttons = h("div", { className: "attnw-rating-buttons" });
  const note = h("input", { className: "attnw-rating-note", attrs: { type: "text", placeholder: "Note (optional)", "aria-label": "Note" } });
  const reveal = h("div", { className: "attnw-rating-reveal", attrs: { "aria-live": "polite" } });
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  root.append(styleElement(STYLES), progress, prompt, panels, buttons, reveal, status);
  el.appendChild(root);
  let shownAt = performance.now();
  let drawnKey = "";

  const send = (answer: Record<string, unknown>): void => {
    if (root.dataset.state === "saving") return;
    root.dataset.state = "saving";
    const seconds = Math.max(0, (performance.now() - shownAt) / 1000);
    model.send({ type: "answer", position: model.get("position"), note: note.value, seconds, ...answer });
  };

  const button = (text: string, attrs: Record<string, string | number>, answer: Record<string, unknown>): HTMLButtonElement => {
    const b = h("button", { className: "attnw-rating-button", text, attrs: { type: "button", ...attrs } });
    b.addEventListener("click", () => send(answer));
    return b;
  };

  const draw = (): void => {
    const mode = model.get("mode");
    const trial = model.get("trial") as Partial<RatingTrial>;
    const count = model.get("count");
    const position = model.get("position");
    root.dataset.mode = mode;
    root.dataset.position = String(trial.tokens ? trial.position : position);
    progress.textContent = `${Math.min(position + 1, count)} / ${count} (${model.get("answered")} answered)`;
    status.textContent = model.get("status") ?? "";
    if (!trial.tokens) {
      root.dataset.state = "done";
      prompt.textContent = "";
      panels.replaceChildren();
      buttons.replaceChildren();
      reveal.textContent = "";
      return;
    }
    // Keyed by the trial's own position: `position` may arrive before its `trial`.
    const key = `${trial.position}`;
    if (key !== drawnKey) {
      drawnKey = key;
      shownAt = performance.now();
      note.value = "";
      const n = trial.tokens.length;
      const values = model.get("scores") ? decodeFloat32(model.get("scores") as NonNullable<RatingTraits["scores"]>, "scores") : new Float32Array(0);
      prompt.textContent = PROMPTS[mode] ?? "";
      const list = trial.panels ?? [];
      if (list.length === 0) {
        const input = h("div", { className: "attnw-rating-panel", attrs: { "data-side": "none" } }, [
          h("div", { className: "attnw-rating-label", text: "Input (no explanation)" }),
          tokenRow(trial.tokens, null, false, -1),
        ]);
        panels.replaceChildren(input);
      } else {
        panels.replaceChildren(
          ...list.map((panel, i) =>
            h("div", { className: "attnw-rating-panel", attrs: { "data-side": panel.side || "single" } }, [
              h("div", { className: "attnw-rating-label", text: panel.label }),
              tokenRow(trial.tokens ?? [], values.subarray(i * n, (i + 1) * n), panel.signed, trial.query_index ?? -1),
            ]),
          ),
        );
      }
      if (mode === "rate") {
        buttons.replaceChildren(...[1, 2, 3, 4, 5].map((r) => button(String(r), { "data-rating": r }, { rating: r })), note);
      } else if (mode === "compare") {
        buttons.replaceChildren(
          ...list.map((panel) => button(`${panel.label} is more convincing`, { "data-side": panel.side }, { side: panel.side })),
          note,
        );
      } else {
        buttons.replaceChildren(...(trial.choices ?? []).map((c) => button(c, { "data-choice": c }, { predicted: c })), note);
      }
    }
    const revealed = model.get("revealed") ?? {};
    if (revealed.actual !== undefined) {
      root.dataset.state = "revealed";
      reveal.dataset.correct = String(Boolean(revealed.correct));
      reveal.replaceChildren(
        h("span", { text: `${revealed.correct ? "Right" : "Wrong"}: you said ${revealed.predicted ?? ""}, the model said ${revealed.actual}. ` }),
        h("button", { className: "attnw-rating-next", text: "Next", attrs: { type: "button" } }),
      );
      for (const b of Array.from(buttons.querySelectorAll("button"))) (b as HTMLButtonElement).disabled = true;
    } else {
      reveal.replaceChildren();
      delete reveal.dataset.correct;
      root.dataset.state = "ready";
    }
  };

  const onMessage = (content: unknown): void => {
    const msg = content as { type?: string; message?: string } | null;
    if (msg?.type === "error") {
      root.dataset.state = "error";
      status.textContent = `Not saved: ${msg.message ?? ""}`;
    }
  };
  const onReveal = (event: MouseEvent): void => {
    if ((event.target as Element | null)?.closest?.(".attnw-rating-next")) model.send({ type: "next" });
  };
  const listeners = new Listeners()
    .add(() => root.remove())
    .on(reveal, "click", onReveal)
    .on(root, "keydown", (event) => event.stopPropagation())
    .model(model, "msg:custom", onMessage)
    .traits(model, ["trial", "scores", "position", "revealed", "answered", "status", "count", "mode"], () => queueMicrotask(draw));
  draw();
  return listeners.dispose;
}
