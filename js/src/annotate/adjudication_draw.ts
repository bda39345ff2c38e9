/**
 * AdjudicationView's DOM: the elements (built once) and the functions that
 * draw the item's rows, the filter bar's list and the head into them. Every
 * text, name, label and id goes in as text (dom.ts `h`), never as HTML.
 */
import { h } from "../core/dom";
import { formatNumber } from "../core/format";
import { disputedChars, ruleText, segments, type Segment } from "./adjudication_state";
import type { AdjudicationItem, AnnotatorRow, GoldRow, Match } from "./adjudication_types";

export interface Dom {
  root: HTMLElement;
  position: HTMLElement;
  previous: HTMLButtonElement;
  next: HTMLButtonElement;
  search: HTMLInputElement;
  label: HTMLSelectElement;
  annotator: HTMLSelectElement;
  maxF1: HTMLInputElement;
  noEvidence: HTMLSelectElement;
  count: HTMLElement;
  matches: HTMLElement;
  pair: HTMLElement;
  rows: HTMLElement;
  reason: HTMLInputElement;
  merges: HTMLButtonElement[];
  status: HTMLElement;
}

export const KEYS_HELP = "Keys: ←/→ previous/next item. Accept takes one annotator's marks; Union, Intersection and Majority merge them.";

const button = (text: string, className: string, title: string, attrs: Record<string, string> = {}): HTMLButtonElement =>
  h("button", { className: `attnw-adj-button ${className}`, text, attrs: { type: "button", title, ...attrs } });

const select = (className: string, label: string): HTMLSelectElement => h("select", { className, attrs: { "aria-label": label } });

/** Build the view's elements (empty: the draw functions fill them). */
export function buildDom(): Dom {
  const position = h("span", { className: "attnw-adj-position" });
  const previous = button("← Previous", "attnw-adj-previous", "Previous item (←)");
  const next = button("Next →", "attnw-adj-next", "Next item (→)");
  const search = h("input", { className: "attnw-adj-search", attrs: { type: "search", placeholder: "Search text", "aria-label": "Search text" } });
  const label = select("attnw-adj-label", "Label");
  const annotator = select("attnw-adj-annotator", "Annotated by");
  const maxF1 = h("input", {
    className: "attnw-adj-maxf1",
    attrs: { type: "number", min: 0, max: 1, step: 0.05, placeholder: "any", "aria-label": "Token F1 at most" },
  });
  const noEvidence = select("attnw-adj-noevidence", "No evidence");
  for (const [value, text] of [["", "no evidence: any"], ["yes", "someone: no evidence"], ["no", "nobody: no evidence"]]) {
    noEvidence.appendChild(h("option", { text, attrs: { value } }));
  }
  const count = h("span", { className: "attnw-adj-count", attrs: { "aria-live": "polite" } });
  const matches = h("div", { className: "attnw-adj-matches", attrs: { role: "list", "aria-label": "Matching items" } });
  const filters = h("div", { className: "attnw-adj-filters", attrs: { role: "search" } }, [
    search,
    label,
    annotator,
    h("label", { className: "attnw-control" }, [h("span", { text: "token F1 ≤ " }), maxF1]),
    noEvidence,
    count,
  ]);
  const pair = h("div", { className: "attnw-adj-pair" });
  const rows = h("div", { className: "attnw-adj-rows", attrs: { role: "table", "aria-label": "Each annotator's marks" } });
  const reason = h("input", { className: "attnw-adj-reason", attrs: { type: "text", placeholder: "Reason (optional)", "aria-label": "Reason" } });
  const merges = ["union", "intersection", "majority"].map((rule) =>
    button(rule[0]?.toUpperCase() + rule.slice(1), "attnw-adj-merge", `Save the ${rule} of the annotators' marks as gold`, { "data-rule": rule }),
  );
  const actions = h("div", { className: "attnw-adj-actions" }, [h("span", { className: "attnw-adj-caption", text: "Merge:" }), ...merges, reason]);
  const status = h("div", { className: "attnw-status attnw-adj-status", attrs: { "aria-live": "polite" } });
  const root = h(
    "div",
    {
      className: "attnw attnw-adjudication",
      attrs: { tabindex: 0, role: "application", "aria-label": "Adjudication", "data-state": "loading", "data-lm-suppress-shortcuts": "true" },
    },
    [
      h("div", { className: "attnw-adj-head" }, [previous, next, position]),
      pair,
      rows,
      actions,
      filters,
      matches,
      h("div", { className: "attnw-adj-help", text: KEYS_HELP }),
      status,
    ],
  );
  return { root, position, previous, next, search, label, annotator, maxF1, noEvidence, count, matches, pair, rows, reason, merges, status };
}

/** Set a select's options (first: "any"), keeping the chosen value when it is still there. */
export function fillSelect(el: HTMLSelectElement, anyText: string, values: string[]): void {
  const keep = el.value;
  el.replaceChildren(h("option", { text: anyText, attrs: { value: "" } }), ...values.map((v) => h("option", { text: v, attrs: { value: v } })));
  el.value = values.includes(keep) ? keep : "";
}

function textCell(text: string, runs: Segment[], row: number | null): HTMLElement {
  const cell = h("div", { className: "attnw-adj-text" });
  for (const run of runs) {
    const classes = ["attnw-adj-run"];
    if (row === null ? run.count > 0 && !run.disputed : run.marked[row]) classes.push("attnw-adj-mark");
    if (run.disputed) classes.push("attnw-adj-diff");
    cell.appendChild(h("span", { className: classes.join(" "), text: text.slice(run.start, run.end), attrs: { "data-start": run.start, "data-end": run.end } }));
  }
  return cell;
}

const STATUS_TEXT: Record<string, string> = { no_evidence: "no evidence", missing: "not annotated" };

function rowElement(text: string, runs: Segment[], index: number, row: AnnotatorRow | GoldRow, gold: boolean): HTMLElement {
  const badges = h("span", { className: "attnw-adj-badges" });
  if (row.label) badges.appendChild(h("span", { className: "attnw-adj-badge attnw-adj-row-label", text: row.label }));
  const said = STATUS_TEXT[row.status];
  if (said) badges.appendChild(h("span", { className: `attnw-adj-badge attnw-adj-${row.status}`, text: said }));
  const name = h("span", { className: "attnw-adj-name", text: row.annotator, attrs: { title: gold ? "the gold annotation" : `revision ${row.revision}` } });
  const head = h("div", { className: "attnw-adj-row-head" }, [name, badges]);
  const children: HTMLElement[] = [head, textCell(text, runs, index)];
  if (gold) {
    const made = row as GoldRow;
    const how = made.rule
      ? `${ruleText(made.rule)} of ${made.sources.map(([a, r]) => `${a} r${r}`).join(", ")}${made.reason ? ` — reason: ${made.reason}` : ""}`
      : row.status === "missing"
        ? "no gold annotation yet"
        : "saved by hand";
    children.push(h("div", { className: "attnw-adj-how", text: how }));
  } else {
    const accept = button("Accept", "attnw-adj-accept", `Save ${row.annotator}'s marks as gold`);
    accept.dataset.annotator = row.annotator;
    accept.disabled = row.status === "missing";
    children.push(accept);
  }
  const el = h("div", { className: `attnw-adj-row${gold ? " attnw-adj-gold" : ""}`, attrs: { role: "row", "data-status": row.status } }, children);
  el.dataset.annotator = row.annotator;
  return el;
}

/** Draw the item: one row per annotator, a row of the differences, the gold row. */
export function drawItem(dom: Dom, item: AdjudicationItem | null, count: number): void {
  if (!item) {
    dom.position.textContent = "";
    dom.pair.textContent = "";
    dom.rows.replaceChildren();
    return;
  }
  const all = [...item.rows, item.gold];
  const runs = segments(item.text, all, item.rows.length);
  const f1 = item.token_f1 === null ? "fewer than two annotations" : `token F1 ${formatNumber(item.token_f1)}`;
  dom.position.textContent = `Item ${item.index + 1} of ${count} · ${item.id}${item.label ? ` (${item.label})` : ""} · ${f1}`;
  dom.pair.textContent = item.text_pair ? `Pair: ${item.text_pair}` : "";
  dom.pair.hidden = !item.text_pair;
  const disputed = disputedChars(item.text, runs);
  const diff = h("div", { className: "attnw-adj-row attnw-adj-diffrow", attrs: { role: "row" } }, [
    h("div", { className: "attnw-adj-row-head" }, [
      h("span", { className: "attnw-adj-name", text: "differences" }),
      h("span", { className: "attnw-adj-badge", text: disputed ? `${disputed} characters not marked by all` : "all agree" }),
    ]),
    textCell(item.text, runs, null),
    h("span"),
  ]);
  dom.rows.replaceChildren(...item.rows.map((row, i) => rowElement(item.text, runs, i, row, false)), diff, rowElement(item.text, runs, item.rows.length, item.gold, true));
}

/** Draw the filter bar's count and list of matches (the shown one marked). */
export function drawMatches(dom: Dom, matches: Match[], total: number, count: number, shown: number): void {
  dom.count.textContent = total === count ? `${total} items` : `${total} of ${count} items match${matches.length < total ? ` (first ${matches.length} listed)` : ""}`;
  dom.matches.replaceChildren(
    ...matches.map(([index, id, snippet, f1]) => {
      const el = h("button", { className: "attnw-adj-match", attrs: { type: "button", role: "listitem", "data-index": index, title: `item ${index + 1}` } }, [
        h("span", { className: "attnw-adj-match-id", text: id }),
        h("span", { className: "attnw-adj-match-f1", text: f1 === null ? "–" : formatNumber(f1, { digits: 2 }) }),
        h("span", { className: "attnw-adj-match-text", text: snippet }),
      ]);
      el.classList.toggle("attnw-active", index === shown);
      return el;
    }),
  );
}
