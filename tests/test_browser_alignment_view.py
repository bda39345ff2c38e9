"""AlignmentView in a real headless Chromium (pytest-ipywidgets + Playwright).

Checks: the matrix is drawn with the output tokens as rows and the input
tokens as columns; a click on a cell or a token reaches Python
(``selected_output`` / ``selected_input``); Python's changes redraw the
highlight; hovering lights a row and a column both ways; token names stay
text; nothing is requested from outside the machine and the page logs no error.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from IPython.display import display
from polling import wait_until

from attnwidget.views import AlignmentView

pytestmark = pytest.mark.browser

ROOT = ".attnw-alignmentview"


def translation() -> SimpleNamespace:
    """A reversal of 'abcd' with a (nearly) anti-diagonal alignment."""
    n = 4
    alignment = np.full((n + 1, n), 0.02, dtype=np.float32)
    for t in range(n):
        alignment[t, n - 1 - t] = 0.94
    alignment[n] = 0.25
    return SimpleNamespace(
        input_tokens=list("abcd"),
        output_tokens=[*"dcba", "<img src=x onerror=window.__xss=1>"],
        alignment=alignment,
        kind="additive",
    )


def wait_data(page: Any, **expected: str) -> None:
    selector = ROOT + "".join(f'[data-{k}="{v}"]' for k, v in expected.items())
    page.locator(selector).wait_for(timeout=15000)


def lit(page: Any, cls: str) -> list[tuple[int, int]]:
    cells = page.locator(f"{ROOT} td.attnw-align-cell.{cls}")
    spots = cells.evaluate_all("cs => cs.map(c => [Number(c.dataset.row), Number(c.dataset.col)])")
    return sorted((row, col) for row, col in spots)


def test_clicks_and_python_changes_round_trip(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    view = AlignmentView(translation())
    display(view)
    page = page_session
    wait_data(page, state="ready", output="-1", input="-1")
    assert page.locator(f"{ROOT} td.attnw-align-cell").count() == 5 * 4
    outputs = page.locator(f"{ROOT} button.attnw-align-output").all_text_contents()
    inputs = page.locator(f"{ROOT} button.attnw-align-input").all_text_contents()
    assert inputs == list("abcd")
    assert outputs[:4] == list("dcba")
    assert outputs[4] == "<img src=x onerror=window.__xss=1>"  # text, not markup
    assert page.evaluate("() => window.__xss ?? null") is None
    assert lit(page, "attnw-align-lit") == []

    # A click on a cell -> both synced traits in Python.
    page.locator(f'{ROOT} td.attnw-align-cell[data-row="1"][data-col="2"]').click()
    wait_until(lambda: (view.selected_output, view.selected_input) == (1, 2))
    wait_data(page, output="1", input="2")
    assert lit(page, "attnw-align-selected") == [(1, 2)]
    expected = sorted({(1, j) for j in range(4)} | {(i, 2) for i in range(5)})
    assert lit(page, "attnw-align-lit") == expected

    # A click on an input token selects its column only.
    page.locator(f'{ROOT} button.attnw-align-input[data-col="0"]').click()
    wait_until(lambda: (view.selected_output, view.selected_input) == (-1, 0))
    wait_data(page, output="-1", input="0")
    assert lit(page, "attnw-align-lit") == [(i, 0) for i in range(5)]

    # Python sets the selection -> the page redraws the highlight.
    view.selected_output = 3
    view.selected_input = 0
    wait_data(page, output="3", input="0")
    assert lit(page, "attnw-align-selected") == [(3, 0)]
    lit_output = page.locator(f"{ROOT} button.attnw-align-output.attnw-align-lit")
    assert lit_output.all_text_contents() == ["a"]
    view.selected_output = -1
    view.selected_input = -1
    wait_data(page, output="-1", input="-1")
    assert lit(page, "attnw-align-lit") == []

    # Hover an output token: its row lights; hover an input token: its column;
    # hover a cell: both, with its tokens.
    page.locator(f'{ROOT} button.attnw-align-output[data-row="2"]').hover()
    wait_until(lambda: lit(page, "attnw-align-hover") == [(2, j) for j in range(4)])
    page.locator(f'{ROOT} button.attnw-align-input[data-col="3"]').hover()
    wait_until(lambda: lit(page, "attnw-align-hover") == [(i, 3) for i in range(5)])
    page.locator(f'{ROOT} td.attnw-align-cell[data-row="0"][data-col="3"]').hover()
    wait_until(
        lambda: (
            page.locator(f"{ROOT} .attnw-align-token.attnw-align-hover").all_text_contents()
            == ["d", "d"]
        )
    )
    status = page.locator(f"{ROOT} .attnw-align-status").text_content()
    assert "0.94" in status
    page_watch.assert_clean()


def test_bad_selection_and_input_are_refused() -> None:
    import traitlets

    from attnwidget.errors import InputError

    view = AlignmentView(translation())
    with pytest.raises(traitlets.TraitError, match="out of range"):
        view.selected_output = 5
    with pytest.raises(InputError, match="translate"):
        AlignmentView(object())
    bad = translation()
    bad.alignment = bad.alignment[:2]
    with pytest.raises(InputError, match="expected"):
        AlignmentView(bad)
