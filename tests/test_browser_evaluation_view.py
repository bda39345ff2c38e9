"""EvaluationView in a real headless Chromium (pytest-ipywidgets + Playwright): a
click on a cell sets the Python trait and lists the cell's examples, Python's
selection is highlighted, an example click sets ``selected_example``, and
names holding HTML stay text."""

from __future__ import annotations

import pytest
from browser_events import settle_injected
from evaluation_fixtures import synthetic_result
from IPython.display import display
from polling import wait_until

from attnwidget.views import EvaluationView
from attnwidget.views.core.format import format_number

pytestmark = pytest.mark.browser

XSS = ["<img src=x onerror=window.__xss=1>", "</script><script>window.__xss=2</script>"]


def test_cells_and_examples_round_trip(page_watch, solara_test, page_session) -> None:
    result = synthetic_result(
        ["raw", "rollout"],
        [("comprehensiveness_aopc", True), ("sufficiency_aopc", False)],
        [f"ex{i}" for i in range(6)],
        nan_at=(4, 1, 0),
    )
    view = EvaluationView(result)
    display(view)

    cells = page_session.locator(".attnw-evaluation .attnw-eval-cell")
    cells.first.wait_for()
    assert cells.count() == 4
    mean = result.summary.loc[("rollout", "comprehensiveness_aopc"), "mean"]
    cell = page_session.locator('.attnw-eval-cell[data-row="1"][data-col="0"]')
    assert cell.locator(".attnw-eval-mean").text_content() == format_number(mean)
    assert page_session.locator(".attnw-eval-point").count() == 4  # one dot per cell

    # Click in the page -> Python's trait; the examples are listed worst first.
    cell.click()
    wait_until(lambda: view.selected == ["rollout", "comprehensiveness_aopc"])
    rows = page_session.locator(".attnw-eval-example")
    rows.first.wait_for()
    expected = result.examples_for("rollout", "comprehensiveness_aopc")
    assert rows.locator(".attnw-eval-id").all_text_contents() == list(expected["id"])
    assert rows.locator(".attnw-eval-id").last.text_content() == "ex4"  # NaN last
    assert page_session.locator(".attnw-eval-cell.attnw-selected").count() == 1

    rows.nth(1).click()
    wait_until(lambda: view.selected_example == expected["id"][1])
    page_session.locator(".attnw-eval-example.attnw-selected").wait_for()

    # Python sets the cell -> the page highlights it (table and chart) and relists.
    view.selected = ["raw", "sufficiency_aopc"]
    page_session.locator('.attnw-eval-cell.attnw-selected[data-row="0"][data-col="1"]').wait_for()
    page_session.locator('.attnw-eval-point.attnw-selected[data-row="0"][data-col="1"]').wait_for()
    worst = result.examples_for("raw", "sufficiency_aopc")["id"][0]
    wait_until(lambda: rows.first.locator(".attnw-eval-id").text_content() == worst)

    # A dot in the chart selects its cell; clicking the selected cell clears it.
    page_session.locator('.attnw-eval-point[data-row="1"][data-col="1"] .attnw-eval-dot').click()
    wait_until(lambda: view.selected == ["rollout", "sufficiency_aopc"])
    page_session.locator('.attnw-eval-cell[data-row="1"][data-col="1"]').click()
    wait_until(lambda: view.selected == [])
    rows.first.wait_for(state="detached")

    assert page_watch.requests, "the request listener saw nothing"
    page_watch.assert_clean()


def test_names_with_html_stay_text(page_watch, solara_test, page_session) -> None:
    result = synthetic_result([XSS[0], "ok"], [(XSS[1], True)], [XSS[1], XSS[0], "plain"])
    view = EvaluationView(result)
    display(view)
    method = page_session.locator(".attnw-evaluation tbody th.attnw-method").first
    method.wait_for()
    assert method.text_content() == XSS[0]
    assert page_session.locator(".attnw-eval-metric").text_content() == f"{XSS[1]} ↑"
    page_session.locator('.attnw-eval-cell[data-row="0"][data-col="0"]').click()
    wait_until(lambda: view.selected == [XSS[0], XSS[1]])
    ids = page_session.locator(".attnw-eval-example .attnw-eval-id")
    ids.first.wait_for()
    assert set(ids.all_text_contents()) == {XSS[1], XSS[0], "plain"}
    page_session.locator(".attnw-eval-example").first.click()
    wait_until(lambda: view.selected_example in (XSS[0], XSS[1], "plain"))
    settle_injected(page_session, page_watch)  # an injected handler would have fired by now
    assert page_session.evaluate("window.__xss") is None
    assert page_session.locator(".attnw-evaluation img, .attnw-evaluation script").count() == 0
    page_watch.assert_clean()
