/**
 * HeadView (traits: HeadTraits in attention_types.ts): the attention of one
 * layer as lines from query tokens (left) to key tokens (right), one colour
 * per head; opacity and width follow the weight on a perceptual curve
 * (attention_layout.ts lineCurve), so strong links stand out at 12 heads.
 *
 * - Layer selector; head boxes: click toggles a head, double-click shows only
 *   it (double-click the only head shown: all heads again).
 * - Hover a token: only its lines, plus per-head weight strips; hover a line
 *   or a strip block: its weight in a tooltip. Click a query
 *   token: pin it (`selected_token`); click again or Esc: unpin; ↑/↓ move it.
 * - Sentence pairs: All / A→A / B→B / A→B / B→A. Encoder–decoder: Encoder /
 *   Decoder / Cross.
 * - Missing layers are requested from the kernel (`{"type": "request"}`).
 *
 * Test hooks: the root's data-state ("ready" | "loading" | "error"),
 * data-layer, data-heads; the panel's data-lines and data-focus.
 */
import type { AnyModel } from "@anywidget/types";

import {
  applyTheme,
  attentionControls,
  attentionFeed,
  LOADING_TEXT,
  pinAfterKey,
  pinHint,
  select,
  setOptions,
  shownOf,
} from "./attention_common";
import { curveFor } from "./attention_layout";
import { LinePanel, type PanelHead } from "./attention_lines";
import { css, headColor, isDarkText, parseHex, textColorFor } from "../core/colors";
import { watchHostTheme } from "../core/host_theme";
import styles from "./attention.css";
import type { HeadTraits } from "./attention_types";
import { h, microtaskScheduler, saveTraits, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import { useBaseStyles } from "../core/base_styles";
import { attachNotes, headTarget } from "../core/notes";

type Model = AnyModel<HeadTraits>;

/** Width of the lines between the weight strips (CSS px). */
const LINES_WIDTH = 240;

export function renderHeadView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const root = h("div", {
    className: "attnw attnw-attention attnw-headview",
    attrs: { tabindex: 0, role: "group", "aria-label": "Attention heads of one layer", "data-state": "loading" },
  });
  const save = (patch: Partial<Omit<HeadTraits, "_view">>): void => saveTraits(model, patch);

  const controls = attentionControls(model, (patch) => save(patch));
  const layer = select("Layer:", "attnw-layer", (value) => save({ layer: Number(value) }));
  const headBoxes = h("div", { className: "attnw-heads", attrs: { role: "group", "aria-label": "Heads" } });
  const panel = new LinePanel(LINES_WIDTH, (row) => save({ selected_token: row }));
  const status = h("div", { className: "attnw-status", attrs: { "aria-live": "polite" } });
  const scroller = h("div", { className: "attnw-scroll-y" }, [panel.el]);
  useBaseStyles(root);
  root.append(
    styleElement(styles),
    h("div", { className: "attnw-controls" }, [...controls.elements, layer.wrap, headBoxes]),
    controls.note,
    scroller,
    panel.note,
    status,
  );
  el.appendChild(root);

  let error = "";
  const feed = attentionFeed(model, () => schedule(), (message) => {
    error = message;
    schedule();
  });

  // Head colours for the background the view is on (light or dark palette),
  // read from the computed text colour only when the theme may have changed:
  // getComputedStyle forces a style pass, which every head-box click would
  // otherwise pay for (1,024 token cells at n = 512).
  let themeEpoch = 0;
  let paletteKey = "";
  let dark = false;
  const paletteIsDark = (): boolean => {
    const key = `${model.get("theme")}/${themeEpoch}`;
    if (key !== paletteKey) {
      const color = getComputedStyle(root).color;
      dark = isDarkText(color);
      if (color) paletteKey = key; // not yet in the document: read it again next time
      root.dataset.palette = dark ? "dark" : "light";
    }
    return dark;
  };

  let headKey = "";
  const syncHeads = (ids: readonly number[], shown: readonly number[], dark: boolean): void => {
    const key = `${ids.join(",")}/${dark}`;
    if (key !== headKey) {
      headKey = key;
      headBoxes.replaceChildren(
        ...ids.map((id, k) =>
          h("button", {
            className: "attnw-headbox",
            text: String(id),
            attrs: {
              type: "button",
              "data-head": id,
              title: `Head ${id} (click: show/hide; double-click: only this head)`,
            },
            // The label: black or white, whichever contrasts more with the
            // head's colour (>= 4.5:1, colors.test.ts).
            style: { "--attnw-head": headColor(k, dark), "--attnw-head-text": css(textColorFor(parseHex(headColor(k, dark)))) },
          }),
        ),
      );
    }
    const on = new Set(shown);
    for (const box of Array.from(headBoxes.children) as HTMLElement[]) {
      const active = on.has(Number(box.dataset.head));
      box.classList.toggle("attnw-off", !active);
      box.setAttribute("aria-pressed", String(active));
    }
  };

  const update = (): void => {
    applyTheme(root, model.get("theme"));
    const dark = paletteIsDark();
    const shown = shownOf(model);
    controls.sync(shown);
    if (!shown) {
      root.dataset.state = "error";
      status.textContent = "No attention to show.";
      panel.setData(null);
      return;
    }
    const { info } = shown;
    const layerId = model.get("layer");
    const layerPos = Math.max(0, info.layer_ids.indexOf(layerId));
    setOptions(layer.el, info.layer_ids.map((id) => [String(id), String(id)]), String(info.layer_ids[layerPos]));
    const heads = (model.get("heads") ?? []).filter((id) => info.head_ids.includes(id));
    syncHeads(info.head_ids, heads, dark);
    root.dataset.layer = String(info.layer_ids[layerPos]);
    root.dataset.heads = heads.join(",");

    panel.setTokens(shown.rowTokens.slice(...shown.rows), shown.colTokens.slice(...shown.cols), shown.rows, shown.cols, {
      left: shown.rowRaw.slice(...shown.rows),
      right: shown.colRaw.slice(...shown.cols),
    });
    panel.setPinned(model.get("selected_token") ?? -1);

    const store = feed.store();
    const data: PanelHead[] = [];
    let missing = false;
    for (const id of heads) {
      const position = info.head_ids.indexOf(id);
      const weights = store.weights(info.key, layerPos, position);
      if (weights) data.push({ id, slot: position, color: headColor(position, dark), weights });
      else missing = true;
    }
    if (missing) {
      feed.requester.ask(info.key, layerPos);
      panel.setData(null);
      root.dataset.state = error ? "error" : "loading";
      status.textContent = error ? `attnwidget: ${error}` : LOADING_TEXT;
      return;
    }
    panel.setData({
      stride: info.shape[3],
      rows: shown.rows,
      cols: shown.cols,
      heads: data,
      slots: info.head_ids.length,
      curve: curveFor(data.length),
      causal: info.causal,
    });
    root.dataset.state = "ready";
    error = "";
    status.textContent = statusText(shown.rowTokens, model.get("selected_token") ?? -1, info.layer_ids[layerPos]!, heads.length, info.causal);
  };

  // Several trait changes of one kernel message -> one update.
  const schedule = microtaskScheduler(update, (err) => {
    root.dataset.state = "error";
    status.textContent = `attnwidget: cannot draw this view: ${err instanceof Error ? err.message : String(err)}`;
    console.error("attnwidget head view:", err);
  });

  const onHeadClick = (event: MouseEvent): void => {
    const box = (event.target as Element | null)?.closest?.(".attnw-headbox") as HTMLElement | null;
    if (!box) return;
    const id = Number(box.dataset.head);
    const shown = new Set(model.get("heads") ?? []);
    if (shown.has(id) && shown.size === 1) return; // keep at least one head (as bertviz)
    if (shown.has(id)) shown.delete(id);
    else shown.add(id);
    save({ heads: [...shown].sort((a, b) => a - b) });
  };
  const onHeadDoubleClick = (event: MouseEvent): void => {
    const box = (event.target as Element | null)?.closest?.(".attnw-headbox") as HTMLElement | null;
    if (!box) return;
    const id = Number(box.dataset.head);
    const info = shownOf(model)?.info;
    const heads = model.get("heads") ?? [];
    // The two clicks before a double-click toggled the head twice: state is as before.
    const solo = heads.length === 1 && heads[0] === id;
    save({ heads: solo ? [...(info?.head_ids ?? [])] : [id] });
  };
  const onKey = (event: KeyboardEvent): void => {
    const shown = shownOf(model);
    const next = shown ? pinAfterKey(event.key, model.get("selected_token") ?? -1, shown.rows) : null;
    if (next === null) return;
    event.preventDefault();
    save({ selected_token: next });
  };

  const unwatchTheme = watchHostTheme(() => {
    themeEpoch += 1;
    schedule();
  });
  const TRAITS = ["matrix", "pair_filter", "layer", "heads", "selected_token", "theme", "tokens", "decoder_tokens", "matrices", "sentence_b_start"];
  const listeners = new Listeners()
    .add(() => root.remove())
    .add(() => panel.destroy())
    .add(unwatchTheme)
    .add(() => feed.dispose())
    .traits(model, TRAITS, schedule)
    // A token pinned from Python scrolls into sight once the redraw above has run.
    .traits(model, ["selected_token"], () => queueMicrotask(() => panel.revealRow(model.get("selected_token") ?? -1)))
    .on(headBoxes, "click", onHeadClick)
    .on(headBoxes, "dblclick", onHeadDoubleClick)
    .on(root, "keydown", onKey)
    // The notes panel's target: the shown layer and the one head shown (else the first shown).
    .add(attachNotes(model, root, () => headTarget(model, (model.get("heads") ?? [])[0] ?? -1), TRAITS, () => model.get("tokens") ?? []));
  update();
  return listeners.dispose;
}

function statusText(tokens: readonly string[], pinned: number, layer: number, heads: number, causal: boolean): string {
  return `Layer ${layer}, ${heads} head${heads === 1 ? "" : "s"}. ${pinHint(tokens, pinned, causal)}`;
}
