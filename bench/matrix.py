"""AttentionMatrixView at 4,096 tokens in headless Chromium: first frame, pan, zoom.

The page is the real bundle (``attnwidget/static/widget.js``) drawing a real
``AttentionMatrixView`` (made by ``HeadView(exp)``, which switches to it above
512 tokens) of random post-softmax attention (``Explanation.from_attentions``,
no model). The page's tile requests (``model.send``) and trait changes
(``save_changes``) go over a websocket on 127.0.0.1 to the Python widget,
which answers exactly as it answers Jupyter's comm (``_on_message``,
``set_state``), tiles as binary frames (JSON header + raw buffers), as
Jupyter's websocket carries them, without Jupyter's second hop to the kernel.

Timed in the page (``performance.now()``), each until the frame is painted
(the view's ``data-draws`` changes, then the next animation frame and a task
posted from it):

* first frame: from ``renderStandalone`` (state decoded, view built) to the
  first painted frame (drawn from the 8 KB overview), and to the sharp frame
  (every tile of the level the fit zoom needs has come from Python and is
  drawn); also the first frame since navigation started (the bundle loaded,
  the state fetched from Python);
* pan: a drag of 40 px (pointer events on the canvas), zoomed in to a few
  pixels per cell, to the painted frame (drawn at once from the tiles held)
  and to the sharp frame (tiles newly in view from Python, drawn);
* zoom: a wheel step about the centre to the painted frame (drawn at once
  from the tiles held, coarser ones stretched), and to the sharp frame (the
  new level's tiles from Python, drawn);
* layer switch: the page's layer picker to the new matrix's first frame
  (Python computes its pyramid on the way).

Goals (issue #13): first frame ≤ 1 s, pan/zoom answered (a new frame
painted) ≤ 50 ms.

    .venv/bin/python bench/matrix.py [--n 4096] [--layers 2] [--heads 2] [--repeats 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

CHROMIUM = "/usr/bin/chromium"
FIRST_FRAME_GOAL_MS = 1000.0
INTERACTION_GOAL_MS = 50.0

PAGE = """<!doctype html><meta charset="utf-8"><title>matrix bench</title>
<div id="host"></div>
<script type="module">
import { renderStandalone } from "/widget.js";
const socket = new WebSocket("WS_URL");
socket.binaryType = "arraybuffer";
let model = null;
function frames(data) {
  const view = new DataView(data);
  const length = view.getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(data, 4, length)));
  let offset = 4 + length;
  const buffers = header.sizes.map((size) => {
    const b = new DataView(data, offset, size); offset += size; return b; });
  return [header, buffers];
}
socket.onmessage = (event) => {
  const [header, buffers] = frames(event.data);
  if (header.kind === "payload") { window.benchStart(header.payload); return; }
  if (header.kind === "custom") { model.emit("msg:custom", header.content, buffers); return; }
  // A state update: buffers back at their paths, then set as Jupyter would.
  const state = header.state;
  header.buffer_paths.forEach((path, k) => {
    let node = state; for (const key of path.slice(0, -1)) node = node[key];
    node[path[path.length - 1]] = buffers[k];
  });
  window.rawSet(state); // not a change of the page's: nothing to save back
};
window.benchStart = (payload) => {
  const t0 = performance.now();
  const view = renderStandalone(document.getElementById("host"), payload);
  // Watch the view's frames from now on: the first painted one, and the first
  // with every tile it asked for (a task posted from the drawing frame runs
  // once that frame is painted).
  const root = document.querySelector('.attnw-matrixview');
  const watch = new MutationObserver(() => setTimeout(() => {
    const drawn = Number(root.dataset.draws || 0);
    if (window.benchFirst === undefined && drawn > 0) {
      window.benchFirst = performance.now() - t0;
      window.benchFromLoad = performance.now(); // since navigation started
    }
    if (window.benchSharp === undefined && drawn > 1 && root.dataset.pending === '0') {
      window.benchSharp = performance.now() - t0;
      watch.disconnect();
    }
  }, 0));
  watch.observe(root, { attributes: true, attributeFilter: ['data-draws', 'data-pending'] });
  model = view.model;
  window.benchT0 = t0;
  model.send = (content) => socket.send(JSON.stringify({ kind: "custom", content }));
  const set = model.set.bind(model);
  window.rawSet = set;
  let dirty = {};
  model.set = (key, value) => {
    if (typeof key === "string") dirty[key] = value; else Object.assign(dirty, key);
    set(key, value);
  };
  model.save_changes = () => { const patch = dirty; dirty = {};
    socket.send(JSON.stringify({ kind: "state", state: patch })); };
};
socket.onopen = () => socket.send(JSON.stringify({ kind: "hello" }));
</script>
"""

#: Resolves with [first painted frame, sharp frame (ms after benchStart), first frame since
#: navigation start].
FIRST = """() => new Promise((resolve) => {
  const check = () => window.benchSharp === undefined ? setTimeout(check, 5)
    : resolve([window.benchFirst, window.benchSharp, window.benchFromLoad]);
  check();
})"""

#: Dispatch one interaction; resolve with [painted ms, sharp ms] (sharp: no tile in flight).
INTERACT = """([kind, arg]) => new Promise((resolve) => {
  const root = document.querySelector('.attnw-matrixview');
  const canvas = root.querySelector('canvas.attnw-matrix-canvas');
  const box = canvas.getBoundingClientRect();
  const cx = box.left + 86 + 280, cy = box.top + 70 + 280;
  const before = Number(root.dataset.draws);
  const version = root.dataset.version;
  let painted = null;
  const t0 = performance.now();
  // The view draws inside an animation frame: a task posted from there runs
  // once that frame is painted.
  const done = () => {
    if (painted !== null && root.dataset.pending === '0') {
      watch.disconnect();
      resolve([painted, performance.now() - t0]);
    }
  };
  const watch = new MutationObserver(() => {
    const drawn = Number(root.dataset.draws) > before
      && (kind !== 'layer' || root.dataset.version !== version);
    if (!drawn) return;
    setTimeout(() => { if (painted === null) painted = performance.now() - t0; done(); }, 0);
  });
  watch.observe(root, { attributes: true, attributeFilter: ['data-draws', 'data-pending'] });
  const pointer = (type, x, y) => canvas.dispatchEvent(new PointerEvent(type, {
    bubbles: true, clientX: x, clientY: y, pointerId: 1, buttons: type === 'pointerup' ? 0 : 1,
  }));
  if (kind === 'pan') {
    pointer('pointerdown', cx, cy); pointer('pointermove', cx + arg, cy + arg / 2);
    pointer('pointerup', cx + arg, cy + arg / 2);
  } else if (kind === 'zoom') {
    canvas.dispatchEvent(new WheelEvent('wheel', { bubbles: true, cancelable: true,
      clientX: cx, clientY: cy, deltaY: arg }));
  } else {
    const select = root.querySelector('select.attnw-matrix-layer');
    select.value = String(arg); select.dispatchEvent(new Event('change', { bubbles: true }));
  }
})"""


def frame(header: dict[str, Any], buffers: list[Any]) -> bytes:
    data = [bytes(b) for b in buffers]
    head = json.dumps({**header, "sizes": [len(b) for b in data]}).encode()
    return struct.pack("<I", len(head)) + head + b"".join(data)


class Bridge:
    """The kernel side: the page's messages into the widget, its replies back."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self.out: list[bytes] = []
        self.kernel_ms: list[float] = []
        self.tile_bytes = 0
        self.largest = 0
        view._send = self._capture

    def _capture(self, msg: dict[str, Any], buffers: Any = None) -> None:
        buffers = list(buffers or [])
        if msg.get("method") == "custom":
            data = frame({"kind": "custom", "content": msg["content"]}, buffers)
            self.tile_bytes += sum(len(bytes(b)) for b in buffers)
        elif msg.get("method") == "update":
            header = {"kind": "update", "state": msg["state"], "buffer_paths": msg["buffer_paths"]}
            data = frame(header, buffers)
        else:
            return
        self.largest = max(self.largest, len(data))
        self.out.append(data)

    def handle(self, text: str) -> list[bytes]:
        from attnwidget.views.core.standalone import widget_payload

        message = json.loads(text)
        self.out = []
        t0 = time.perf_counter()
        if message["kind"] == "hello":
            payload = widget_payload(self.view)
            return [frame({"kind": "payload", "payload": payload}, [])]
        if message["kind"] == "custom":
            self.view._on_message(self.view, message["content"], [])
        elif message["kind"] == "state":
            self.view.set_state(message["state"])
        self.kernel_ms.append((time.perf_counter() - t0) * 1000)
        return self.out


def softmax_attention(layers: int, heads: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((layers, heads, n, n), dtype=np.float32) * 3
    logits -= logits.max(-1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(-1, keepdims=True)
    return logits


def run(args: argparse.Namespace) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright
    from websockets.sync.server import serve

    from attnwidget.results.explanation import Explanation
    from attnwidget.views import HeadView
    from attnwidget.views.core.base import BUNDLE

    attentions = softmax_attention(args.layers, args.heads, args.n)
    exp = Explanation.from_attentions(attentions, [f"tok{i}" for i in range(args.n)], methods=None)
    t0 = time.perf_counter()
    view = HeadView(exp)
    construct_ms = (time.perf_counter() - t0) * 1000
    bridge = Bridge(view)
    bundle = BUNDLE.read_text(encoding="utf-8")
    errors: list[str] = []
    page_html = PAGE

    def serve_page(socket: Any) -> None:
        for message in socket:
            for data in bridge.handle(message):
                socket.send(data)

    def files(connection: Any, request: Any) -> Any:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return None
        if request.path == "/favicon.ico":
            return connection.respond(204, "")
        body, kind = {"/": (page_html, "text/html"), "/widget.js": (bundle, "text/javascript")}.get(
            request.path, ("", "")
        )
        if not kind:
            errors.append(f"unexpected request {request.path}")
            return connection.respond(404, "not found\n")
        response = connection.respond(200, body)
        response.headers["Content-Type"] = f"{kind}; charset=utf-8"
        return response

    server = serve(serve_page, "127.0.0.1", 0, process_request=files, max_size=None)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.socket.getsockname()[1]}"
    page_html = PAGE.replace("WS_URL", origin.replace("http:", "ws:") + "/ws")
    results: dict[str, Any] = {"n": args.n, "construct_ms": construct_ms}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--headless", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(f"{origin}/")
        page.wait_for_function("window.benchT0 !== undefined", timeout=30000)
        first, sharp, from_load = page.evaluate(FIRST)
        results["first_ms"], results["sharp_ms"], results["from_load_ms"] = first, sharp, from_load
        results["first_tile_bytes"] = bridge.tile_bytes
        results["overview_bytes"] = len(view.overview)
        if args.screenshot:
            page.locator(".attnw-matrixview").screenshot(path=str(args.screenshot))
        pans, zooms = [], []
        # Pan zoomed in (4 px per cell: level 0 tiles), so that a drag moves the view.
        for _ in range(5):
            page.evaluate(INTERACT, ["zoom", -400])
        results["pan_scale"] = float(page.locator(".attnw-matrixview").get_attribute("data-scale"))
        for r in range(args.repeats):
            pans.append(page.evaluate(INTERACT, ["pan", 40 if (r // 5) % 2 else -40]))
        for _ in range(5):
            page.evaluate(INTERACT, ["zoom", 400])
        # Zoom in step by step to the finest level, then back out, and again.
        steps = [-240] * 8 + [240] * 8
        for r in range(args.repeats):
            zooms.append(page.evaluate(INTERACT, ["zoom", steps[r % len(steps)]]))
        # The view opens on the last layer: switch to layer 0, 1, … in turn.
        layers = [page.evaluate(INTERACT, ["layer", k % args.layers]) for k in range(4)]
        browser.close()
    server.shutdown()
    if errors:
        raise SystemExit(f"the page reported errors: {errors[:5]}")
    results.update(
        pan=[p[0] for p in pans],
        pan_sharp=[p[1] for p in pans],
        zoom=[z[0] for z in zooms],
        zoom_sharp=[z[1] for z in zooms],
        layer=[x[0] for x in layers],
        layer_sharp=[x[1] for x in layers],
        kernel_ms=statistics.median(bridge.kernel_ms) if bridge.kernel_ms else 0.0,
        largest_message=bridge.largest,
        tile_bytes=bridge.tile_bytes,
    )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--screenshot", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    r = run(args)

    def stats(values: list[float]) -> str:
        return f"median {statistics.median(values):6.1f} ms, max {max(values):6.1f} ms"

    n = r["n"]
    print(f"AttentionMatrixView, n = {n:,} ({args.layers} layers, {args.heads} heads), Chromium")
    print(f"  view made in Python (HeadView -> matrix view):  {r['construct_ms']:7.1f} ms")
    overview, tiles = r["overview_bytes"] / 1024, r["first_tile_bytes"] / 1024
    print(f"  first frame (overview, {overview:.0f} KB):  {r['first_ms']:7.1f} ms", end="")
    print(f"   goal {FIRST_FRAME_GOAL_MS:g} ms")
    print(f"  sharp first frame (+{tiles:.0f} KB of tiles):  {r['sharp_ms']:7.1f} ms")
    print(f"  first frame from navigation start:     {r['from_load_ms']:7.1f} ms (bundle, state)")
    print(f"  pan 40 px -> painted:       {stats(r['pan'])}   goal {INTERACTION_GOAL_MS:g} ms")
    print(
        f"  pan 40 px -> sharp:         {stats(r['pan_sharp'])}   (at {r['pan_scale']:.2g} px/cell)"
    )
    print(f"  zoom step -> painted:       {stats(r['zoom'])}   goal {INTERACTION_GOAL_MS:g} ms")
    print(f"  zoom step -> sharp:         {stats(r['zoom_sharp'])}   (tiles from Python)")
    print(f"  layer switch -> painted:    {stats(r['layer'])}   (Python pools the new matrix)")
    print(f"  kernel time per message (median): {r['kernel_ms']:.1f} ms")
    print(
        f"  largest message {r['largest_message'] / 2**20:.2f} MiB; tiles sent in all "
        f"{r['tile_bytes'] / 2**20:.1f} MiB"
    )
    worst = max(statistics.median(r["pan"]), statistics.median(r["zoom"]))
    ok = r["first_ms"] <= FIRST_FRAME_GOAL_MS and worst <= INTERACTION_GOAL_MS
    print(f"  goals: {'met' if ok else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
