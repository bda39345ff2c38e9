/**
 * A safe subset of markdown for the Annotator's guidelines, parsed into a
 * small tree (pure: `parseMarkdown`) and built as DOM elements whose every
 * piece of text goes in as a text node (`renderMarkdown`). No string is ever
 * parsed as HTML: `<script>` in the guidelines is shown as the characters
 * `<script>`. Links show their text and their address as text (no href).
 *
 * Blocks: `#`..`######` headings, `-`/`*`/`+` bullet lists, `1.` numbered
 * lists, paragraphs (lines joined; a blank line ends one), fenced code
 * (```). Inline: `**strong**`, `*em*` / `_em_`, `` `code` ``, `[text](url)`.
 */

/** An inline run: plain text, or text in one style. */
export interface Inline {
  kind: "text" | "strong" | "em" | "code" | "link";
  text: string;
  /** A link's address (shown as text after it). */
  href?: string;
}

export type Block =
  | { kind: "heading"; level: number; inlines: Inline[] }
  | { kind: "paragraph"; inlines: Inline[] }
  | { kind: "list"; ordered: boolean; items: Inline[][] }
  | { kind: "code"; text: string };

const INLINE = /\*\*(.+?)\*\*|`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)|\*([^*\s][^*]*?)\*|\b_([^_\s][^_]*?)_\b/g;

/** The inline runs of one line of text. */
export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    const at = m.index ?? 0;
    if (at > last) out.push({ kind: "text", text: text.slice(last, at) });
    if (m[1] !== undefined) out.push({ kind: "strong", text: m[1] });
    else if (m[2] !== undefined) out.push({ kind: "code", text: m[2] });
    else if (m[3] !== undefined) out.push({ kind: "link", text: m[3], href: m[4] ?? "" });
    else out.push({ kind: "em", text: m[5] ?? m[6] ?? "" });
    last = at + m[0].length;
  }
  if (last < text.length) out.push({ kind: "text", text: text.slice(last) });
  return out;
}

/** The blocks of a markdown text (the subset of the module docs). */
export function parseMarkdown(source: string): Block[] {
  const blocks: Block[] = [];
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let paragraph: string[] = [];
  let list: { ordered: boolean; items: Inline[][] } | null = null;
  const flush = (): void => {
    if (paragraph.length) blocks.push({ kind: "paragraph", inlines: parseInline(paragraph.join(" ")) });
    paragraph = [];
    if (list) blocks.push({ kind: "list", ...list });
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^\s*```/.test(line)) {
      flush();
      const code: string[] = [];
      for (i += 1; i < lines.length && !/^\s*```/.test(lines[i]!); i++) code.push(lines[i]!);
      blocks.push({ kind: "code", text: code.join("\n") });
      continue;
    }
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d{1,9}[.)]\s+(.*)$/.exec(line);
    if (!line.trim()) flush();
    else if (heading) {
      flush();
      blocks.push({ kind: "heading", level: heading[1]!.length, inlines: parseInline(heading[2]!) });
    } else if (bullet || numbered) {
      const ordered = !bullet;
      if (paragraph.length || (list && list.ordered !== ordered)) flush();
      list ??= { ordered, items: [] };
      list.items.push(parseInline((bullet ?? numbered)![1]!));
    } else if (list && /^\s+\S/.test(line) && list.items.length) {
      list.items[list.items.length - 1]!.push({ kind: "text", text: " " }, ...parseInline(line.trim()));
    } else {
      if (list) flush();
      paragraph.push(line.trim());
    }
  }
  flush();
  return blocks;
}

function inlineNodes(doc: Document, inlines: readonly Inline[]): Node[] {
  return inlines.map((run) => {
    if (run.kind === "text") return doc.createTextNode(run.text);
    const tag = { strong: "strong", em: "em", code: "code", link: "span" }[run.kind];
    const el = doc.createElement(tag);
    el.textContent = run.kind === "link" ? `${run.text} (${run.href ?? ""})` : run.text;
    if (run.kind === "link") el.className = "attnw-ann-md-link";
    return el;
  });
}

/** The guidelines as DOM nodes (text nodes only hold the user's strings). */
export function renderMarkdown(doc: Document, source: string): Node[] {
  return parseMarkdown(source).map((block) => {
    if (block.kind === "code") {
      const pre = doc.createElement("pre");
      pre.textContent = block.text;
      return pre;
    }
    if (block.kind === "list") {
      const el = doc.createElement(block.ordered ? "ol" : "ul");
      for (const item of block.items) {
        const li = doc.createElement("li");
        li.append(...inlineNodes(doc, item));
        el.appendChild(li);
      }
      return el;
    }
    const el = doc.createElement(block.kind === "heading" ? (`h${Math.min(6, block.level + 3)}` as "h4") : "p");
    el.append(...inlineNodes(doc, block.inlines));
    return el;
  });
}
