"""EvaluationView in Python: traits as binary buffers, selections validated,
open_example gives a SaliencyView (re-explained or from stored scores)."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets
from evaluation_fixtures import synthetic_result

import attnwidget
from attnwidget import demo
from attnwidget.errors import InputError
from attnwidget.evaluation import evaluate
from attnwidget.views import EvaluationView, SaliencyView

METHODS = ["rollout", "input_x_gradient"]
METRICS = ["comprehensiveness_aopc", "sufficiency_aopc", "perturbation_auc_pos"]


@pytest.fixture(scope="module")
def result():
    model, tokenizer = demo.load("sva-encoder")
    texts = [s.text for s in demo.sentences(5, seed=1)]
    return evaluate(model, tokenizer, texts, methods=METHODS, metrics=METRICS, progress=False)


def _floats_in_json(value) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_floats_in_json(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_floats_in_json(v) for v in value)
    return False


def test_traits_carry_the_table_and_every_value_as_float32_buffers(result) -> None:
    view = EvaluationView(result)
    assert view.methods == METHODS and view.metrics == METRICS
    assert view.higher_is_better == [True, False, False]
    assert view.example_ids == ["0", "1", "2", "3", "4"]
    summary = view.summary_array()
    assert summary.dtype == np.float32 and summary.shape == (2, 3, 4)
    for i, method in enumerate(METHODS):
        for k, metric in enumerate(METRICS):
            row = result.summary.loc[(method, metric)]
            expected = [row["mean"], row["low"], row["high"], row["count"]]
            np.testing.assert_array_equal(summary[i, k], np.float32(expected))
    values = view.values_array()
    assert values.shape == (5, 2, 3)
    frame = result.per_example
    for e, ident in enumerate(view.example_ids):
        for i, method in enumerate(METHODS):
            row = frame[(frame["id"] == ident) & (frame["method"] == method)].iloc[0]
            np.testing.assert_array_equal(values[e, i], np.float32(row[METRICS].to_numpy(float)))
    state = view.get_state()
    assert isinstance(state["summary"], (bytes, memoryview))
    assert isinstance(state["values"], (bytes, memoryview))
    floats = {
        k: v for k, v in state.items() if k not in ("confidence", "layout") and _floats_in_json(v)
    }
    assert not floats, f"floats sent as JSON: {sorted(floats)}"


def test_selections_are_validated(result) -> None:
    view = EvaluationView(result, selected=["rollout", "sufficiency_aopc"], selected_example="3")
    assert view.selected == ["rollout", "sufficiency_aopc"] and view.selected_example == "3"
    cell = view.cell_examples()
    # Lower is better: the worst (highest) first.
    assert cell["sufficiency_aopc"].is_monotonic_decreasing
    for bad in (["rollout"], ["nope", "sufficiency_aopc"], ["rollout", "auprc"]):
        with pytest.raises(traitlets.TraitError, match="selected="):
            view.selected = bad
    with pytest.raises(traitlets.TraitError, match="not an example id"):
        view.selected_example = "99"
    view.selected = []
    assert view.cell_examples() is None
    with pytest.raises(TypeError, match="EvaluationResult"):
        EvaluationView(object())


def test_open_example_gives_a_saliency_view(result) -> None:
    view = EvaluationView(result)
    with pytest.raises(InputError, match="no example is selected"):
        view.open_example()
    view.selected = ["input_x_gradient", "perturbation_auc_pos"]
    view.selected_example = "2"
    saliency = view.open_example()
    assert isinstance(saliency, SaliencyView)
    assert saliency.methods == ["input_x_gradient", "rollout"]  # the cell's method first
    assert saliency.explanation.num_layers == 4  # re-explained with the kept model
    stored = view.open_example(reexplain=False)
    assert stored.explanation.num_layers == 0
    np.testing.assert_array_equal(stored.score_matrix()[0], result.scores("2")["input_x_gradient"])
    np.testing.assert_allclose(saliency.score_matrix(), stored.score_matrix(), atol=1e-5)


def test_a_result_without_its_model_opens_from_stored_scores() -> None:
    result = synthetic_result(["a", "b"], [("m", True)], ["x", "y"])
    view = EvaluationView(result, selected_example="y")
    saliency = view.open_example()
    assert saliency.tokens == ["[CLS]", "text", "of", "y", "[SEP]"]
    np.testing.assert_array_equal(saliency.score_matrix()[1], result.scores("y")["b"])


def test_exported_and_saved_as_a_page(result, tmp_path) -> None:
    assert attnwidget.EvaluationView is EvaluationView
    page = EvaluationView(result).to_html(tmp_path / "evaluation.html")
    assert '"evaluation"' in page and "comprehensiveness_aopc" in page
