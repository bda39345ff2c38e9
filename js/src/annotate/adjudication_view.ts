/**
 * AdjudicationView (traits: AdjudicationTraits in adjudication_types.ts):
 * every annotator's marks on one item side by side, character exact, the
 * characters they do not all mark highlighted, and a gold row; one click
 * saves a gold annotation through the kernel's Store.adjudicate.
 *
 * - Rows: one per annotator ("no evidence" and "not annotated" said as
 *   such), a row of the differences, the gold row (with its rule, sources
 *   and reason). Runs of characters come from adjudication_state.ts.
 * - Accept (a row's button) or Union / Intersection / Majority send an
 *   "adjudicate" request with the reason typed; ←/→ and the buttons send
 *   "go"; the filter bar sends "filter" (debounced) and lists the matches,
 *   each a click away. One request is out at a time; a refused one shows
 *   the kernel's message and changes nothing.
 *
 * Test hooks on the root: data-state (ready | busy), data-index (the item
 * drawn), data-item (its id), data-drawn (item draws), data-error (the last
 * refusal, "" after a success), data-matches (the match count drawn).
 */
import type { AnyModel } from "@anywidget/types";

import { buildDom, drawItem, drawMatches, fillSelect } from "./adjudication_draw";
import { keyAction, OneRequest, readFilters, ruleText, type Outcome } from "./adjudication_state";
import type { AdjudicationItem, AdjudicationRequest, AdjudicationTraits } from "./adjudication_types";
import { microtaskScheduler, styleElement } from "../core/dom";
import { Listeners } from "../core/listeners";
import styles from "./adjudication.css";
import { useBaseStyles } from "../core/base_styles";

type Model = AnyModel<AdjudicationTraits>;

const FILTER_DELAY_MS = 250;

export function renderAdjudicationView({ model, el }: { model: Model; el: HTMLElement }): () => void {
  const dom = buildDom();
  const { root } = dom;
  useBaseStyles(root);
  root.prepend(styleElement(styles));
  el.appendChild(root);

  let item: AdjudicationItem | null = null;
  let error = "";
  let drawn = 0;
  let filterTimer: ReturnType<typeof setTimeout> | null = null;
  let filterWanted = false;

  const currentItem = (): AdjudicationItem | null => {
    const value = model.get("item") as AdjudicationItem | Record<string, never>;
    return value && Array.isArray((value as AdjudicationItem).rows) ? (value as AdjudicationItem) : null;
  };

  const requests = new OneRequest<AdjudicationRequest>(
    (message) => model.send(message),
    (outcome) => settled(outcome),
  );

  const statusText = (): string => {
    if (requests.busy) return requests.pending?.type === "adjudicate" ? "Saving…" : "Loading…";
    if (error) return `Not done: ${error}`;
    const last = model.get("last_saved");
    if (last && item && last.item_id === item.id) return `Saved as ${last.annotator} (revision ${last.revision}, ${ruleText(last.rule)}).`;
    return model.get("status") ?? "";
  };

  const drawState = (): void => {
    const busy = requests.busy;
    root.dataset.state = busy ? "busy" : "ready";
    root.dataset.error = error;
    const count = model.get("count") ?? 0;
    dom.previous.disabled = busy || !item || item.index <= 0;
    dom.next.disabled = busy || !item || item.index >= count - 1;
    for (const b of [...dom.merges, ...dom.rows.querySelectorAll<HTMLButtonElement>(".attnw-adj-accept")]) {
      b.disabled = busy || !item || (b.classList.contains("attnw-adj-accept") && b.closest("[data-status]")?.getAttribute("data-status") === "missing");
    }
    dom.status.textContent = statusText();
    dom.status.classList.toggle("attnw-error", Boolean(error) && !busy);
  };

  const drawList = (): void => {
    const matches = model.get("matches") ?? [];
    const total = model.get("match_count") ?? 0;
    drawMatches(dom, matches, total, model.get("count") ?? 0, item?.index ?? -1);
    root.dataset.matches = String(total);
  };

  const drawAll = (): void => {
    item = currentItem();
    drawItem(dom, item, model.get("count") ?? 0);
    drawn += 1;
    root.dataset.index = item ? String(item.index) : "";
    root.dataset.item = item?.id ?? "";
    root.dataset.drawn = String(drawn);
    drawList();
    drawState();
  };

  const drawChoices = (): void => {
    fillSelect(dom.label, "any label", model.get("labels") ?? []);
    fillSelect(dom.annotator, "any annotator", model.get("annotators") ?? []);
  };

  const onFail = (err: unknown): void => {
    console.error("attnwidget adjudication:", err);
    dom.status.textContent = `attnwidget: cannot draw this item: ${err instanceof Error ? err.message : String(err)}`;
  };
  const scheduleItem = microtaskScheduler(drawAll, onFail);
  const scheduleList = microtaskScheduler(drawList, onFail);
  const scheduleState = microtaskScheduler(drawState, onFail);
  const scheduleChoices = microtaskScheduler(drawChoices, onFail);

  function settled(outcome: Outcome): void {
    error = outcome.type === "refused" ? outcome.message : "";
    drawState();
    if (filterWanted) sendFilter();
  }

  const go = (index: number): void => {
    const count = model.get("count") ?? 0;
    if (!item || requests.busy || index === item.index || index < 0 || index >= count) return;
    error = "";
    requests.start({ type: "go", request: 0, index });
    drawState();
  };

  const adjudicate = (rule: string): void => {
    if (!item || requests.busy) return;
    error = "";
    requests.start({ type: "adjudicate", request: 0, index: item.index, item_id: item.id, rule, reason: dom.reason.value });
    drawState();
  };

  function sendFilter(): void {
    const read = readFilters({
      text: dom.search.value,
      label: dom.label.value,
      annotator: dom.annotator.value,
      maxF1: dom.maxF1.value,
      noEvidence: dom.noEvidence.value,
    });
    if ("error" in read) {
      filterWanted = false;
      error = read.error;
      drawState();
      return;
    }
    if (requests.busy) {
      filterWanted = true; // sent when the request out settles
      return;
    }
    filterWanted = false;
    error = "";
    requests.start({ type: "filter", request: 0, filters: read.filters });
    drawState();
  }

  const onFilterInput = (): void => {
    if (filterTimer !== null) clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      filterTimer = null;
      sendFilter();
    }, FILTER_DELAY_MS);
  };

  const onClick = (event: MouseEvent): void => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    const match = target.closest<HTMLElement>(".attnw-adj-match");
    if (match && dom.matches.contains(match)) return go(Number(match.dataset.index));
    if (!item) return;
    const accept = target.closest<HTMLElement>(".attnw-adj-accept");
    if (accept && dom.rows.contains(accept)) return adjudicate(accept.dataset.annotator ?? "");
    const merge = target.closest<HTMLElement>(".attnw-adj-merge");
    if (merge) return adjudicate(merge.dataset.rule ?? "");
    if (target.closest(".attnw-adj-previous")) go(item.index - 1);
    else if (target.closest(".attnw-adj-next")) go(item.index + 1);
  };

  const onKey = (event: KeyboardEvent): void => {
    const inField = event.target instanceof Element && event.target !== root && Boolean(event.target.closest("input, select, textarea"));
    const action = keyAction(event.key, event.altKey || event.ctrlKey || event.metaKey || event.shiftKey, inField);
    if (!action || !item) return;
    event.preventDefault();
    event.stopPropagation(); // keep Jupyter's command-mode shortcuts out of it
    go(item.index + (action === "next" ? 1 : -1));
  };

  const listeners = new Listeners()
    .add(() => root.remove())
    .on(root, "click", onClick)
    .on(root, "keydown", onKey)
    .on(dom.search, "input", onFilterInput)
    .on(dom.maxF1, "input", onFilterInput)
    .on(dom.label, "change", onFilterInput)
    .on(dom.annotator, "change", onFilterInput)
    .on(dom.noEvidence, "change", onFilterInput)
    .model(model, "msg:custom", (content: unknown) => {
      requests.reply(content);
    })
    .traits(model, ["item", "count"], scheduleItem)
    .traits(model, ["matches", "match_count"], scheduleList)
    .traits(model, ["last_saved", "status"], scheduleState)
    .traits(model, ["labels", "annotators"], scheduleChoices)
    .add(() => {
      if (filterTimer !== null) clearTimeout(filterTimer);
      requests.dispose();
    });
  try {
    drawChoices();
    drawAll();
  } catch (err) {
    onFail(err);
  }
  return listeners.dispose;
}
