#!/usr/bin/env python3
"""Execute a notebook offline and write ONE self-contained HTML page.

    python scripts/run_notebook.py NOTEBOOK OUT.html [--timeout SECONDS] [--kernel NAME]

- The notebook runs with nbclient in a fresh kernel (default ``python3``: the
  Python running this script), in the notebook's folder, with
  ``HF_HUB_OFFLINE=1``/``TRANSFORMERS_OFFLINE=1`` (nothing is downloaded) and
  ``ATTNWIDGET_STATIC=1`` (attnwidget views add a standalone ``text/html``
  rendering to their outputs). This checkout comes first on the kernel's
  ``PYTHONPATH``, so the page shows this checkout's code.
- If a cell raises, the script says which cell and why, writes nothing and
  exits with status 1.
- Every attnwidget view shows its *final* state (as a live notebook would
  after running all cells: a later ``view.selected_token = 3`` shows), drawn
  by the front-end bundle, which the page carries once. Other outputs are
  rendered by nbconvert's lab template, minus everything it would load from a
  CDN (require.js, MathJax, mermaid, the widget manager). Other
  ipywidgets fall back to their text form. LaTeX in Markdown stays as text.
- The page loads nothing from anywhere (a Content-Security-Policy says so to
  the browser too); the script checks the page and fails if any resource URL
  in it points outside the page.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat
from jinja2 import DictLoader
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent


def _load_page_format() -> ModuleType:
    """attnwidget's page format helpers (attnwidget/views/core/standalone.py) of this checkout.

    Loaded from the file, not through the package: the module needs nothing
    but the standard library here, while ``import attnwidget`` would import
    torch and transformers (seconds) in a process that never uses them.
    """
    path = ROOT / "attnwidget" / "views" / "core" / "standalone.py"
    spec = importlib.util.spec_from_file_location("_attnwidget_page_format", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_page = _load_page_format()
BUNDLE_OPEN_TAG: str = _page.BUNDLE_OPEN_TAG
STATE_ATTRIBUTE: str = _page.STATE_ATTRIBUTE
STATIC_ENV: str = _page.STATIC_ENV
state_block: Callable[[dict[str, Any]], str] = _page.state_block

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

#: nbconvert's lab template without any block that loads from a CDN.
TEMPLATE_NAME = "attnwidget-offline.html.j2"
TEMPLATE = """
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}
<meta http-equiv="Content-Security-Policy" content="{{ resources.attnwidget_csp }}">
{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block footer_js -%}
{{ resources.attnwidget_bundle }}
{%- endblock footer_js -%}
"""

#: Load nothing from anywhere; inline scripts and styles (the notebook's own
#: outputs and the bundle) and data:/blob: images only.
CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'unsafe-inline'",
        "style-src 'unsafe-inline'",
        "img-src data: blob:",
        "font-src data:",
        "media-src data: blob:",
        "base-uri 'none'",
        "form-action 'none'",
    ]
)

_STATE_BLOCK = re.compile(
    r'<script type="application/json" ' + STATE_ATTRIBUTE + r">(?P<json>.*?)</script>", re.DOTALL
)
_BUNDLE = re.compile(re.escape(BUNDLE_OPEN_TAG) + r".*?</script>", re.DOTALL)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookFailed(Exception):
    """The notebook could not run to the end; the message says where and why."""


def execute(notebook: Path, *, timeout: int, kernel: str) -> nbformat.NotebookNode:
    """Run every cell in a fresh kernel; the notebook with its outputs and widget state."""
    nb = nbformat.read(notebook, as_version=4)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        STATIC_ENV: "1",
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        ),
    }
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernel,
        store_widget_state=True,
        # The kernel's own log (e.g. ipykernel's notice that its local TCP
        # sockets are unencrypted) is noise here; cell output is unaffected.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        resources={"metadata": {"path": str(notebook.parent.resolve())}},
    )
    try:
        client.execute(env=env)  # the kernel's environment (jupyter_client start_kernel)
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:
        raise NotebookFailed(describe_failure(nb, error)) from None
    except Exception as error:  # e.g. no such kernel, kernel died while starting
        raise NotebookFailed(f"could not run the kernel {kernel!r}: {error}") from None
    return nb


def slowest_cells(nb: nbformat.NotebookNode, count: int = 3) -> list[tuple[int, float]]:
    """(code cell number, seconds) of the slowest cells, from nbclient's timing records."""
    from datetime import datetime

    timings = []
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        record = cell.get("metadata", {}).get("execution", {})
        start, end = record.get("iopub.execute_input"), record.get("shell.execute_reply")
        if start and end:
            seconds = (
                datetime.fromisoformat(end.replace("Z", "+00:00"))
                - datetime.fromisoformat(start.replace("Z", "+00:00"))
            ).total_seconds()
            timings.append((number, seconds))
    return sorted(timings, key=lambda t: -t[1])[:count]


def describe_failure(nb: nbformat.NotebookNode, error: Exception) -> str:
    """Which cell failed and how, with its traceback (no terminal colours)."""
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            first = errors[0]
            trace = _ANSI.sub("", "\n".join(first.get("traceback", [])))
            source = "\n".join("    " + line for line in cell.source.splitlines()[:8])
            return (
                f"code cell {number} of {len(code_cells)} raised {first.get('ename')}: "
                f"{_ANSI.sub('', str(first.get('evalue')))}\n\n  cell source:\n{source}\n\n{trace}"
            )
    kind = type(error).__name__
    return f"{kind}: {_ANSI.sub('', str(error)).strip()}"


def final_states(nb: nbformat.NotebookNode) -> dict[str, dict[str, Any]]:
    """Each widget's state after the last cell (nbclient records it), by model id."""
    saved = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return {model_id: dict(entry) for model_id, entry in saved.items()}


def with_final_state(payload: dict[str, Any], final: dict[str, Any] | None) -> dict[str, Any]:
    """The payload of a view as displayed, updated to the view's state at the end."""
    if not final:
        return payload
    keys = set(payload["state"]) | {b["path"][0] for b in payload["buffers"]}
    state = dict(payload["state"])
    state.update({k: v for k, v in final.get("state", {}).items() if k in keys})
    buffers = {tuple(b["path"]): b["data"] for b in payload["buffers"]}
    for buffer in final.get("buffers", []):
        if buffer["path"][0] in keys and buffer.get("encoding", "base64") == "base64":
            buffers[tuple(buffer["path"])] = buffer["data"]
            # A key that now holds a buffer is no longer a JSON value.
            if len(buffer["path"]) == 1:
                state.pop(buffer["path"][0], None)
    return {
        **payload,
        "state": state,
        "buffers": [{"path": list(path), "data": data} for path, data in buffers.items()],
    }


def make_static(nb: nbformat.NotebookNode) -> tuple[str, int]:
    """Turn widget outputs into static HTML, in place.

    Returns the bundle ``<script>`` (once for the page, "" when no view was
    shown) and how many attnwidget views were found.
    """
    finals = final_states(nb)
    bundle = ""
    views = 0

    def refresh(match: re.Match[str]) -> str:
        payload = json.loads(match.group("json"))
        return state_block(with_final_state(payload, finals.get(payload.get("model_id", ""))))

    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data")
            if not data:
                continue
            html = data.get("text/html")
            if isinstance(html, list):
                html = "".join(html)
            if isinstance(html, str) and STATE_ATTRIBUTE in html:
                views += len(_STATE_BLOCK.findall(html))
                found = _BUNDLE.search(html)
                if found and not bundle:
                    bundle = found.group(0)
                data["text/html"] = _STATE_BLOCK.sub(refresh, _BUNDLE.sub("", html))
            # No widget manager in the page: a widget shows through its
            # text/html (attnwidget views) or its text/plain form.
            data.pop(WIDGET_VIEW, None)
    nb.metadata.pop("widgets", None)
    return bundle, views


#: (tag, attribute) pairs that fetch; <a href> only navigates when clicked.
_FETCHING = frozenset(
    {
        ("script", "src"),
        ("img", "src"),
        ("img", "srcset"),
        ("source", "src"),
        ("source", "srcset"),
        ("iframe", "src"),
        ("embed", "src"),
        ("object", "data"),
        ("video", "src"),
        ("video", "poster"),
        ("audio", "src"),
        ("track", "src"),
        ("link", "href"),
        ("input", "src"),
        ("image", "href"),
        ("use", "href"),
    }
)


class _ResourceURLs(HTMLParser):
    """Every URL in the page that the browser would load by itself."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_style = tag == "style"
        for name, value in attrs:
            if value is None:
                continue
            if (tag, name) in _FETCHING or name in {"xlink:href", "background"}:
                self.urls.extend(u.strip().split(" ")[0] for u in value.split(","))
            elif name == "style":
                self.urls.extend(css_urls(value))

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.urls.extend(css_urls(data))


def css_urls(css: str) -> list[str]:
    """URLs in CSS text: url(...) and @import."""
    found = re.findall(r"url\(\s*['\"]?([^'\")\s]+)", css)
    found += re.findall(r"@import\s+['\"]([^'\"]+)", css)
    return found


def external_resources(page: str) -> list[str]:
    """Resource URLs of the page that point outside it (anything not data:, blob: or #)."""
    parser = _ResourceURLs()
    parser.feed(page)
    parser.close()
    return sorted(
        {u for u in parser.urls if u and not re.match(r"(?i)(data:|blob:|#)", u)},
    )


def convert(nb: nbformat.NotebookNode, bundle: str) -> str:
    """The executed notebook as one HTML page."""
    exporter = HTMLExporter(
        template_name="lab",
        template_file=TEMPLATE_NAME,
        extra_loaders=[DictLoader({TEMPLATE_NAME: TEMPLATE})],
        embed_images=True,  # Markdown images become data: URLs
    )
    page, _ = exporter.from_notebook_node(
        nb, resources={"attnwidget_csp": CSP, "attnwidget_bundle": bundle}
    )
    return page


def run(notebook: Path, out: Path, *, timeout: int, kernel: str) -> int:
    """Execute, convert, check, write; returns the number of attnwidget views."""
    nb = execute(notebook, timeout=timeout, kernel=kernel)
    slow = ", ".join(f"cell {n}: {s:.1f} s" for n, s in slowest_cells(nb))
    print(f"run_notebook: executed {notebook} (slowest code cells: {slow or 'n/a'})")
    bundle, views = make_static(nb)
    page = convert(nb, bundle)
    outside = external_resources(page)
    if outside:
        raise NotebookFailed(
            "the page would load resources from outside itself: " + ", ".join(outside[:10])
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return views


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Execute a notebook offline and write one self-contained HTML page."
    )
    parser.add_argument("notebook", type=Path, help="the .ipynb to execute")
    parser.add_argument("out", type=Path, help="the HTML page to write")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    parser.add_argument("--kernel", default="python3", help="kernel name (default python3)")
    args = parser.parse_args(argv)
    if not args.notebook.is_file():
        parser.error(f"no such notebook: {args.notebook}")

    start = time.monotonic()
    try:
        views = run(args.notebook, args.out, timeout=args.timeout, kernel=args.kernel)
    except NotebookFailed as error:
        print(f"run_notebook: {args.notebook} FAILED: {error}", file=sys.stderr)
        return 1
    size = args.out.stat().st_size / 1024
    print(
        f"run_notebook: wrote {args.out} ({size:.0f} KiB, {views} attnwidget view(s)) "
        f"from {args.notebook} in {time.monotonic() - start:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
