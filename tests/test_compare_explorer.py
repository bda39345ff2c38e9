"""The Explorer's Compare tab in Python: computed only when shown (or asked for),
again for a new input or a new method while shown, its token pinned with the
other views' while it shows the current input, saved with the other tabs."""

from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np
import pytest

import attnwidget
from attnwidget.views import CompareView, Explorer

TEXT = "the keys to the cabinet are here"


@functools.cache
def classifier() -> tuple[Any, Any]:
    from tiny_models import build

    return build("bert-cls")


def _show_compare(explorer: Explorer) -> None:
    explorer.tabs.selected_index = list(explorer.tabs.titles).index("Compare")
    explorer.wait()


def test_the_tab_computes_when_shown_and_again_while_shown() -> None:
    model, tokenizer = classifier()
    explorer = Explorer(model, tokenizer, TEXT)
    assert list(explorer.tabs.titles) == ["Saliency", "Flow", "Heads", "Model", "Compare"]
    explorer.wait()
    assert explorer.compare_view is None and explorer.comparison is None  # nothing yet
    assert "when this tab is shown" in explorer._compare_note.value

    _show_compare(explorer)
    view = explorer.compare_view
    assert isinstance(view, CompareView)
    assert list(explorer.tabs.children)[-1].children == (view,)
    assert view.methods == explorer.views["saliency"].methods
    assert view.tokens == explorer.explanation.tokens
    assert explorer.progress.startswith("Compare: 4 methods in")
    # The numbers are compare()'s on the shown explanation.
    direct = attnwidget.compare(explorer.explanation, tokenizer=tokenizer, model=model)
    for metric, table in direct.agreement.items():
        np.testing.assert_allclose(
            explorer.comparison.agreement[metric].to_numpy(), table.to_numpy(), equal_nan=True
        )
    np.testing.assert_allclose(
        explorer.comparison.faithfulness.to_numpy(), direct.faithfulness.to_numpy(), rtol=1e-5
    )

    explorer.text = "another text for the tab"  # shown: compared again, same view
    explorer.wait()
    assert explorer.compare_view is view and view.tokens == explorer.explanation.tokens
    explorer.compute("integrated_gradients")  # a new method: compared again
    assert "integrated_gradients" in view.methods

    explorer.tabs.selected_index = 0  # hidden: a new input waits for the tab
    explorer.text = "a third text"
    explorer.wait()
    assert view.tokens != explorer.explanation.tokens
    assert "compare" not in explorer._linked_views()  # an old input's view pins nothing
    _show_compare(explorer)
    assert view.tokens == explorer.explanation.tokens


def test_the_compare_tab_pins_with_the_other_views() -> None:
    model, tokenizer = classifier()
    explorer = Explorer(model, tokenizer, TEXT)
    explorer.views["saliency"].selected_token = 3  # pinned before the tab exists
    _show_compare(explorer)
    view = explorer.compare_view
    assert view.selected_token == 3
    view.selected_token = 5
    assert explorer.views["saliency"].selected_token == 5
    assert explorer.views["flow"].selected_token == 5
    explorer.views["head"].selected_token = 2
    assert view.selected_token == 2
    view.selected_token = -1
    assert explorer.views["saliency"].selected_token == -1


def test_compare_from_python_and_the_saved_page() -> None:
    model, tokenizer = classifier()
    explorer = Explorer(model, tokenizer, TEXT)
    assert 'data-tab="Compare"' not in explorer.to_html()  # not computed: not saved
    comparison = explorer.compare()
    assert comparison is explorer.comparison and comparison.methods == explorer.methods[:4]
    assert explorer.tabs.selected_index == 0  # computing does not switch tabs
    page = explorer.to_html()
    assert 'data-tab="Compare"' in page and 'data-attnwidget-view="compare"' in page


def test_no_compare_tab_without_a_head_and_errors_are_shown(monkeypatch) -> None:
    from tiny_models import long_bert

    encoder, tokenizer = long_bert()
    bare = Explorer(encoder, tokenizer, "a few words here")
    assert "Compare" not in bare.tabs.titles
    with pytest.raises(ValueError, match="has no Compare tab"):
        bare.compare()
    with pytest.raises(ValueError, match="nothing is explained yet"):
        Explorer(*classifier(), "").compare()

    module = importlib.import_module(
        "attnwidget.evaluation.compare"
    )  # the package's name is the function

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise attnwidget.InputError("no comparison today")

    monkeypatch.setattr(module, "compare", broken)
    explorer = Explorer(*classifier(), TEXT)
    with pytest.raises(attnwidget.InputError, match="no comparison today"):
        explorer.compare()
    assert explorer.progress == "Compare failed: no comparison today"
    assert explorer.progress_line.style.text_color  # shown as an error
    assert "no comparison today" in explorer._compare_note.value
