"""FlowView and Explorer in a real headless Chromium (pytest-ipywidgets + Playwright).

Each test displays a widget in solara's test page (served from 127.0.0.1)
and checks two-way sync (a click changes the Python traits; a Python change
redraws the page: ``data-*`` test hooks), that "flow" round-trips through the
kernel's request/response with a progress bar while it works, hover
tooltips, that token text stays text, that missing layers are requested, that
the stack picker of encoder–decoder models (T5) switches to the decoder's
diagram both ways, and that the page logs no errors and requests nothing from
outside.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import Any

import numpy as np
import pytest
from browser_events import settle_injected
from IPython.display import display
from polling import wait_until
from tiny_models import build

from attnwidget import demo, explain
from attnwidget.methods import attention_flow
from attnwidget.methods.graph import add_residual
from attnwidget.results.explanation import Explanation
from attnwidget.views import Explorer, FlowView
from attnwidget.views.core.format import format_number
from attnwidget.views.flow import flow_view as flow_module

pytestmark = pytest.mark.browser

XSS_TOKENS = ["<img src=x onerror=window.__xss=1>", "</script><script>window.__xss=2</script>"]
ROOT = ".attnw-flow"


@functools.cache
def demo_model() -> tuple[Any, Any]:
    return demo.load("sva-encoder")


@functools.cache
def demo_explanation() -> Explanation:
    model, tokenizer = demo_model()
    return explain(model, tokenizer, demo.sentences(1, seed=0)[0].text)


def node_position(page: Any, layer: int, token: int, dx: float = 0.0) -> dict[str, float]:
    """A node's position on the canvas (from the canvas's data-geometry test hook)."""
    g = json.loads(
        page.locator(f"{ROOT} canvas.attnw-flow-canvas-paths").get_attribute("data-geometry")
    )
    x = g["pad"] + layer * g["colGap"] + dx
    return {"x": x, "y": g["header"] + (token + 0.5) * g["rowHeight"]}


def score(label: Any) -> float:
    return float(label.get_attribute("data-score"))


def state(page: Any, name: str) -> str:
    return page.locator(ROOT).get_attribute(f"data-{name}") or ""


def test_click_python_sync_hover_and_flow_round_trip(
    page_watch, solara_test, page_session, monkeypatch
) -> None:
    exp = demo_explanation()
    layers, n = exp.num_layers, len(exp.tokens)
    # A one-layer state budget: the page must request the other layers.
    monkeypatch.setattr(flow_module, "PRELOAD_BYTES", n * n * 4)
    view = FlowView(exp)
    assert view.fused_layers == 1
    display(view)
    page = page_session
    page.locator(f"{ROOT}[data-state=ready][data-selected='{layers}:0']").wait_for()
    assert int(state(page, "paths")) > 0 and state(page, "source") == "page"
    # Every layer arrived: the background shows the same edges Python counts.
    adjusted = add_residual(view._fused.astype(np.float64))
    assert abs(int(state(page, "edges")) - int((adjusted >= 0.02).sum())) <= 2
    left = page.locator(f"{ROOT} .attnw-flow-left .attnw-flow-tok")
    right = page.locator(f"{ROOT} .attnw-flow-right .attnw-flow-tok")
    assert left.all_text_contents() == exp.tokens == right.all_text_contents()
    # One stack (no decoder): no stack picker.
    assert page.locator(f"{ROOT} select.attnw-flow-stack").is_hidden()
    assert state(page, "stack") == "encoder"
    # Input tokens carry the rollout scores of the query (the explanation's own).
    assert score(left.nth(2)) == pytest.approx(exp.scores["rollout"][2], rel=1e-5)

    # Click a top-layer token -> Python.
    right.nth(3).click()
    wait_until(lambda: (view.selected_layer, view.selected_token) == (layers, 3))
    page.locator(f"{ROOT}[data-selected='{layers}:3']").wait_for()
    # Click an input token -> the reverse: top nodes coloured.
    left.nth(2).click()
    wait_until(lambda: (view.selected_layer, view.selected_token) == (0, 2))
    page.locator(f"{ROOT}[data-selected='0:2']").wait_for()
    assert right.nth(0).get_attribute("data-score") is not None
    assert left.nth(0).get_attribute("data-score") is None
    # Click a middle node on the canvas.
    page.locator(f"{ROOT} canvas.attnw-flow-canvas-paths").click(position=node_position(page, 2, 5))
    wait_until(lambda: (view.selected_layer, view.selected_token) == (2, 5))

    # Python -> page: method and selection.
    view.selected_method = "raw"
    view.select(layers, 1)
    page.locator(
        f"{ROOT}[data-method=raw][data-selected='{layers}:1'][data-state=ready]"
    ).wait_for()
    raw_paths = int(state(page, "paths"))
    assert raw_paths > 0 and page.locator(f"{ROOT} select.attnw-flow-method").input_value() == "raw"
    view.threshold = 0.5  # fewer lines
    page.wait_for_function(f"() => +document.querySelector('{ROOT}').dataset.paths < {raw_paths}")
    # Shown as every number a person reads (views/core/format.py): "0.5", not "0.500".
    assert page.locator(f"{ROOT} .attnw-flow-threshold-value").text_content() == format_number(
        view.threshold
    )
    view.threshold = 0.02

    # Flow: asked from the kernel, answered with binary buffers, drawn.
    view.selected_method = "flow"
    page.locator(f"{ROOT}[data-method=flow][data-source=kernel][data-state=ready]").wait_for()
    expected = attention_flow(exp.attentions, rows=[1])[0]
    # Kernel numbers arrive as float32 and are shown as numpy prints them.
    assert left.nth(4).get_attribute("data-score") == str(np.float32(expected[4]))
    assert int(state(page, "paths")) > 0
    # Method from the page's picker -> Python; grad_attention also comes from the kernel.
    page.locator(f"{ROOT} select.attnw-flow-method").select_option("grad_attention")
    wait_until(lambda: view.selected_method == "grad_attention")
    page.locator(
        f"{ROOT}[data-method=grad_attention][data-source=kernel][data-state=ready]"
    ).wait_for()

    # Hover: a node, then a line: near node (1, 6) on the right of it the
    # nearest line is the residual lane (2, 6) → (1, 6).
    canvas = page.locator(f"{ROOT} canvas.attnw-flow-canvas-paths")
    canvas.hover(position=node_position(page, 1, 1))
    tip = page.locator(f"{ROOT} .attnw-flow-tip")
    tip.wait_for(state="visible")
    assert tip.text_content().startswith("Node layer 1 #1")
    canvas.hover(position=node_position(page, 1, 6, dx=10))
    page.wait_for_function(
        f"() => document.querySelector('{ROOT} .attnw-flow-tip').textContent.startsWith('Layer 2:')"
    )
    text = tip.text_content()
    assert '#6 "' in text and "(node layers 2 → 1): Â = " in text
    page_watch.assert_clean()


def test_stack_picker_switches_to_the_decoder_both_ways(
    page_watch, solara_test, page_session
) -> None:
    model, tokenizer = build("t5")
    exp = explain(
        model, tokenizer, "the keys to the cabinet are on the table", decoder_text="the cats"
    )
    decoder, q = exp.decoder_tokens, exp.query_index
    layers = exp.decoder_attentions.shape[0]
    assert decoder != exp.tokens[: len(decoder)]  # the diagrams' labels tell the stacks apart
    view = FlowView(exp)
    display(view)
    page = page_session
    page.locator(f"{ROOT}[data-state=ready][data-stack=encoder]").wait_for()
    left = page.locator(f"{ROOT} .attnw-flow-left .attnw-flow-tok")
    picker = page.locator(f"{ROOT} select.attnw-flow-stack")
    assert left.all_text_contents() == exp.tokens and picker.is_visible()

    # Page -> Python: the picker sets the trait; the kernel sends the decoder's data.
    picker.select_option("decoder")
    wait_until(lambda: view.stack == "decoder")
    page.locator(
        f"{ROOT}[data-stack=decoder][data-state=ready][data-selected='{layers}:{q}']"
    ).wait_for()
    assert left.all_text_contents() == decoder
    # The page's rollout of the decoder query is Python's (float32 on the page).
    expected = view.paths("rollout").scores_down
    for i in range(len(decoder)):
        assert score(left.nth(i)) == pytest.approx(expected[i], rel=1e-5, abs=1e-7)
    assert page.locator(f"{ROOT} .attnw-caption").text_content() == view.caption

    # Python -> page: back to the encoder, then the decoder again with a kernel method.
    view.stack = "encoder"
    page.locator(f"{ROOT}[data-stack=encoder][data-state=ready]").wait_for()
    assert left.all_text_contents() == exp.tokens and picker.input_value() == "encoder"
    view.stack = "decoder"
    view.selected_method = "flow"
    page.locator(
        f"{ROOT}[data-stack=decoder][data-method=flow][data-source=kernel][data-state=ready]"
    ).wait_for()
    assert left.all_text_contents() == decoder and picker.input_value() == "decoder"
    flow = view.paths("flow", layers, q).scores_down
    assert left.nth(1).get_attribute("data-score") == str(np.float32(flow[1]))
    # The decoder offers only what it has data for.
    options = page.locator(f"{ROOT} select.attnw-flow-method option").all_text_contents()
    assert options == ["raw", "rollout", "flow"]
    page_watch.assert_clean()


def test_progress_shows_and_the_page_stays_usable(
    page_watch, solara_test, page_session, monkeypatch
) -> None:
    tokens = [f"w{i}" for i in range(12)]
    rng = np.random.default_rng(0)
    attentions = rng.random((3, 2, 12, 12)) ** 4
    attentions = (attentions / attentions.sum(-1, keepdims=True)).astype(np.float32)
    view = FlowView(Explanation.from_attentions(attentions, tokens))
    release = threading.Event()
    compute = flow_module.compute_paths

    def slow(*args: Any, progress: Any = None, **kwargs: Any) -> Any:
        for done in range(3):  # a slow computation that reports progress
            if progress is not None:
                progress(done, 3)
            release.wait(0.5)
        return compute(*args, progress=progress, **kwargs)

    monkeypatch.setattr(flow_module, "compute_paths", slow)
    monkeypatch.setattr(flow_module, "PROGRESS_INTERVAL", 0.0)
    display(view)
    page = page_session
    page.locator(f"{ROOT}[data-state=ready]").wait_for()
    view.selected_method = "flow"
    page.locator(f"{ROOT}[data-state=computing]").wait_for()
    bar = page.locator(f"{ROOT} .attnw-flow-progress")
    bar.wait_for(state="visible")
    # While the kernel works the page still answers: hovering shows a tooltip.
    page.locator(f"{ROOT} canvas.attnw-flow-canvas-paths").hover(position=node_position(page, 2, 3))
    page.locator(f"{ROOT} .attnw-flow-tip").wait_for(state="visible")
    release.set()
    page.locator(f"{ROOT}[data-state=ready][data-source=kernel]").wait_for()
    assert bar.is_hidden()
    page_watch.assert_clean()


def test_token_text_is_never_markup(page_watch, solara_test, page_session) -> None:
    tokens = ["[CLS]", *XSS_TOKENS, "ok", "[SEP]"]
    rng = np.random.default_rng(1)
    attentions = rng.random((2, 2, 5, 5)).astype(np.float32)
    attentions /= attentions.sum(-1, keepdims=True)
    view = FlowView(Explanation.from_attentions(attentions, tokens))
    display(view)
    page = page_session
    page.locator(f"{ROOT}[data-state=ready]").wait_for()
    left = page.locator(f"{ROOT} .attnw-flow-left .attnw-flow-tok")
    assert left.all_text_contents() == tokens
    settle_injected(page, page_watch)  # an injected handler would have fired by now
    assert page.evaluate("window.__xss") is None
    assert page.locator(f"{ROOT} img, {ROOT} script").count() == 0
    page.locator(f"{ROOT} canvas.attnw-flow-canvas-paths").hover(position=node_position(page, 1, 1))
    tip = page.locator(f"{ROOT} .attnw-flow-tip")
    tip.wait_for(state="visible")
    assert XSS_TOKENS[0] in tip.text_content()
    left.nth(2).click()
    wait_until(lambda: (view.selected_layer, view.selected_token) == (0, 2))
    assert page.evaluate("window.__xss") is None
    page_watch.assert_clean()


def test_explorer_typing_reexplains(page_watch, solara_test, page_session) -> None:
    model, tokenizer = demo_model()
    explorer = Explorer(model, tokenizer, "the keys to the cabinet")
    display(explorer)
    page = page_session
    page.locator(".attnw-saliency .attnw-tok").first.wait_for()
    # Views start on first paint, so the Flow tab is shown before its view is read.
    flow_tab = [
        i for i, child in enumerate(explorer.tabs.children) if child is explorer.views["flow"]
    ]
    explorer.tabs.selected_index = flow_tab[0]
    page.locator(f"{ROOT}[data-state=ready]").wait_for()
    box = page.locator(".attnw-explorer-text input")
    box.fill("the key near the old doors")
    box.press("Enter")
    wait_until(lambda: explorer.explanation is not None and "doors" in explorer.explanation.tokens)
    flow = explorer.views["flow"]
    assert flow.tokens == explorer.explanation.tokens
    page.wait_for_function(
        f"() => Array.from(document.querySelectorAll('{ROOT} .attnw-flow-left .attnw-flow-tok'))"
        ".some(e => e.textContent === 'doors')"
    )
    # Bad input is reported in the Explorer; the views keep the last explanation.
    box.fill("")
    box.press("Enter")
    wait_until(lambda: explorer.error != "")
    page.locator(".attnw-explorer-status", has_text="Error").wait_for()
    assert "doors" in explorer.views["flow"].tokens
    page_watch.assert_clean()


def test_saved_page_draws_page_methods_without_a_kernel(page, tmp_path) -> None:
    exp = demo_explanation()
    view = FlowView(exp, selected_method="flow")
    path = tmp_path / "flow.html"
    view.to_html(path)
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    # Flow needs the kernel: the saved page says so instead of waiting.
    page.locator(f"{ROOT}[data-state=offline]").wait_for()
    assert "saved page" in page.locator(f"{ROOT} .attnw-status").text_content()
    page.locator(f"{ROOT} select.attnw-flow-method").select_option("rollout")
    page.locator(f"{ROOT}[data-state=ready][data-source=page]").wait_for()
    page.locator(f"{ROOT} .attnw-flow-right .attnw-flow-tok").nth(2).click()
    page.locator(f"{ROOT}[data-selected='{exp.num_layers}:2']").wait_for()
    assert int(state(page, "paths")) > 0
    assert requests == [path.as_uri()] and not errors  # nothing fetched, nothing failed


def test_saved_decoder_page_draws_the_decoder_and_keeps_its_stack(page, tmp_path) -> None:
    model, tokenizer = build("bart")
    exp = explain(model, tokenizer, "the keys to the cabinet", decoder_text="the cats")
    path = tmp_path / "flow-decoder.html"
    FlowView(exp, stack="decoder").to_html(path)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    page.locator(f"{ROOT}[data-stack=decoder][data-state=ready][data-source=page]").wait_for()
    left = page.locator(f"{ROOT} .attnw-flow-left .attnw-flow-tok")
    assert left.all_text_contents() == exp.decoder_tokens
    # The page holds the decoder's attention only: no switching without a kernel.
    picker = page.locator(f"{ROOT} select.attnw-flow-stack")
    assert picker.is_visible() and picker.is_disabled()
    assert not errors
