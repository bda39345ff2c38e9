"""A throw-away Jupyter server (JupyterLab or Notebook 7) and a page watch for UI smoke tests.

``jupyter_server(kind, base)`` copies ``notebooks/`` into ``base``, starts
``jupyter lab`` or ``jupyter notebook`` on 127.0.0.1 (a free port, a random
token, settings/workspaces/runtime files under ``base`` only) and, on exit,
shuts it down together with its kernels. ``watch_page`` records what a page
logs and aborts (and records) every request that would leave 127.0.0.1.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Server:
    url: str
    token: str
    root: Path
    log: Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api(server: Server, path: str, method: str = "GET", body: Any = None) -> Any:
    headers = {"Authorization": f"token {server.token}", "Content-Type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{server.url}{path}", data, headers, method=method)
    with urllib.request.urlopen(request, timeout=5) as response:
        body = response.read()
    return json.loads(body) if body else None


@contextmanager
def jupyter_server(
    kind: Literal["lab", "notebook"],
    base: Path,
    settings: dict[str, dict[str, Any]] | None = None,
    extra_args: Sequence[str] = (),
    disabled: Sequence[str] = ("@jupyterlab/debugger-extension",),
) -> Iterator[Server]:
    """Run ``jupyter lab`` / ``jupyter notebook`` (7) on a copy of ``notebooks/`` in ``base``.

    ``settings`` maps a plugin id (``"@jupyterlab/apputils-extension:themes"``)
    to the user settings this server starts with; ``disabled`` lists front-end
    extensions to turn off.
    """
    root = base / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    port, token = free_port(), secrets.token_hex(16)
    # Settings, workspaces and runtime files of this server only: no state from
    # (or left to) the user's own Jupyter. The debugger extension is off: it
    # is not under test, and a kernel restart cancels its start-up requests,
    # which it reports as a console error. Notebook 7 reads the same labconfig.
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": dict.fromkeys(disabled, True)})
    )
    settings_dir = base / "settings"
    for plugin, values in (settings or {}).items():
        package, _, name = plugin.rpartition(":")
        path = settings_dir / package / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings_dir),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    env.pop("ATTNWIDGET_STATIC", None)  # the live widgets are under test, not static HTML
    command = [
        sys.executable,
        "-m",
        "jupyterlab" if kind == "lab" else "notebook",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        *extra_args,
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI runs as root; Jupyter refuses otherwise
    log = base / "server.log"
    with log.open("wb") as out:
        # Its own session, so stop() can end the server and its kernels together.
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    server = Server(f"http://127.0.0.1:{port}", token, root, log)
    try:
        deadline = time.monotonic() + 40
        while True:
            if process.poll() is not None:
                status = process.returncode
                raise RuntimeError(f"jupyter {kind} exited ({status}):\n{log.read_text()}")
            try:
                api(server, "/api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    message = f"jupyter {kind} did not start:\n{log.read_text()}"
                    raise RuntimeError(message) from None
                time.sleep(0.2)
        yield server
    finally:
        stop(server, process)


def stop(server: Server, process: subprocess.Popen[bytes]) -> None:
    """Shut the server down (it stops its kernels); kill its session if it will not go."""
    if process.poll() is None:
        try:
            api(server, "/api/shutdown", method="POST")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    # Kernels live in the server's session: end anything left of it.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        time.sleep(1)
    if process.poll() is None:
        process.wait(timeout=5)


@dataclass
class Watch:
    """What a page did: console errors, uncaught errors, requests outside 127.0.0.1 (aborted)."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    #: Uncaught errors matching these (message, script URL part) pairs are known
    #: bugs of the Jupyter front end itself, not of attnwidget: recorded, not failed.
    tolerated: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert not self.page_errors, f"uncaught page errors: {self.page_errors}"
        assert not self.console_errors, f"console errors: {self.console_errors}"
        assert not self.outside, f"requests outside 127.0.0.1: {sorted(set(self.outside))}"


def watch_page(context: Any, page: Any, block: bool = True) -> Watch:
    """Watch ``page``: record every request of ``context`` that is not for 127.0.0.1,
    and abort it too when ``block`` (routing every request changes their timing:
    Notebook 7 then sometimes never connects its kernel)."""
    watch = Watch()

    def local(url: str) -> bool:
        return urlsplit(url).hostname == "127.0.0.1" or urlsplit(url).scheme in {"data", "blob"}

    def route(route: Any) -> None:
        if local(route.request.url):
            route.continue_()
        else:
            watch.outside.append(route.request.url)
            route.abort()

    if block:
        context.route("**/*", route)
    else:
        context.on("request", lambda r: None if local(r.url) else watch.outside.append(r.url))
    page.on(
        "console",
        lambda m: (
            watch.console_errors.append(f"{m.text} ({m.location})") if m.type == "error" else None
        ),
    )

    def on_page_error(error: Any) -> None:
        stack = getattr(error, "stack", "") or ""
        frames = [line for line in stack.splitlines() if line.strip().startswith("at ")]
        first = frames[0] if frames else ""
        known = any(m in str(error) and where in first for m, where in watch.tolerated)
        (watch.ignored if known else watch.page_errors).append(f"{error}\n{stack[:600]}")

    page.on("pageerror", on_page_error)
    return watch


def displayed_views(notebook: Path) -> int:
    """How many attnwidget views the notebook displays: code cells whose last statement
    is ``SomethingView(...)`` or a name the cell assigned from such a call."""

    def is_view_call(node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func
        name = name.id if isinstance(name, ast.Name) else name
        return isinstance(name, str) and name.endswith("View")

    count = 0
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        body = ast.parse("".join(cell["source"])).body
        if not body or not isinstance(body[-1], ast.Expr):
            continue
        last = body[-1].value
        views = {
            target.id
            for statement in body
            if isinstance(statement, ast.Assign) and is_view_call(statement.value)
            for target in statement.targets
            if isinstance(target, ast.Name)
        }
        count += is_view_call(last) or (isinstance(last, ast.Name) and last.id in views)
    return count


#: Wait (page.wait_for_function, arg: the number of code cells) until every code
#: cell ran or one failed: each ran cell gets a number, a failing one an error output.
CELLS_RAN_JS = """n => {
  const errors = document.querySelectorAll(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]');
  if ([...errors].some(e => /Traceback|Error:/.test(e.textContent))) return true;
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
  return prompts.length === n && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""


def assert_views_drawn(page: Any, expected: int) -> None:
    """Every view the notebook displays was drawn by the widget manager: one output
    each (other widgets, e.g. tqdm's bars, are not counted), none loading or failed."""
    errors = page.locator(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
    ).all_text_contents()
    failed = [e for e in errors if "Traceback" in e or "Error:" in e]
    assert not failed, f"a cell failed:\n{failed[0][-2000:]}"
    drawn = page.locator(".jp-OutputArea-output:has(.attnw-frame)")
    try:
        page.wait_for_function(
            """n => document.querySelectorAll('.jp-OutputArea-output .attnw-frame').length
                      >= n && !document.querySelector('.attnw-frame [data-state=loading]')""",
            arg=expected,
            timeout=20000,
        )
    except Exception:
        shown = page.evaluate(
            """() => [...document.querySelectorAll('.jp-OutputArea-output')].map(o =>
                 `${o.querySelector('.attnw-frame') ? 'VIEW' : '-'}: `
                 + o.textContent.slice(0, 100))"""
        )
        raise AssertionError(
            f"expected {expected} drawn attnwidget views; the outputs are:\n" + "\n".join(shown)
        ) from None
    assert drawn.count() == expected
    for i in range(expected):
        frame = drawn.nth(i).locator(".attnw-frame")
        assert frame.count() == 1
        # A view starts on its first paint (js/src/core/first_paint.ts): one the
        # notebook keeps off screen (JupyterLab's content-visibility) draws when
        # scrolled to, as a user would.
        frame.scroll_into_view_if_needed()
        frame.locator(".attnw-view > .attnw").wait_for(timeout=20000)
        assert frame.locator(".attnw-view > .attnw").count() == 1  # the view's own root
        frame.locator("[data-state=loading]").wait_for(state="detached", timeout=20000)
    assert page.locator(".attnw-error, .attnw-frame [data-state=error]").count() == 0


#: In the page: the lowest WCAG contrast ratio between the text colour and the
#: background behind it (every translucent background up to the first opaque
#: one, composited; white below all) over the first 8 elements matching
#: ``selector``; and, given a canvas selector instead (prefix "canvas:"), the
#: contrast of the colour of the most opaque pixel in the top ``labels`` CSS px
#: of the first such canvas (where the model view draws its head labels), taken
#: as opaque (the text's colour, not its antialiased coverage), with the
#: background behind the canvas. The text (or pixel) colour is faded by the CSS
#: opacity of the element and of its ancestors below that opaque background (a
#: dimmed toolbar, a canvas faded under a selection), as the page shows it.
CONTRAST_JS = """([selector, labels]) => {
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) =>
    [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  // CSS opacity of el and its ancestors up to (not including) the first one
  // with an opaque background: what the text is composited with over it.
  const fade = (el) => {
    let alpha = 1;
    for (let e = el; e; e = e.parentElement) {
      const style = getComputedStyle(e);
      const c = parse(style.backgroundColor);
      if (c && c[3] >= 1) break;
      alpha *= Number(style.opacity);
    }
    return alpha;
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  if (selector.startsWith('canvas:')) {
    const canvas = document.querySelector(selector.slice(7));
    if (!canvas) return null;
    const scale = canvas.height / canvas.getBoundingClientRect().height;
    const rows = Math.max(1, Math.round(labels * scale));
    const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, rows).data;
    let best = 3;
    for (let i = 7; i < d.length; i += 4) if (d[i] > d[best]) best = i;
    if (d[best] === 0) return null;
    const bg = background(canvas);
    // Antialiased 11 px text has few fully covered pixels; getImageData's
    // colours are not premultiplied, so any text pixel holds the fill colour.
    const pixel = [d[best - 3], d[best - 2], d[best - 1], fade(canvas)];
    return ratio(over(pixel, bg), bg);
  }
  const els = [...document.querySelectorAll(selector)].slice(0, 8);
  if (!els.length) return null;
  return Math.min(...els.map((el) => {
    const bg = background(el);
    const fg = parse(getComputedStyle(el).color);
    return fg ? ratio(over([fg[0], fg[1], fg[2], fg[3] * fade(el)], bg), bg) : 0;
  }));
}"""
