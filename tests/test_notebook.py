"""The headless main job: scripts/run_notebook.py on the quickstart notebook.

The script must execute the notebook offline, fail loudly when a cell fails,
and write one HTML page that loads nothing from outside; in Chromium with the
network cut off, the page must draw every attnwidget view with no error.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "run_notebook.py"
QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    out: Path


def run_notebook(notebook: Path, out: Path, timeout: float = 300) -> Run:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ATTNWIDGET_STATIC", None)  # the script must set it itself
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(notebook), str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - start, out)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("quickstart") / "sub" / "quickstart.html"
    return run_notebook(QUICKSTART, out)


def ok(run: Run) -> str:
    assert run.returncode == 0, f"run_notebook failed ({run.returncode}):\n{run.stderr[-3000:]}"
    return run.out.read_text(encoding="utf-8")


URL_ATTRIBUTES = frozenset(
    {"src", "href", "srcset", "action", "data", "poster", "xlink:href", "background"}
)


class _URLs(HTMLParser):
    """Every URL-valued attribute, CSS url()/@import, and script import in a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._raw: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._raw = tag if tag in {"style", "script"} else None
        for name, value in attrs:
            if value is None:
                continue
            if name in URL_ATTRIBUTES:
                self.urls.extend(part.strip().split(" ")[0] for part in value.split(","))
            if name == "style":
                self.urls.extend(re.findall(r"url\(\s*['\"]?([^'\")\s]+)", value))

    def handle_endtag(self, tag: str) -> None:
        self._raw = None

    def handle_data(self, data: str) -> None:
        if self._raw == "style":
            self.urls.extend(re.findall(r"url\(\s*['\"]?([^'\")\s]+)", data))
            self.urls.extend(re.findall(r"@import\s+(?:url\()?['\"]?([^'\")\s;]+)", data))
        elif self._raw == "script":
            self.urls.extend(re.findall(r"""\bimport\s*\(?\s*['"]([^'"]+)""", data))
            self.urls.extend(re.findall(r"""\bfrom\s*['"]([^'"]+)""", data))


def outside_urls(page: str) -> list[str]:
    parser = _URLs()
    parser.feed(page)
    parser.close()
    return [
        u
        for u in parser.urls
        if re.match(r"(?i)([a-z][a-z0-9+.-]*:|//)", u) and not re.match(r"(?i)(data|blob):", u)
    ]


def test_quickstart_runs_and_links_nothing_outside(quickstart: Run) -> None:
    page = ok(quickstart)
    assert "run_notebook: wrote" in quickstart.stdout
    assert outside_urls(page) == []
    # The CDN loaders nbconvert would add are gone; the bundle is there once.
    for marker in ("require.js", "mathjax", "unpkg", "cdnjs", "widget-view+json"):
        assert marker not in page.lower()
    assert page.count("data-attnwidget-bundle") == 1
    # Parser sanity: the same check finds a CDN script when there is one.
    assert outside_urls('<script src="https://cdn.example/x.js"></script>') == [
        "https://cdn.example/x.js"
    ]


@pytest.mark.browser
def test_quickstart_page_draws_every_view_offline(quickstart: Run, open_page: Any) -> None:
    page_text = ok(quickstart)
    blocks = len(re.findall(r"<script[^>]*data-attnwidget-state", page_text))
    expected = page_text.count('data-attnwidget-view="saliency"')
    assert expected == 2  # the quickstart shows two SaliencyViews

    watch = open_page(quickstart.out)
    page = watch.page
    views = page.locator(".attnw-saliency")
    views.nth(expected - 1).locator(".attnw-tok").first.wait_for()
    assert views.count() == expected
    # Every embedded view (of any kind) is drawn, none with an error.
    assert page.locator(".attnw-standalone-view").count() == blocks
    assert page.locator(".attnw-error").count() == 0
    for i in range(expected):
        assert views.nth(i).locator(".attnw-tok").count() > 0
    # The notebook sets view.selected_token after showing the view: the page
    # shows that final state, as the live notebook would.
    assert views.first.get_attribute("data-selected") not in (None, "-1")
    # Clicks work in the page.
    views.last.locator('.attnw-tok[data-index="1"]').first.click()
    assert views.last.get_attribute("data-selected") == "1"
    assert page.locator(".attnw-toolbar").count() == blocks
    watch.assert_clean()


def test_a_failing_cell_fails_the_run(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("raise ValueError('boom from the second cell')"),
        nbformat.v4.new_code_cell("print('never')"),
    ]
    notebook = tmp_path / "fails.ipynb"
    nbformat.write(nb, notebook)
    run = run_notebook(notebook, tmp_path / "fails.html")
    assert run.returncode == 1
    assert "code cell 2 of 3 raised ValueError: boom from the second cell" in run.stderr
    assert "\x1b[" not in run.stderr  # readable: no terminal colour codes
    assert not run.out.exists()


def load_script() -> ModuleType:
    """scripts/run_notebook.py as a module, to test its steps without a kernel."""
    spec = importlib.util.spec_from_file_location("run_notebook_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.browser
def test_views_show_final_state_and_other_widgets_their_text(
    tmp_path: Path, open_page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np
    from ipywidgets.widgets.widget import _remove_buffers

    from attnwidget import Explanation, SaliencyView

    script = load_script()
    tokens = ["a", "</script><script>window.__xss=2</script>", "c"]
    exp = Explanation(
        tokens=tokens,
        attentions=np.full((1, 1, 3, 3), 1 / 3, np.float32),
        scores={"raw": np.array([0.1, 0.5, 0.2], np.float32)},
    )
    view = SaliencyView(exp)
    monkeypatch.setenv("ATTNWIDGET_STATIC", "1")
    shown, _ = view._repr_mimebundle_()  # what the kernel displays
    # Later cells change the view; nbclient records the last state it saw.
    view.set_explanation(
        Explanation(
            tokens=tokens,
            attentions=exp.attentions,
            scores={"raw": np.array([0.25, 0.75, 0.5], np.float32)},
        )
    )
    view.selected_token = 2
    state, paths, buffers = _remove_buffers(view.get_state())
    recorded = {
        "model_name": state["_model_name"],
        "model_module": state["_model_module"],
        "model_module_version": state["_model_module_version"],
        "state": state,
        "buffers": [
            {"path": p, "data": base64.b64encode(bytes(b)).decode(), "encoding": "base64"}
            for p, b in zip(paths, buffers, strict=True)
        ],
    }
    widget_view = "application/vnd.jupyter.widget-view+json"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title\n\nInline $x^2$ stays text."),
        nbformat.v4.new_code_cell("view", outputs=[nbformat.v4.new_output("display_data", shown)]),
        nbformat.v4.new_code_cell(
            "slider",
            outputs=[
                nbformat.v4.new_output(
                    "display_data",
                    {"text/plain": "IntSlider(value=4)", widget_view: {"model_id": "f00"}},
                )
            ],
        ),
    ]
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {
            "version_major": 2,
            "version_minor": 0,
            "state": {view.model_id: recorded},
        }
    }
    bundle, count = script.make_static(nb)
    assert count == 1
    assert bundle.startswith('<script type="module" async data-attnwidget-bundle>')
    page_text = script.convert(nb, bundle)
    assert outside_urls(page_text) == [] and script.external_resources(page_text) == []
    assert "IntSlider(value=4)" in page_text  # a plain widget falls back to its text
    assert widget_view not in page_text and "require" not in page_text
    path = tmp_path / "page.html"
    path.write_text(page_text, encoding="utf-8")

    watch = open_page(path)
    page = watch.page
    cells = page.locator('.attnw-saliency .attnw-tok[data-method="raw"]')
    cells.first.wait_for()
    assert cells.all_text_contents() == tokens
    assert page.locator(".attnw-saliency").get_attribute("data-selected") == "2"
    assert cells.nth(1).get_attribute("title").endswith("score 0.75")  # the later scores
    assert page.evaluate("window.__xss") is None
    assert page.get_by_text("Inline $x^2$ stays text.").count() == 1
    watch.assert_clean()
