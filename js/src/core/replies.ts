/**
 * A saved page answers its own requests: `to_html()` records the kernel's
 * replies to every request the page may send (attnwidget/views/core/standalone.py),
 * each in
 *
 *   <script type="application/json" data-attnwidget-reply="<model_id>"
 *           data-match='{"type":"request","layer":3,...}'>
 *     {"content": {...}, "buffers": ["<base64>", ...]}
 *   </script>
 *
 * after the bundle. A request is answered by every block of its model whose
 * `data-match` keys it has with equal values, in page order; by the payload's
 * `unanswered` message when none matches; else not at all (as a kernel that
 * is gone).
 *
 * Why blocks and not one JSON: they can hold tens of MB of base64, and a
 * block is parsed and decoded only when its request comes, so a page draws
 * without paying for the attention it does not show.
 */
import { base64ToBytes } from "./localmodel";

/** Attribute of a recorded reply block; its value is the widget's model id. */
export const REPLY_ATTRIBUTE = "data-attnwidget-reply";

/** A custom message as a view receives it: content and binary buffers. */
export interface Reply {
  content: unknown;
  buffers: DataView[];
}

/**
 * Answers a request sent from the page: calls `deliver` once per reply (maybe
 * some now and some once the page is parsed) and settles when done.
 */
export type Responder = (request: unknown, deliver: (reply: Reply) => void) => Promise<void>;

/** Whether `request` has every key of `match` with an equal (JSON scalar) value. */
export function requestMatches(match: unknown, request: unknown): boolean {
  if (typeof match !== "object" || match === null || Array.isArray(match)) return false;
  if (typeof request !== "object" || request === null || Array.isArray(request)) return false;
  const keys = Object.keys(match);
  return (
    keys.length > 0 &&
    keys.every(
      (key) => Object.prototype.hasOwnProperty.call(request, key) && Object.is((request as any)[key], (match as any)[key]),
    )
  );
}

/** A reply block's text as the message a view receives. */
export function decodeReply(text: string): Reply {
  const parsed = JSON.parse(text) as { content?: unknown; buffers?: unknown };
  if (typeof parsed !== "object" || parsed === null || typeof parsed.content !== "object" || parsed.content === null) {
    throw new TypeError("attnwidget: a recorded reply has no `content` object");
  }
  const buffers = parsed.buffers ?? [];
  if (!Array.isArray(buffers) || !buffers.every((b) => typeof b === "string")) {
    throw new TypeError("attnwidget: a recorded reply's `buffers` is not a list of base64 strings");
  }
  return {
    content: parsed.content,
    buffers: buffers.map((b) => {
      const bytes = base64ToBytes(b);
      return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }),
  };
}

/** The parts of a reply block the responder reads: its parsed match and its text. */
export interface ReplySource {
  /** The request keys it answers (parsed `data-match`; null: answers nothing). */
  match: unknown;
  text: () => string;
}

/** Where the reply blocks are: those parsed so far, and when the rest will be. */
export interface ReplySources {
  /** The blocks parsed so far (the same objects for the same blocks). */
  list(): readonly ReplySource[];
  /** Resolves when every block is parsed; null when they all are already. */
  loading(): Promise<void> | null;
}

/**
 * A responder over reply sources and the message for a request none of them
 * answers. Blocks already parsed answer at once; while the page is still
 * loading, the blocks parsed later answer when it is done (each block once).
 */
export function recordedResponder(sources: ReplySources, unanswered?: unknown): Responder {
  return async (request, deliver) => {
    const sent = new Set<ReplySource>();
    const answer = (): void => {
      for (const source of sources.list()) {
        if (sent.has(source) || !requestMatches(source.match, request)) continue;
        sent.add(source);
        deliver(decodeReply(source.text()));
      }
    };
    answer();
    const rest = sources.loading();
    if (rest) {
      await rest;
      answer();
    }
    if (sent.size === 0 && typeof unanswered === "object" && unanswered !== null) {
      deliver({ content: { ...unanswered, request }, buffers: [] });
    }
  };
}

function parseMatch(text: string | null): unknown {
  try {
    return JSON.parse(text ?? "null");
  } catch {
    return null; // not one of ours: matches nothing
  }
}

/** Static reply sources (tests, or a page that is fully parsed). */
export function fixedReplySources(list: readonly ReplySource[]): ReplySources {
  return { list: () => list, loading: () => null };
}

/**
 * The reply blocks of `modelId` in `doc`. The blocks follow the bundle, which
 * may run while the parser is still reading them: a request looks at those
 * parsed so far, then again once the document is.
 */
export function pageReplySources(doc: Document, modelId: string): ReplySources {
  const known = new Map<Element, ReplySource>();
  const parsed = new Promise<void>((resolve) => {
    if (doc.readyState === "loading") doc.addEventListener("DOMContentLoaded", () => resolve(), { once: true });
    else resolve();
  });
  return {
    list: () => {
      const blocks = doc.querySelectorAll<HTMLScriptElement>(`script[type="application/json"][${REPLY_ATTRIBUTE}]`);
      const out: ReplySource[] = [];
      for (const block of Array.from(blocks)) {
        if (block.getAttribute(REPLY_ATTRIBUTE) !== modelId) continue;
        let source = known.get(block);
        if (!source) {
          source = { match: parseMatch(block.getAttribute("data-match")), text: () => block.textContent ?? "" };
          known.set(block, source);
        }
        out.push(source);
      }
      return out;
    },
    loading: () => (doc.readyState === "loading" ? parsed : null),
  };
}
