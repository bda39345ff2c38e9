"""Every view on one page lays out exactly as it does alone (scoped CSS).

Each view's stylesheet applies only inside its own root element (a root
class per view, every selector prefixed by it), so drawing one view cannot
change another: a HeadView's ``.attnw-lines`` once set ``width: max-content``
on every element of that class, and a SaliencyView drawn beside it stopped
wrapping (one 2,839 px line, most tokens out of sight).

The test saves one page per view and one page with every view, the
HeadView first and the SaliencyView (a long sentence) below it, all at the
same width, in a real headless Chromium offline. For every view it compares
the box of each element inside its root, relative to the root, between the
two pages, and checks that the long sentence wraps into several lines there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from compare_fixtures import fixed_comparison
from evaluation_fixtures import synthetic_result
from image_fixtures import made_explanation
from offline_browser import open_offline
from test_browser_alignment_view import translation
from tiny_models import build

import attnwidget
from attnwidget.results.explanation import Explanation
from attnwidget.views import (
    AdjudicationView,
    AlignmentView,
    Annotator,
    AttentionCalculator,
    AttentionMatrixView,
    CompareView,
    EvaluationView,
    FlowView,
    GenerationView,
    HeadView,
    ImageView,
    ModelView,
    NeuronView,
    SaliencyView,
)
from attnwidget.views.core.standalone import bundle_script, document, exported, widget_bundle

pytestmark = pytest.mark.browser

#: The width every page lays its views out in (a notebook cell's).
WIDTH = 900

#: A sentence long enough to wrap at WIDTH in a SaliencyView.
LONG = (
    "the keys to the old wooden cabinet in the hall are on the small table near the door "
    "and nobody has seen them since last week when the guests arrived for dinner"
).split()

#: Per view root (in page order): every element's box relative to the root,
#: rounded to a tenth of a pixel (or "hidden"), and the root's own size.
ROOTS = "[...document.querySelectorAll('.attnw-frame .attnw-view > .attnw')]"
BOXES_JS = f"""() => {ROOTS}.map(root => {{
  const r = root.getBoundingClientRect();
  const round = v => Math.round(v * 10) / 10;
  const drawn = [...root.querySelectorAll('*')]
    .filter(e => !['STYLE', 'OPTION'].includes(e.tagName));
  const boxes = drawn.map(e => {{
    const b = e.getBoundingClientRect();
    const name = [e.tagName, String(e.className.baseVal ?? e.className)];
    // Not drawn (display: none): no box to compare, only that it is hidden.
    if (b.width === 0 && b.height === 0) return [...name, 'hidden'];
    return [...name, round(b.left - r.left), round(b.top - r.top), round(b.width), round(b.height)];
  }});
  return {{ cls: String(root.className), size: [round(r.width), round(r.height)], boxes }};
}})"""

#: The distinct line tops of the SaliencyView's token columns.
SALIENCY_LINES_JS = """() => {
  const lines = document.querySelector('.attnw-saliency .attnw-lines');
  const tops = [...lines.querySelectorAll(':scope > .attnw-col')]
    .map(c => Math.round(c.getBoundingClientRect().top));
  return { lines: new Set(tops).size, width: lines.getBoundingClientRect().width,
           scroll: [lines.scrollWidth, lines.clientWidth] };
}"""

#: True once every view has drawn: those that say so in data-state are ready.
DRAWN_JS = f"""count => {{
  const roots = {ROOTS};
  return roots.length === count && roots.every(r => (r.dataset.state ?? 'ready') === 'ready');
}}"""


def _attention(n: int, seed: int = 0) -> Explanation:
    rng = np.random.default_rng(seed)
    weights = rng.random((2, 3, n, n), dtype=np.float32) ** 4
    weights /= weights.sum(-1, keepdims=True)
    tokens = ["[CLS]", *LONG[: n - 2], "[SEP]"]
    return Explanation.from_attentions(weights, tokens, methods=["raw", "rollout"])


def _two_annotators(path: Path, texts: list[str]) -> Any:
    """A store where two annotators marked the same texts differently."""
    from attnwidget.annotations import Store

    store = Store(path)
    store.add_items([{"id": str(k), "text": text} for k, text in enumerate(texts)])
    for k in range(len(texts)):
        store.save(str(k), annotator="ana", spans=[(0, 2)])
        store.save(str(k), annotator="ben", spans=[(1, 3)])
    return store


def every_view(tmp_path: Path) -> list[Any]:
    """One of each view, HeadView first and the long SaliencyView right below it."""
    short, long = _attention(12), _attention(len(LONG) + 2, seed=1)
    model, tokenizer = build("gpt2-lm")
    generation = attnwidget.explain_generation(
        model.eval(), tokenizer, "the keys to the", generated=" cabinet are"
    )
    bert, bert_tokenizer = build("bert-cls")
    result = synthetic_result(
        ["raw", "rollout"], [("comprehensiveness_aopc", True)], [f"ex{i}" for i in range(4)]
    )
    texts = ["the keys to the cabinet are here", "a truly great film"]
    return [
        HeadView(short),
        SaliencyView(long),
        ModelView(short, layer=0, head=1),
        NeuronView(bert, bert_tokenizer, "the keys to the cabinet", selected_token=1),
        FlowView(short, selected_method="rollout"),
        AttentionMatrixView(short),
        ImageView(made_explanation(3, 4), selected_patch=5),
        GenerationView(generation),
        AlignmentView(translation()),
        Annotator(texts, store=tmp_path / "a.sqlite", annotator="ana", labels=["pos", "neg"]),
        AdjudicationView(_two_annotators(tmp_path / "adj.sqlite", texts)),
        EvaluationView(result),
        CompareView(fixed_comparison(), selected_pair=["raw", "rollout"]),
        AttentionCalculator(),
    ]


def save(path: Path, views: list[Any], bundle: str) -> Path:
    blocks, replies = [], []
    for view in views:
        block, answers = exported(view)
        blocks.append(block)
        replies.extend(answers)
    css = f"body {{ margin: 8px; width: {WIDTH}px; }}"
    path.write_text(document(path.stem, blocks, bundle, replies, css=css), encoding="utf-8")
    return path


def layout(browser: Any, path: Path, count: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    offline = open_offline(browser, path)
    try:
        page = offline.page
        page.set_viewport_size({"width": WIDTH + 40, "height": 900})
        page.wait_for_function(DRAWN_JS, arg=count, timeout=20000)
        page.evaluate("() => document.fonts.ready")
        page.wait_for_function("() => new Promise(r => requestAnimationFrame(() => r(true)))")
        boxes = page.evaluate(BOXES_JS)
        lines = page.evaluate(SALIENCY_LINES_JS) if page.locator(".attnw-saliency").count() else {}
        offline.assert_clean()
        return boxes, lines
    finally:
        offline.page.context.close()


def test_every_view_on_one_page_lays_out_as_alone(tmp_path: Path, browser: Any) -> None:
    views = every_view(tmp_path)
    bundle = bundle_script(widget_bundle(views[0]))
    together, lines = layout(browser, save(tmp_path / "all.html", views, bundle), len(views))
    assert len(together) == len(views)  # one root per view
    for k, view in enumerate(views):
        alone, alone_lines = layout(browser, save(tmp_path / f"v{k}.html", [view], bundle), 1)
        name = type(view).__name__
        assert alone[0]["cls"] == together[k]["cls"], name
        moved = [
            (a, b) for a, b in zip(alone[0]["boxes"], together[k]["boxes"], strict=True) if a != b
        ]
        assert not moved, f"{name}: {len(moved)} elements laid out differently, e.g. {moved[:12]}"
        assert together[k]["size"] == alone[0]["size"], f"{name}: root size changed"
        if isinstance(view, SaliencyView):
            assert lines == alone_lines, "the SaliencyView wraps differently below a HeadView"
    # The long sentence wraps (below the HeadView) and needs no horizontal scroll.
    assert lines["lines"] >= 2 and lines["width"] <= WIDTH, lines
    assert lines["scroll"][0] <= lines["scroll"][1] + 1, lines
