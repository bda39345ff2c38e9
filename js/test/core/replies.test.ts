import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { LocalModel } from "../../src/core/localmodel";
import {
  type Reply,
  type ReplySource,
  decodeReply,
  fixedReplySources,
  recordedResponder,
  requestMatches,
} from "../../src/core/replies";

/** Run a responder on one request; the replies it delivered. */
async function ask(respond: ReturnType<typeof recordedResponder>, request: unknown): Promise<Reply[]> {
  const got: Reply[] = [];
  await respond(request, (reply) => got.push(reply));
  return got;
}

const b64 = (bytes: number[]): string => Buffer.from(bytes).toString("base64");

function source(match: unknown, content: unknown, buffers: string[] = []): ReplySource {
  let reads = 0;
  const text = JSON.stringify({ content, buffers });
  return Object.assign(
    {
      match,
      text: () => {
        reads += 1;
        return text;
      },
    },
    { reads: () => reads },
  );
}

describe("requestMatches", () => {
  const request = { type: "request", matrix: "self", layer: 3, head: 2 };
  test("every key of the match, with an equal value, is needed", () => {
    assert.ok(requestMatches({ type: "request", matrix: "self", layer: 3 }, request));
    assert.ok(requestMatches({ type: "request", matrix: "self", layer: 3, head: 2 }, request));
    assert.ok(!requestMatches({ type: "request", matrix: "self", layer: 4 }, request));
    assert.ok(!requestMatches({ type: "request", matrix: "self", layer: 3, head: 1 }, request));
    // A head-level reply does not answer a whole-layer request.
    assert.ok(!requestMatches({ type: "request", layer: 3, head: 2 }, { type: "request", layer: 3 }));
  });
  test("values compare strictly (3 is not '3') and empty or odd matches never match", () => {
    assert.ok(!requestMatches({ layer: "3" }, request));
    assert.ok(!requestMatches({}, request));
    assert.ok(!requestMatches(null, request));
    assert.ok(!requestMatches([3], request));
    assert.ok(!requestMatches({ layer: 3 }, null));
  });
  test("a key inherited from the prototype is not a key of the request", () => {
    assert.ok(!requestMatches({ toString: Object.prototype.toString }, {}));
  });
});

describe("decodeReply", () => {
  test("content as is, buffers as DataViews over the decoded bytes", () => {
    const reply = decodeReply(JSON.stringify({ content: { type: "attention", layer: 1 }, buffers: [b64([1, 2, 255])] }));
    assert.deepEqual(reply.content, { type: "attention", layer: 1 });
    assert.equal(reply.buffers.length, 1);
    assert.deepEqual(Array.from(new Uint8Array(reply.buffers[0]!.buffer, reply.buffers[0]!.byteOffset, 3)), [1, 2, 255]);
  });
  test("malformed blocks raise with what is wrong", () => {
    assert.throws(() => decodeReply(JSON.stringify({ buffers: [] })), /no `content` object/);
    assert.throws(() => decodeReply(JSON.stringify({ content: {}, buffers: [1] })), /not a list of base64 strings/);
  });
});

describe("recordedResponder", () => {
  test("answers with every matching block in order, reading only those", async () => {
    const a = source({ type: "request", layer: 0 }, { type: "attention", rows: [0, 2] }, [b64([1])]);
    const b = source({ type: "request", layer: 1 }, { type: "attention", rows: [0, 4] }, [b64([2])]);
    const c = source({ type: "request", layer: 0 }, { type: "attention", rows: [2, 4] }, [b64([3])]);
    const respond = recordedResponder(fixedReplySources([a, b, c]));
    const replies = await ask(respond, { type: "request", layer: 0, matrix: "self" });
    assert.deepEqual(
      replies.map((r) => r.content),
      [
        { type: "attention", rows: [0, 2] },
        { type: "attention", rows: [2, 4] },
      ],
    );
    assert.deepEqual(replies.map((r) => r.buffers[0]!.getUint8(0)), [1, 3]);
    assert.equal((b as any).reads(), 0); // the other layer's block stays unparsed
  });
  test("an unanswered request gets the payload's message (with the request), or nothing", async () => {
    const none = recordedResponder(fixedReplySources([]));
    assert.deepEqual(await ask(none, { type: "request", layer: 5 }), []);
    const error = recordedResponder(fixedReplySources([]), { type: "error", message: "not saved" });
    const [reply] = await ask(error, { type: "request", layer: 5 });
    assert.deepEqual(reply!.content, { type: "error", message: "not saved", request: { type: "request", layer: 5 } });
  });
  test("while the page loads: blocks parsed so far answer at once, later ones when it is parsed", async () => {
    const first = source({ type: "request", layer: 0 }, { type: "attention", rows: [0, 2] });
    const later = source({ type: "request", layer: 0 }, { type: "attention", rows: [2, 4] });
    const blocks: ReplySource[] = [first];
    let finish = (): void => {};
    let loading: Promise<void> | null = new Promise<void>((resolve) => {
      finish = () => {
        blocks.push(later);
        loading = null;
        resolve();
      };
    });
    const respond = recordedResponder({ list: () => blocks, loading: () => loading }, { type: "error" });
    const got: unknown[] = [];
    const done = respond({ type: "request", layer: 0 }, (reply) => got.push(reply.content));
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.deepEqual(got, [{ type: "attention", rows: [0, 2] }]); // no waiting for the rest
    finish();
    await done;
    // The first block is not sent twice; no error, since blocks answered.
    assert.deepEqual(got, [
      { type: "attention", rows: [0, 2] },
      { type: "attention", rows: [2, 4] },
    ]);
  });

  test("a block with an unreadable match (parsed as null) is skipped", async () => {
    const bad: ReplySource = { match: null, text: () => "{}" };
    const respond = recordedResponder(fixedReplySources([bad]), { type: "error", message: "x" });
    const replies = await ask(respond, { type: "request" });
    assert.equal((replies[0]!.content as any).type, "error");
  });
});

describe("LocalModel with a responder", () => {
  test("send answers later as msg:custom (content, buffers), never during send", async () => {
    const respond = recordedResponder(fixedReplySources([source({ type: "request" }, { type: "attention" }, [b64([7, 8])])]));
    const model = new LocalModel({}, { respond });
    const got: [unknown, DataView[]][] = [];
    model.on("msg:custom", (content: unknown, buffers: DataView[]) => got.push([content, buffers]));
    model.send({ type: "request", layer: 2 });
    assert.equal(got.length, 0);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(got.length, 1);
    assert.deepEqual(got[0]![0], { type: "attention" });
    assert.equal(got[0]![1][0]!.getUint8(1), 8);
  });
  test("without a responder a message is dropped", async () => {
    const model = new LocalModel({});
    let calls = 0;
    model.on("msg:custom", () => calls++);
    model.send({ type: "request" });
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(calls, 0);
  });
});

describe("attentionFeed and error replies", () => {
  test("an error reply is not re-asked on redraw, only after the user navigates", async () => {
    const { attentionFeed } = await import("../../src/attention/attention_common");
    let requests = 0;
    const respond = async (_request: unknown, deliver: (reply: Reply) => void): Promise<void> => {
      requests += 1;
      deliver({ content: { type: "error", message: "not saved" }, buffers: [] });
    };
    const model = new LocalModel<any>({ matrices: [], preload_index: [], layer: 0 }, { respond });
    const errors: string[] = [];
    const feed = attentionFeed(model, () => {}, (message) => errors.push(message));
    const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
    assert.ok(feed.requester.ask("self", 7));
    await tick();
    assert.deepEqual(errors, ["not saved"]);
    assert.ok(!feed.requester.ask("self", 7)); // a redraw asks again: not sent
    await tick();
    assert.equal(requests, 1);
    model.set("layer", 3); // navigation: the next ask is sent
    assert.ok(feed.requester.ask("self", 7));
    await tick();
    assert.equal(requests, 2);
    feed.dispose();
    assert.equal(model.listenerCount(), 0);
  });
});
