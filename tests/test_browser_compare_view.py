"""CompareView in a real headless Chromium, on real compare() results.

Live tests display the view in solara's test page (pytest-ipywidgets, served
from 127.0.0.1): clicks in the page reach the Python traits (a token, an
agreement cell, the metric picker) and Python's changes redraw the page. The
saved page is opened from a file with the network cut off and still draws
and answers clicks. (Hostile tokens: tests/test_browser_xss.py.)
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from IPython.display import display
from polling import wait_until

import attnwidget
from attnwidget import demo
from attnwidget.views import CompareView
from attnwidget.views.core.format import format_number

pytestmark = pytest.mark.browser

TEXT = "the keys to the old cabinet"
ROOT = ".attnw-compare[data-state=ready]"


@functools.cache
def comparison() -> Any:
    model, tokenizer = demo.load("sva-encoder")
    return attnwidget.compare(model, tokenizer, TEXT, rationale=[(1, 2)])


def cell(page: Any, a: int, b: int) -> Any:
    return page.locator(f'.attnw-compare-cell[data-a="{a}"][data-b="{b}"]')


def test_clicks_reach_python_and_python_redraws(page_watch, solara_test, page_session) -> None:
    c = comparison()
    methods, n = list(c.methods), len(c.tokens)
    view = CompareView(c)
    display(view)
    page = page_session
    page.locator(ROOT).wait_for()
    # Every method a row over the same tokens, then the disagreement row.
    assert page.locator(".attnw-compare .attnw-tok").count() == (len(methods) + 1) * n
    for method in methods:
        row = page.locator(f'.attnw-compare .attnw-tok[data-method="{method}"]')
        assert row.all_text_contents() == c.tokens
    spread = page.locator(".attnw-compare .attnw-compare-spread")
    assert spread.count() == n
    disputed = [c.tokens.index(token) for token, _ in c.most_disputed(3)]
    marked = page.locator(".attnw-compare-spread.attnw-compare-disputed")
    assert sorted(int(x.get_attribute("data-index")) for x in marked.all()) == sorted(disputed)
    # The figures: a panel per metric, each naming the way it is better.
    panels = page.locator(".attnw-compare-panel")
    figures = [*c.faithfulness.columns, *c.plausibility.columns]
    assert panels.count() == len(figures)
    for metric in figures:
        better = "higher is better" if c.directions[metric] == "higher" else "lower is better"
        caption = page.locator(f'.attnw-compare-panel[data-metric="{metric}"] figcaption')
        assert better in caption.text_content()

    # A token click selects it in every row.
    page.locator('.attnw-tok[data-method="rollout"][data-index="2"]').click()
    wait_until(lambda: view.selected_token == 2)
    assert page.locator(".attnw-compare .attnw-tok.attnw-selected").count() == len(methods) + 1

    # An agreement cell: the pair and its scatter, every compared token labelled.
    cell(page, 0, 1).click()
    wait_until(lambda: view.selected_pair == methods[:2])
    labels = page.locator(".attnw-compare-scatter .attnw-compare-label")
    labels.first.wait_for()
    compared = [t for t, keep in zip(c.tokens, c.compared, strict=True) if keep]
    assert sorted(labels.all_text_contents()) == sorted(compared)
    page.locator('.attnw-compare-point.attnw-selected[data-index="2"]').wait_for()
    # A point of the scatter selects its token everywhere.
    page.locator('.attnw-compare-point[data-index="5"] circle').click()
    wait_until(lambda: view.selected_token == 5)
    page.locator('.attnw-compare .attnw-tok.attnw-selected[data-index="5"]').first.wait_for()

    # The metric picked in the page.
    page.locator(".attnw-compare-metric-picker").select_option("top3")
    wait_until(lambda: view.agreement_metric == "top3")
    want = format_number(c.agreement["top3"].loc[methods[0], methods[1]])
    wait_until(lambda: cell(page, 0, 1).text_content() == want)

    # Python's changes redraw the page.
    view.selected_token = 3
    selected = page.locator('.attnw-compare .attnw-tok.attnw-selected[data-index="3"]')
    wait_until(lambda: selected.count() == len(methods) + 1)
    page.locator('.attnw-compare-point.attnw-selected[data-index="3"]').wait_for()
    view.agreement_metric = "kendall"
    want = format_number(c.agreement["kendall"].loc[methods[0], methods[1]])
    wait_until(lambda: cell(page, 0, 1).text_content() == want)
    assert page.locator(".attnw-compare-metric-picker").input_value() == "kendall"
    view.selected_pair = [methods[2], methods[3]]
    pair = page.locator(f'.attnw-compare-pair[data-a="{methods[2]}"][data-b="{methods[3]}"]')
    pair.wait_for()
    assert "kendall" in pair.locator("figcaption").text_content()
    page.locator(".attnw-compare-cell.attnw-selected[data-a='2'][data-b='3']").wait_for()
    view.selected_pair = []
    pair.wait_for(state="detached")
    page.locator(".attnw-compare-hint").wait_for()
    # A click on the selected cell clears the pair; on the selected token, the token.
    cell(page, 1, 3).click()
    wait_until(lambda: view.selected_pair == [methods[1], methods[3]])
    cell(page, 1, 3).click()
    wait_until(lambda: view.selected_pair == [])
    page.locator('.attnw-tok[data-method="raw"][data-index="3"]').click()
    wait_until(lambda: view.selected_token == -1)
    page_watch.assert_clean()


def test_the_saved_page_draws_offline_and_answers_clicks(open_page, tmp_path: Path) -> None:
    c = comparison()
    view = CompareView(c, selected_pair=list(c.methods[:2]), agreement_metric="top1")
    path = tmp_path / "compare.html"
    view.to_html(path)
    watch = open_page(path)
    page = watch.page
    page.locator(ROOT).wait_for()
    assert page.locator(".attnw-compare-metric-picker").input_value() == "top1"
    page.locator(".attnw-compare-scatter .attnw-compare-label").first.wait_for()
    page.locator('.attnw-tok[data-method="raw"][data-index="2"]').click()
    page.locator('.attnw-compare-point.attnw-selected[data-index="2"]').wait_for()
    page.locator(".attnw-compare-metric-picker").select_option("spearman")
    want = format_number(c.agreement["spearman"].iloc[2, 0])
    wait_until(lambda: cell(page, 2, 0).text_content() == want)
    cell(page, 2, 0).click()
    page.locator(
        f'.attnw-compare-pair[data-a="{c.methods[2]}"][data-b="{c.methods[0]}"]'
    ).wait_for()
    box = page.locator(".attnw-compare-scatter").bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 150
    watch.assert_clean()
