/**
 * The notes panel of HeadView, ModelView (a role and a note per layer and
 * head) and FlowView (per edge: layer, from-token, to-token); Python side:
 * attnwidget/views/core/notes.py. Hidden while the `notes` trait's kind is ""
 * (no store). The view tells the panel its current target (`sync`); the
 * person may change it in the pickers, types a role (suggestions in a
 * datalist) and a note, and Save sends `{"type": "note", ...}`; the kernel
 * answers `note_saved` / `note_error` and updates `notes.items`.
 * Every string from the model goes in as text (dom.ts `h`), never markup.
 *
 * Test hooks: the panel's data-kind, data-count and data-status
 * ("" | "saving" | "saved" | "error"); items' data-layer, data-head,
 * data-from, data-to.
 */
import { h, displayToken } from "./dom";
import { Listeners } from "./listeners";

export interface NoteItem {
  id: number;
  model_name: string;
  kind: "head" | "edge";
  layer: number;
  head: number | null;
  from_token: number | null;
  to_token: number | null;
  input_hash: string;
  input_text: string;
  role: string;
  note: string;
  annotator: string;
  saved_at: string;
}

export interface NotesState {
  kind?: "" | "head" | "edge";
  model_name?: string;
  annotator?: string;
  input_hash?: string;
  suggestions?: string[];
  items?: NoteItem[];
}

/** One picker of the target: its options ([value, label]) and the view's current value. */
export interface TargetField {
  name: "layer" | "head" | "from" | "to";
  label: string;
  options: [number, string][];
  value: number;
}

interface NotesModel {
  get(name: "notes"): NotesState | undefined;
  send(content: unknown): void;
}

let panelCount = 0;

export class NotesPanel {
  readonly el: HTMLElement;
  private readonly targetBox = h("span", { className: "attnw-notes-target" });
  private readonly role: HTMLInputElement;
  private readonly note = h("textarea", {
    className: "attnw-notes-text",
    attrs: { rows: 2, "aria-label": "Note", placeholder: "Note (what it does, evidence)" },
  });
  private readonly status = h("span", { className: "attnw-notes-status", attrs: { "aria-live": "polite" } });
  private readonly list = h("ul", { className: "attnw-notes-list" });
  private readonly datalist: HTMLDataListElement;
  private readonly pickers = new Map<string, HTMLSelectElement>();
  private fieldKey = "";
  private defaultsKey = "";
  private suggestionKey = "";
  readonly listeners = new Listeners();

  constructor(private readonly model: NotesModel, private readonly tokens: () => readonly string[]) {
    const id = `attnw-note-roles-${++panelCount}`;
    this.datalist = h("datalist", { attrs: { id } });
    this.role = h("input", {
      className: "attnw-notes-role",
      attrs: { type: "text", list: id, "aria-label": "Role", placeholder: "Role, e.g. previous-token head" },
    });
    const save = h("button", { className: "attnw-notes-save", text: "Save note", attrs: { type: "button" } });
    this.el = h("div", { className: "attnw-notes", attrs: { role: "group", "aria-label": "Notes" } }, [
      h("div", { className: "attnw-notes-form" }, [
        h("span", { className: "attnw-notes-title", text: "Note on" }),
        this.targetBox,
        this.role,
        this.datalist,
        this.note,
        save,
        this.status,
      ]),
      this.list,
    ]);
    this.el.style.display = "none";
    this.listeners
      .on(save, "click", () => this.save())
      .on(this.el, "keydown", (event) => event.stopPropagation()) // typing is not a view shortcut
      .model(model, "msg:custom", (content: unknown) => this.onMessage(content));
  }

  /** The view's current target (called on every view update); redraws the list. */
  sync(fields: TargetField[]): void {
    const state = this.model.get("notes") ?? {};
    const kind = state.kind ?? "";
    this.el.style.display = kind ? "" : "none";
    this.el.dataset.kind = kind;
    if (!kind) return;
    const fieldKey = fields.map((f) => `${f.name}:${f.options.map((o) => o[0]).join(",")}`).join("/");
    if (fieldKey !== this.fieldKey) {
      this.fieldKey = fieldKey;
      this.pickers.clear();
      this.targetBox.replaceChildren(
        ...fields.map((f) => {
          const select = h("select", { className: `attnw-notes-${f.name}`, attrs: { "aria-label": f.label } });
          select.append(...f.options.map(([value, label]) => h("option", { text: label, attrs: { value } })));
          this.pickers.set(f.name, select);
          return h("label", { text: `${f.label} ` }, [select]);
        }),
      );
      this.defaultsKey = "";
    }
    const defaults = fields.map((f) => f.value).join(",");
    if (defaults !== this.defaultsKey) {
      this.defaultsKey = defaults; // the view moved: follow it (a pick by hand stays until then)
      for (const f of fields) {
        const select = this.pickers.get(f.name);
        if (select && f.value >= 0) select.value = String(f.value);
      }
    }
    const suggestions = state.suggestions ?? [];
    if (suggestions.join("\n") !== this.suggestionKey) {
      this.suggestionKey = suggestions.join("\n");
      this.datalist.replaceChildren(...suggestions.map((s) => h("option", { attrs: { value: s } })));
    }
    this.drawList(state);
  }

  private target(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, select] of this.pickers) out[name] = Number(select.value);
    return out;
  }

  private save(): void {
    const role = this.role.value.trim();
    const note = this.note.value;
    if (!role && !note.trim()) {
      this.setStatus("error", "Write a role or a note first.");
      return;
    }
    this.setStatus("saving", "Saving…");
    this.model.send({ type: "note", ...this.target(), role, note });
  }

  private onMessage(content: unknown): void {
    const message = content as { type?: string; message?: string } | null;
    if (message?.type === "note_saved") {
      this.role.value = "";
      this.note.value = "";
      this.setStatus("saved", "Saved.");
    } else if (message?.type === "note_error") {
      this.setStatus("error", `Not saved: ${message.message ?? ""}`);
    }
  }

  private setStatus(state: string, text: string): void {
    this.el.dataset.status = state;
    this.status.textContent = text;
  }

  private drawList(state: NotesState): void {
    const items = state.items ?? [];
    this.el.dataset.count = String(items.length);
    const tokens = this.tokens();
    const name = (i: number | null): string => (i === null ? "?" : displayToken(tokens[i] ?? `#${i}`));
    this.list.replaceChildren(
      ...items
        .slice()
        .reverse()
        .map((item) => {
          const here = item.input_hash === state.input_hash;
          const where =
            item.kind === "head"
              ? `L${item.layer} H${item.head}`
              : `L${item.layer} ${here ? name(item.from_token) : `#${item.from_token}`} → ${
                  here ? name(item.to_token) : `#${item.to_token}`
                }`;
          const li = h(
            "li",
            {
              className: "attnw-notes-item",
              attrs: {
                "data-layer": item.layer,
                "data-head": item.head ?? undefined,
                "data-from": item.from_token ?? undefined,
                "data-to": item.to_token ?? undefined,
                title: `${item.annotator}, ${item.saved_at}; input: ${item.input_text}`,
              },
            },
            [
              h("span", { className: "attnw-notes-where", text: where }),
              h("span", { className: "attnw-notes-item-role", text: item.role }),
              h("span", { className: "attnw-notes-item-note", text: item.note }),
              h("span", { className: "attnw-notes-who", text: item.annotator }),
            ],
          );
          if (!here) li.append(h("span", { className: "attnw-notes-other", text: `on: ${item.input_text}` }));
          return li;
        }),
    );
  }

  readonly dispose = (): void => this.listeners.dispose();
}

export const NOTES_CSS = `
.attnw-notes { margin-top: 8px; border-top: 1px solid var(--attnw-border, #8884); padding-top: 6px; font-size: 12px; }
.attnw-notes-form { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.attnw-notes-text { flex: 1 1 200px; min-width: 160px; font: inherit; }
.attnw-notes-role { min-width: 180px; }
.attnw-notes-list { list-style: none; padding: 0; margin: 6px 0 0; max-height: 160px; overflow-y: auto; }
.attnw-notes-item { display: flex; flex-wrap: wrap; gap: 8px; padding: 2px 0; }
.attnw-notes-where { font-weight: 600; }
.attnw-notes-who, .attnw-notes-other { opacity: 0.7; }
.attnw-notes[data-status="error"] .attnw-notes-status { color: #c0392b; }
`;

/**
 * Put a notes panel at the end of `root`: it re-reads the view's target
 * (`fields`) whenever `notes` or one of `traits` changes. Returns its dispose.
 */
export function attachNotes(
  model: NotesModel & { on(name: string, fn: () => void): void; off(name: string, fn: () => void): void },
  root: HTMLElement,
  fields: () => TargetField[],
  traits: readonly string[],
  tokens: () => readonly string[],
): () => void {
  const panel = new NotesPanel(model, tokens);
  const style = h("style", { text: NOTES_CSS });
  root.append(style, panel.el);
  let queued = false;
  const sync = (): void => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => {
      queued = false;
      try {
        panel.sync(fields());
      } catch (err) {
        console.error("attnwidget notes:", err);
      }
    });
  };
  panel.listeners.traits(model, ["notes", ...traits], sync).add(() => {
    style.remove();
    panel.el.remove();
  });
  sync();
  return panel.dispose;
}

/** [id, "id"] options. */
export function idOptions(ids: readonly number[]): [number, string][] {
  return ids.map((id) => [id, String(id)]);
}

/** [i, "i token"] options, one per token. */
export function tokenOptions(tokens: readonly string[]): [number, string][] {
  return tokens.map((t, i) => [i, `${i} ${displayToken(t)}`]);
}

interface HeadModel {
  get(name: "matrices"): { key: string; layer_ids: number[]; head_ids: number[] }[] | undefined;
  get(name: "matrix" | "layer"): unknown;
}

/** HeadView's and ModelView's target: the shown matrix's layer and `head` (ids). */
export function headTarget(model: HeadModel, head: number): TargetField[] {
  const info = (model.get("matrices") ?? []).find((m) => m.key === model.get("matrix"));
  return [
    { name: "layer", label: "Layer", options: idOptions(info?.layer_ids ?? []), value: Number(model.get("layer")) },
    { name: "head", label: "Head", options: idOptions(info?.head_ids ?? []), value: head },
  ];
}

interface FlowModel {
  get(name: "shape"): number[] | undefined;
  get(name: "tokens"): string[] | undefined;
  get(name: "selected_layer" | "selected_token"): number | undefined;
}

/**
 * FlowView's target: edge layer l (1 … L) between node layers l − 1 (`from`)
 * and l (`to`); by default the edge into the selected node from the same
 * token below it (from the selected input token when layer 0 is selected).
 */
export function edgeTarget(model: FlowModel): TargetField[] {
  const layers = (model.get("shape") ?? [0])[0] ?? 0;
  const tokens = model.get("tokens") ?? [];
  const selected = model.get("selected_layer") ?? -1;
  const token = Math.max(0, model.get("selected_token") ?? 0);
  const layer = Math.min(layers, Math.max(1, selected));
  const ids = Array.from({ length: layers }, (_, k) => k + 1);
  return [
    { name: "layer", label: "Edge layer", options: idOptions(ids), value: layer },
    { name: "from", label: "from", options: tokenOptions(tokens), value: token },
    { name: "to", label: "to", options: tokenOptions(tokens), value: token },
  ];
}
