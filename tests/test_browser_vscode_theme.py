"""The views in a SIMULATED VS Code notebook theme: headless Chromium, not VS Code.

VS Code cannot run here (offline, no display), so these tests imitate the
page it renders notebook output in, from what VS Code and its Jupyter
extension do, and check what a VS Code user needs: readable text and canvas
labels in the dark theme, and canvases redrawn when the theme changes. They do
not prove the views work in VS Code itself.

What is simulated:

- The webview (VS Code's webview/browser/pre/index.html): the theme's colours
  as ``--vscode-*`` custom properties in the ``style`` attribute of ``<html>``,
  the theme kind as a ``<body>`` class (``vscode-dark`` / ``vscode-light``)
  and ``data-vscode-theme-kind``, and its default styles: body text in
  ``--vscode-editor-foreground`` on a transparent body, over the notebook
  editor's background (the editor background in Dark+ and Light+). A theme
  switch is done as VS Code does it, in one task: the body class first, then
  the ``--vscode-*`` properties replaced.
- Three hosts of widget output inside it (``HOSTS``): ``webview``, the
  variables alone; ``panel``, the Jupyter extension's output container with
  the white background its renderer gave widgets before its theme bridge;
  ``bridge``, that container transparent and mapping the ``--jp-*`` variables
  the views read to ``--vscode-*`` ones, as vscode-jupyter's
  renderer/jupyterlabThemeBridge.css does (only the variables read here).
- Colours: VS Code's Default Dark+ and Default Light+ values (``DARK_PLUS``,
  ``LIGHT_PLUS``).

The page is each view's exported page (``to_html``; real tiny data: the
shipped demo encoder) with the host written into its text before it is
opened offline (tests/offline_browser.py): the theme properties on
``<html>``, the class on ``<body>``, the host's styles in a ``<style>`` after
the page's own light page style, which they replace. The page's CSP
(``style-src 'unsafe-inline'``, scripts only by hash) allows all of that;
run-time switches go through Playwright's ``page.evaluate``, which the CSP
does not govern (like ``add_style_tag``, it works on these pages).

Checked per view and host, in Dark+ as loaded, after switching to Light+ at
run time and after switching back to Dark+:

- a WCAG contrast of at least 4.5 between the text colour (faded by any CSS
  opacity on the way) and the background behind it, for tokens, control
  labels, selects, head buttons, legends, captions, notes and status lines,
  and for the toolbar's download buttons with the pointer over the view;
- canvas labels (ModelView's head numbers, FlowView's layer numbers) drawn in
  a colour with that contrast on the background: light on Dark+ and dark on
  Light+, so the canvas was redrawn on each switch (js/src/core/host_theme.ts);
- in Dark+, a toolbar error message (a download the host blocks) reads at
  4.5 too; the page requested nothing from outside and logged no other error.
"""

from __future__ import annotations

import functools
import html
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jupyter_ui import CONTRAST_JS

from attnwidget import demo, explain
from attnwidget.results.explanation import Explanation
from attnwidget.views import FlowView, HeadView, ModelView, SaliencyView

pytestmark = pytest.mark.browser

#: WCAG 2 AA for normal-size text.
AA = 4.5

#: VS Code's Default Dark+ colours (without the "--vscode-" prefix).
DARK_PLUS = {
    "editor-background": "#1e1e1e",
    "editor-foreground": "#d4d4d4",
    "foreground": "#cccccc",
    "descriptionForeground": "#ccccccb3",
    "errorForeground": "#f48771",
    "focusBorder": "#007fd4",
    "textLink-foreground": "#3794ff",
    "input-background": "#3c3c3c",
    "input-foreground": "#cccccc",
    "panel-border": "#80808059",
    "notebook-cellEditorBackground": "#252526",  # = sideBar.background
    "font-family": "system-ui, Ubuntu, 'Droid Sans', sans-serif",
    "font-size": "13px",
    "editor-font-family": "'Droid Sans Mono', monospace",
}

#: VS Code's Default Light+ colours.
LIGHT_PLUS = {
    **DARK_PLUS,
    "editor-background": "#ffffff",
    "editor-foreground": "#000000",
    "foreground": "#616161",
    "descriptionForeground": "#717171",
    "errorForeground": "#a1260d",
    "focusBorder": "#0090f1",
    "textLink-foreground": "#006ab1",
    "input-background": "#ffffff",
    "input-foreground": "#616161",
    "notebook-cellEditorBackground": "#f3f3f3",
}

THEMES = {"vscode-dark": DARK_PLUS, "vscode-light": LIGHT_PLUS}

#: The webview's default styles, in place of the exported page's own
#: (light) page style: text in the editor's colour on a transparent body,
#: over the notebook editor's background.
WEBVIEW_CSS = """
:root { color-scheme: normal; background: var(--vscode-editor-background); }
body { background: transparent; color: var(--vscode-editor-foreground);
       font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); }
"""

#: The Jupyter extension's widget output container (class below).
CONTAINER = "cell-output-ipywidget-background"

#: Styles of each host of widget output, added to the webview's.
HOSTS = {
    "webview": "",
    "panel": f".{CONTAINER} {{ background: white !important; }}",
    "bridge": f"""
.{CONTAINER} {{
  background: transparent !important;
  color: var(--vscode-editor-foreground);
  --jp-ui-font-color1: var(--vscode-editor-foreground);
  --jp-ui-font-color2: var(--vscode-editor-foreground);
  --jp-brand-color1: var(--vscode-textLink-foreground, var(--vscode-focusBorder));
  --jp-border-color2: var(--vscode-panel-border);
  --jp-code-font-family: var(--vscode-editor-font-family);
}}
.vscode-light .{CONTAINER} {{ --jp-layout-color1: var(--vscode-notebook-cellEditorBackground); }}
.vscode-dark .{CONTAINER} {{ --jp-layout-color1: var(--vscode-input-background); }}
""",
}

#: In the page, as VS Code applies a theme: the body class, then the properties.
APPLY_THEME_JS = """([kind, colours]) => {
  const body = document.body;
  body.classList.remove('vscode-light', 'vscode-dark', 'vscode-high-contrast');
  body.classList.add(kind);
  body.dataset.vscodeThemeKind = kind;
  const style = document.documentElement.style;
  for (let i = style.length - 1; i >= 0; i--) {
    if (style[i].startsWith('--vscode-')) style.removeProperty(style[i]);
  }
  for (const [name, value] of Object.entries(colours)) style.setProperty('--vscode-' + name, value);
}"""


def properties(colours: dict[str, str]) -> str:
    return "; ".join(f"--vscode-{name}: {value}" for name, value in colours.items())


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"the exported page no longer has exactly one {old!r}"
    return text.replace(old, new)


def vscode_page(page: str, kind: str, host: str) -> str:
    """The exported ``page`` as it would look inside VS Code's webview, in theme ``kind``."""
    style = html.escape(properties(THEMES[kind]), quote=True)
    page = replace_once(page, '<html lang="en">', f'<html lang="en" style="{style}">')
    page = replace_once(page, "<body>", f'<body class="{kind}" data-vscode-theme-kind="{kind}">')
    page = replace_once(page, "</head>", f"<style>{WEBVIEW_CSS}{HOSTS[host]}</style>\n</head>")
    if host != "webview":
        # The view's element (state block and <noscript>) inside the container.
        block = re.compile(r'<div class="attnw-standalone".*?</noscript>\n</div>', re.S)
        assert len(block.findall(page)) == 1, "the exported page's view element changed"
        page = block.sub(lambda m: f'<div class="{CONTAINER}">{m.group(0)}</div>', page)
    return page


@functools.cache
def explanation() -> Explanation:
    model, tokenizer = demo.load("sva-encoder")
    text = demo.sentences(1, seed=0)[0].text
    return explain(model, tokenizer, text, methods=["raw", "rollout", "input_x_gradient"])


#: Per view: how to make it, when it is drawn, its text (what -> selector) and
#: its canvas labels (selector, height in CSS px of the band they are drawn in).
VIEWS: dict[str, dict[str, Any]] = {
    "saliency": {
        "make": SaliencyView,
        "ready": ".attnw-saliency .attnw-tok",
        "text": {
            "tokens": ".attnw-saliency .attnw-tok",
            "method names": ".attnw-saliency .attnw-method",
            "legends": ".attnw-saliency .attnw-legend",
            "caption": ".attnw-saliency .attnw-caption",
            "status line": ".attnw-saliency .attnw-status",
        },
        "canvas": None,
    },
    "head": {
        "make": HeadView,
        "ready": ".attnw-headview[data-state=ready]",
        "text": {
            "tokens": ".attnw-headview .attnw-token:not(.attnw-masked)",
            "control labels": ".attnw-headview .attnw-control > span",
            "selects": ".attnw-headview .attnw-control select",
            "head buttons": ".attnw-headview .attnw-headbox",
            "status line": ".attnw-headview .attnw-status",
        },
        "canvas": None,
    },
    "model": {
        "make": ModelView,
        "ready": ".attnw-modelview[data-state=ready]",
        "text": {
            "control labels": ".attnw-modelview .attnw-control > span",
            "selects": ".attnw-modelview .attnw-control select",
            "status line": ".attnw-modelview .attnw-status",
        },
        # Head numbers in the top 18 px (model_view.ts labelHeight).
        "canvas": (".attnw-modelview canvas.attnw-thumbs", 18),
    },
    "flow": {
        # rollout is computed in the page: the query's paths show, and the
        # graph below them is faded.
        "make": functools.partial(FlowView, selected_method="rollout"),
        "ready": ".attnw-flow[data-state=ready][data-source=page]",
        "text": {
            "tokens": ".attnw-flow .attnw-flow-tok",
            "control labels": ".attnw-flow .attnw-control > span",
            "selects": ".attnw-flow .attnw-control select",
            "legend": ".attnw-flow .attnw-flow-legend",
            "caption": ".attnw-flow .attnw-caption",
            "note": ".attnw-flow .attnw-flow-note",
            "status line": ".attnw-flow .attnw-status",
        },
        # Layer numbers in the 18 px header (flow_paths.ts), centred at 9 px;
        # 14 px keeps the band clear of the first row's paths.
        "canvas": (".attnw-flow canvas.attnw-flow-canvas-paths", 14),
    },
}


def contrast(page: Any, selector: str, labels: int = 0) -> float | None:
    return page.evaluate(CONTRAST_JS, [selector, labels])


def settled(read: Callable[[], float | None], timeout: float = 5.0) -> float | None:
    """``read()`` once it reaches AA (a canvas redraws in a later frame), or its
    last value when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if (value is not None and value >= AA) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def assert_readable(page: Any, view: dict[str, Any], theme: str) -> None:
    for what, selector in view["text"].items():
        ratio = contrast(page, selector)
        assert ratio is not None, f"{theme}: no {what} found ({selector})"
        assert ratio >= AA, f"{theme}: {what} have contrast {ratio:.2f} (< {AA})"

    # The toolbar is dimmed until the pointer is over the view: hover it.
    page.locator(".attnw-toolbar").hover(position={"x": 4, "y": 4})
    page.wait_for_function(
        "() => getComputedStyle(document.querySelector('.attnw-toolbar')).opacity === '1'"
    )
    ratio = contrast(page, ".attnw-frame .attnw-tool")
    assert ratio is not None, f"{theme}: no toolbar buttons found"
    assert ratio >= AA, f"{theme}: toolbar buttons have contrast {ratio:.2f} (< {AA})"
    page.mouse.move(0, 0)

    if view["canvas"]:
        selector, band = view["canvas"]
        ratio = settled(lambda: contrast(page, f"canvas:{selector}", band))
        assert ratio is not None, f"{theme}: no labels drawn in the top {band} px of {selector}"
        assert ratio >= AA, f"{theme}: canvas labels have contrast {ratio:.2f} (< {AA})"


@pytest.mark.parametrize("host", list(HOSTS))
@pytest.mark.parametrize("name", list(VIEWS))
def test_readable_in_vscode_dark_and_light(
    name: str, host: str, tmp_path: Path, open_page: Callable[[Path], Any]
) -> None:
    view = VIEWS[name]
    path = tmp_path / f"{name}-{host}.html"
    path.write_text(vscode_page(view["make"](explanation()).to_html(), "vscode-dark", host))
    watch = open_page(path)
    page = watch.page
    page.locator(view["ready"]).first.wait_for()
    # The host is in place: the page's own white page style gave way to it.
    backdrop = "getComputedStyle(document.documentElement).backgroundColor"
    assert page.evaluate(backdrop) == "rgb(30, 30, 30)"
    if host != "webview":
        assert page.locator(f".{CONTAINER} .attnw-frame").count() == 1

    assert_readable(page, view, "Dark+")
    page.evaluate(APPLY_THEME_JS, ["vscode-light", LIGHT_PLUS])
    assert page.evaluate(backdrop) == "rgb(255, 255, 255)"
    assert_readable(page, view, "Light+ (switched at run time)")
    page.evaluate(APPLY_THEME_JS, ["vscode-dark", DARK_PLUS])
    assert_readable(page, view, "Dark+ (switched back)")
    watch.assert_clean()

    # An export error in the toolbar: the host blocks the download.
    page.evaluate(
        "() => { URL.createObjectURL = () => { throw new Error('downloads are blocked here'); }; }"
    )
    page.locator('.attnw-tool[data-format="svg"]').click()
    message = page.locator(".attnw-toolbar-message")
    message.filter(has_text="SVG export failed").wait_for()
    ratio = contrast(page, ".attnw-toolbar-message")
    assert ratio is not None and ratio >= AA, f"Dark+: the export error has contrast {ratio}"
    assert [e for e in watch.console_errors if "attnwidget export" not in e] == []
    assert not watch.page_errors and not watch.remote_requests()
