"""Smoke test in a real JupyterLab: the quickstart notebook, run from the UI.

Starts ``jupyter lab`` on 127.0.0.1 (a free port, a random token, a temporary
copy of ``notebooks/``), opens ``quickstart.ipynb`` in headless Chromium,
restarts the kernel and runs every cell from the toolbar, then checks that

- every cell ran (each code cell got an execution count, none shows an error),
- every attnwidget view the notebook displays was drawn by the widget
  manager (one output with one ``.attnw-frame`` each, none loading, no
  ``.attnw-error``),
- a click on a SaliencyView token reaches the kernel: a cell added through
  the UI prints ``view.selected_token``,
- the page logged no error and requested nothing outside 127.0.0.1.

The server (and its kernel) is shut down in a finalizer.
"""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "quickstart.ipynb"


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api(lab: Lab, path: str, method: str = "GET") -> Any:
    request = urllib.request.Request(
        f"{lab.url}{path}", method=method, headers={"Authorization": f"token {lab.token}"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        body = response.read()
    return json.loads(body) if body else None


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (the notebook extra)")
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    port, token = free_port(), secrets.token_hex(16)
    # Settings, workspaces and runtime files of this server only: no state from
    # (or left to) the user's own JupyterLab. The debugger extension is off: it
    # is not under test, and a kernel restart cancels its start-up requests,
    # which it reports as a console error.
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/debugger-extension": True}})
    )
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    env.pop("ATTNWIDGET_STATIC", None)  # the live widgets are under test, not static HTML
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI runs as root; JupyterLab refuses otherwise
    log = base / "server.log"
    with log.open("wb") as out:
        # Its own session, so the finalizer can stop the server and its kernels together.
        server = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    instance = Lab(f"http://127.0.0.1:{port}", token, root, log)
    try:
        deadline = time.monotonic() + 40
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"jupyter lab exited ({server.returncode}):\n{log.read_text()}")
            try:
                api(instance, "/api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter lab did not start:\n{log.read_text()}") from None
                time.sleep(0.2)
        yield instance
    finally:
        stop(instance, server)


def stop(lab: Lab, server: subprocess.Popen[bytes]) -> None:
    """Shut the server down (it stops its kernels); kill its session if it will not go."""
    if server.poll() is None:
        try:
            api(lab, "/api/shutdown", method="POST")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    # Kernels live in the server's session: end anything left of it.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        time.sleep(1)
    if server.poll() is None:
        server.wait(timeout=5)


@dataclass
class Watch:
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)


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


def test_quickstart_runs_in_jupyterlab(lab: Lab, browser: Any) -> None:
    started = time.monotonic()
    notebook = lab.root / NOTEBOOK
    expected = displayed_views(notebook)
    assert expected >= 1, "the quickstart should display at least one attnwidget view"
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    code_cells = sum(c["cell_type"] == "code" for c in cells)
    # The round trip reads the first SaliencyView back through its variable.
    assert any(
        re.search(r"^view = attnwidget\.SaliencyView\(", "".join(c["source"]), re.M) for c in cells
    ), "the quickstart no longer names its first SaliencyView `view`: update this test"

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    watch = Watch()

    def route(route: Any) -> None:
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            watch.outside.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on(
        "console",
        lambda m: (
            watch.console_errors.append(f"{m.text} ({m.location})") if m.type == "error" else None
        ),
    )
    page.on("pageerror", lambda error: watch.page_errors.append(str(error)))
    try:
        page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}")
        page.locator(".jp-Notebook").first.wait_for(timeout=30000)
        # The notebook's kernel must be up: "restart and run all" with no kernel
        # yet opens a "Select Kernel" dialog instead.
        page.wait_for_function(
            """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
                 .map(e => e.textContent)
                 .some(t => /\\|\\s*Idle/.test(t) && !/No Kernel/.test(t))""",
            timeout=30000,
        )
        # The toolbar's "restart the kernel and run all cells" (its command id
        # differs between JupyterLab 4 releases).
        page.locator(
            '.jp-NotebookPanel-toolbar [data-command="notebook:restart-run-all"], '
            '.jp-NotebookPanel-toolbar [data-command="runmenu:restart-and-run-all"]'
        ).first.click()
        dialog = page.locator(".jp-Dialog")
        assert "Restart" in (dialog.text_content() or ""), dialog.text_content()
        dialog.locator(".jp-mod-accept").click()

        # Every code cell gets a number; a failing cell stops the run with an error output.
        page.wait_for_function(
            """n => {
              const errors = document.querySelectorAll(
                '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]');
              if ([...errors].some(e => /Traceback|Error:/.test(e.textContent))) return true;
              const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
              return prompts.length === n && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
            }""",
            arg=code_cells,
            timeout=90000,
        )
        errors = page.locator(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
        ).all_text_contents()
        failed = [e for e in errors if re.search(r"Traceback|Error:", e)]
        assert not failed, f"a cell failed:\n{failed[0][-2000:]}"

        # Every view the notebook displays is drawn by the widget manager: one
        # output each (other widgets, e.g. tqdm's progress bars, are not counted),
        # none still loading or showing an error.
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
            assert frame.locator(".attnw-view > .attnw").count() == 1  # the view's own root
        assert page.locator(".attnw-error, .attnw-frame [data-state=error]").count() == 0
        views = page.locator(".jp-OutputArea-output .attnw-saliency")
        assert views.count() >= 1
        assert views.first.locator(".attnw-tok").count() > 0

        # A click in the page -> the kernel: pick a token other than the selected one.
        first = views.first
        selected = int(first.get_attribute("data-selected") or -1)
        target = 1 if selected != 1 else 2
        first.locator(f'.attnw-tok[data-index="{target}"]').first.click()
        page.wait_for_function(
            "([el, k]) => el.dataset.selected === String(k)",
            arg=[first.element_handle(), target],
        )
        # Read it back in Python through a new cell, added and run from the UI.
        last_cell = page.locator(".jp-Notebook .jp-Cell").last
        last_cell.locator(".jp-InputPrompt").click()  # select it (command mode)
        page.keyboard.press("Escape")
        page.keyboard.press("b")  # insert a cell below
        page.keyboard.press("Enter")  # edit it
        page.keyboard.insert_text('print("kernel sees", view.selected_token)')
        page.keyboard.press("Shift+Enter")
        page.get_by_text(f"kernel sees {target}", exact=True).wait_for(timeout=20000)

        assert not watch.page_errors, f"uncaught page errors: {watch.page_errors}"
        assert not watch.console_errors, f"console errors: {watch.console_errors}"
        assert not watch.outside, f"requests outside 127.0.0.1: {sorted(set(watch.outside))}"
    finally:
        context.close()
    elapsed = time.monotonic() - started
    assert elapsed < 60, f"the JupyterLab smoke test took {elapsed:.0f} s (budget: 60 s)"
