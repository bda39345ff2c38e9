"""Draw the README's screenshots: each view on the shipped demo models, as a PNG.

Every view is saved with ``view.to_html`` (the page carries its own bundle and
data) and opened in headless Chromium with the network cut off; the view's
root element is captured once it says it is ready. Run it after a change that
shows on the page, and commit the PNGs::

    python scripts/screenshots.py                    # all views → docs/images/
    python scripts/screenshots.py --only head flow --out /tmp/shots --theme dark

Chromium: ``$ATTNWIDGET_CHROMIUM``, else ``/usr/bin/chromium``, else the one
Playwright installed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import attnwidget
from attnwidget import demo

ROOT = Path(__file__).resolve().parent.parent
#: The sentence every screenshot explains: an attractor ("cabinet") between
#: the subject ("keys") and the verb the models must agree with it.
SENTENCE = "the keys to the old cabinet near the doors"
METHODS = ["rollout", "flow", "grad_attention", "chefer2021", "integrated_gradients"]


def _encoder_explanation() -> Any:
    model, tokenizer = demo.load("sva-encoder")
    return attnwidget.explain(model, tokenizer, SENTENCE, methods=METHODS)


def _causal_explanation() -> Any:
    model, tokenizer = demo.load("sva-causal")
    return attnwidget.explain(model, tokenizer, SENTENCE, methods=["rollout", "grad_attention"])


def _saliency() -> Any:
    return attnwidget.SaliencyView(_encoder_explanation())


def _head() -> Any:
    return attnwidget.HeadView(_causal_explanation(), layer=1)


def _model() -> Any:
    return attnwidget.ModelView(_encoder_explanation(), layer=3, head=1)


def _flow() -> Any:
    exp = _encoder_explanation()
    return attnwidget.FlowView(
        exp, method="rollout", selected_layer=exp.num_layers, selected_token=0
    )


def _image() -> Any:
    model, processor = demo.load("shapes-vit")
    record = demo.images(1, seed=3, split="test")[0]
    exp = attnwidget.explain(
        model,
        processor,
        record.image,
        methods=["rollout", "chefer2021", "grad_attention", "integrated_gradients"],
        method_options={"chefer2021": {"start_layer": 1}},
    )
    return attnwidget.ImageView(exp, selected_method="chefer2021", opacity=0.6)


#: name → (how to build the view, the CSS selector of its root once drawn).
VIEWS: dict[str, tuple[Callable[[], Any], str]] = {
    "saliency": (_saliency, ".attnw-saliency"),
    "head": (_head, ".attnw-headview[data-state=ready]"),
    "model": (_model, ".attnw-modelview[data-state=ready]"),
    "flow": (_flow, ".attnw-flow[data-state=ready]"),
    "image": (_image, ".attnw-imageview[data-state=ready]"),
}


def _chromium() -> str | None:
    path = os.environ.get("ATTNWIDGET_CHROMIUM") or "/usr/bin/chromium"
    return path if os.path.isfile(path) else shutil.which("chromium")


def capture(names: list[str], out: Path, *, theme: str = "light", width: int = 960) -> list[Path]:
    """Write ``<out>/<name>_view.png`` for each view name; returns the paths written."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        options: dict[str, Any] = {"headless": True}
        if _chromium():
            options["executable_path"] = _chromium()
        browser = playwright.chromium.launch(**options)
        context = browser.new_context(
            viewport={"width": width, "height": 900}, color_scheme=theme, device_scale_factor=1
        )
        # Offline, as the saved pages promise: anything but the file itself is refused.
        context.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(("file:", "data:", "blob:"))
                else route.abort()
            ),
        )
        for name in names:
            build, selector = VIEWS[name]
            page_path = Path(tmp) / f"{name}.html"
            build().to_html(page_path, title=f"attnwidget {name} view")
            page = context.new_page()
            page.goto(page_path.as_uri())
            root = page.locator(selector)
            root.wait_for(timeout=30_000)
            page.wait_for_timeout(300)  # lines and canvases draw in the next frames
            target = out / f"{name}_view.png"
            root.screenshot(path=str(target))
            page.close()
            written.append(target)
            print(f"wrote {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(VIEWS), default=list(VIEWS))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--theme", choices=["light", "dark"], default="light")
    parser.add_argument("--width", type=int, default=960, help="page width in CSS pixels")
    args = parser.parse_args(argv)
    capture(args.only, args.out, theme=args.theme, width=args.width)
    return 0


if __name__ == "__main__":
    sys.exit(main())
