"""CompareView in Python: a Comparison's parts as float32 buffers, the synced
selections checked with errors naming the fix (and nothing changed on an
error), strict keywords, and the golden fixture the JS tests read
(js/test/fixtures/compare.json: the colour ranges, ranks, most disputed
tokens and scatter axes the page computes, from Python's numbers)."""

from __future__ import annotations

import base64
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import traitlets
from compare_fixtures import fixed_comparison

import attnwidget
from attnwidget.metrics.method_agreement import normalised_ranks
from attnwidget.views import CompareView
from attnwidget.views.core.standalone import _MACHINERY

FIXTURE = Path(__file__).resolve().parent.parent / "js" / "test" / "fixtures" / "compare.json"
UPDATE_ENV = "ATTNWIDGET_UPDATE_FIXTURES"


@pytest.fixture(scope="module")
def comparison() -> Any:
    return fixed_comparison()


def _state(view: CompareView) -> dict[str, Any]:
    return {name: getattr(view, name) for name in view.keys if name not in _MACHINERY}


def test_traits_carry_the_comparison(comparison) -> None:
    view = CompareView(comparison)
    assert view._view == "compare"
    assert view.methods == ["raw", "rollout", "signed_demo"]
    assert view.tokens == comparison.tokens and view.shape == [3, 8]
    assert view.compared == [bool(c) for c in comparison.compared]
    assert view.signed == [False, False, True]
    np.testing.assert_array_equal(
        view.score_matrix(),
        np.stack([comparison.explanation.scores[m] for m in view.methods]).astype(np.float32),
    )
    spread = view.disagreement_array()
    assert np.isnan(spread[~comparison.compared]).all()
    np.testing.assert_allclose(
        spread[comparison.compared], comparison.disagreement[comparison.compared], rtol=1e-6
    )
    assert view.agreement_metrics == ["spearman", "kendall", "top1", "top3", "top5", "top20%"]
    assert view.agreement_signed == [True, True, False, False, False, False]
    tables = view.agreement_array()
    assert tables.shape == (6, 3, 3)
    for k, metric in enumerate(view.agreement_metrics):
        expected = comparison.agreement[metric].loc[view.methods, view.methods].to_numpy()
        np.testing.assert_allclose(tables[k], expected, rtol=1e-6)
    assert view.figure_kinds == ["faithfulness"] * 2 + ["plausibility"] * 3
    assert view.figure_metrics == [
        "comprehensiveness_aopc", "sufficiency_aopc", "token_f1", "iou_f1", "auprc",
    ]  # fmt: skip
    assert view.figure_higher_is_better == [True, False, True, True, True]
    assert all(view.figure_summaries)  # the registry's one-liners
    figures = view.figure_matrix()
    np.testing.assert_allclose(figures[:, 0], [0.5, 0.25, -0.125])
    np.testing.assert_allclose(figures[:, 2], comparison.plausibility["token_f1"].to_numpy())
    assert view.rationale == [bool(r) for r in comparison.rationale]
    assert view.notes == []
    assert view.agreement_metric == "spearman" and view.selected_pair == []
    assert view.selected_token == -1 and view.query_index == 0
    assert "3 methods" in view.caption and "6 compared" in view.caption
    # Arrays travel as binary buffers, never as JSON lists of floats.
    state = view.get_state()
    for name in ("scores", "disagreement", "agreement", "figures"):
        assert isinstance(state[name], (bytes, memoryview)), name


def test_missing_parts_are_named(comparison) -> None:
    bare = fixed_comparison(figures=False)
    bare.plausibility, bare.rationale = None, None
    view = CompareView(bare)
    assert view.figure_metrics == [] and view.figure_shape == [3, 0]
    assert view.rationale == []
    assert any("re-running the model" in note for note in view.notes)
    assert any("rationale=" in note for note in view.notes)


def test_selections_are_checked_with_errors_naming_the_fix(comparison) -> None:
    view = CompareView(comparison, selected_token=2, selected_pair=["raw", "rollout"])
    before = _state(view)
    cases: list[tuple[str, Any, str]] = [
        ("selected_token", 8, r"out of range: use -1 for no selection or a token index 0\.\.7"),
        ("selected_token", -2, "out of range"),
        ("selected_token", True, "must be an int"),
        ("selected_pair", ["raw", "lrp"], r"'lrp' is not a method of this comparison; use \[\]"),
        ("selected_pair", ["raw", "raw"], "name two different methods"),
        ("selected_pair", ["raw"], r"two of \['raw', 'rollout', 'signed_demo'\]"),
        ("agreement_metric", "pearson", r"use one of 'spearman', 'kendall', 'top1'"),
    ]
    for name, value, message in cases:
        with pytest.raises(traitlets.TraitError, match=message):
            setattr(view, name, value)
        assert _state(view) == before, f"{name}={value!r} changed the view"
    view.selected_pair = ("rollout", "signed_demo")  # a tuple is taken
    assert view.selected_pair == ["rollout", "signed_demo"]
    view.agreement_metric = "top3"
    assert view.pair_agreement == pytest.approx(
        comparison.agreement["top3"].loc["rollout", "signed_demo"]
    )
    view.selected_pair = []
    assert view.pair_agreement is None
    view.selected_token = 3
    selection = view.selection
    assert selection is not None and selection["token"] == "are"
    assert selection["scores"]["signed_demo"] == pytest.approx(0.25)
    assert selection["disagreement"] == pytest.approx(comparison.disagreement[3])
    view.selected_token = 0  # [CLS]: selectable, but not compared
    assert view.selection is not None and np.isnan(view.selection["disagreement"])
    with pytest.raises(traitlets.TraitError, match="read-only"):
        view.tokens = ["x"]


def test_keywords_are_strict(comparison) -> None:
    with pytest.raises(TypeError, match="selected_tokn") as info:
        CompareView(comparison, selected_tokn=1)
    assert "selected_token" in str(info.value)  # it names what it takes
    with pytest.raises(traitlets.TraitError, match="not an agreement metric"):
        CompareView(comparison, agreement_metric="pearson")
    with pytest.raises(traitlets.TraitError, match="not a method of this comparison"):
        CompareView(comparison, selected_pair=["raw", "nope"])
    with pytest.raises(traitlets.TraitError, match="out of range"):
        CompareView(comparison, selected_token=99)
    with pytest.raises(TypeError, match=r"needs an attnwidget\.Comparison.*attnwidget\.compare"):
        CompareView(comparison.explanation)
    view = CompareView(comparison, agreement_metric="kendall", selected_pair=("raw", "rollout"))
    assert view.agreement_metric == "kendall" and view.selected_pair == ["raw", "rollout"]


def test_a_comparison_that_cannot_be_shown_changes_nothing(comparison) -> None:
    view = CompareView(comparison, selected_token=4, selected_pair=["raw", "signed_demo"])
    before = _state(view)
    broken = fixed_comparison()
    broken.disagreement = broken.disagreement[:3]
    with pytest.raises(ValueError, match=r"disagreement has shape \(3,\); expected \(8,\)"):
        view.set_comparison(broken)
    broken = fixed_comparison()
    broken.agreement = {"spearman": broken.agreement["spearman"].iloc[:2, :2]}
    with pytest.raises(ValueError, match="has no row or column for 'signed_demo'"):
        view.set_comparison(broken)
    broken = fixed_comparison()
    broken.faithfulness = broken.faithfulness.rename(columns={"sufficiency_aopc": "mystery"})
    with pytest.raises(ValueError, match=r"comparison\.directions\['mystery'\] = 'higher'"):
        view.set_comparison(broken)
    assert _state(view) == before
    assert view.comparison is comparison


def test_another_comparison_keeps_the_selections_that_still_apply(comparison) -> None:
    view = CompareView(comparison, selected_token=6, selected_pair=["raw", "signed_demo"])
    view.agreement_metric = "top5"
    short = fixed_comparison(tokens=["[CLS]", "a", "b", "c", "[SEP]"])
    view.set_comparison(short)
    assert view.selected_token == -1  # 6 is past the 5 tokens
    assert view.selected_pair == ["raw", "signed_demo"] and view.agreement_metric == "top5"
    assert view.tokens == ["[CLS]", "a", "b", "c", "[SEP]"] and view.shape == [3, 5]


def test_a_refused_page_change_is_logged_and_changes_nothing(
    comparison, caplog: pytest.LogCaptureFixture
) -> None:
    view = CompareView(comparison)
    with caplog.at_level(logging.WARNING):
        view.set_state({"agreement_metric": "nope"})  # no exception escapes into the comm
        view.set_state({"selected_pair": ["raw", "raw"]})
    assert view.agreement_metric == "spearman" and view.selected_pair == []
    assert "refused" in caplog.text and "not an agreement metric" in caplog.text
    view.set_state({"selected_pair": ["rollout", "raw"], "selected_token": 2})
    assert view.selected_pair == ["rollout", "raw"] and view.selected_token == 2


def test_real_compare_on_a_tiny_model() -> None:
    from tiny_models import build

    model, tokenizer = build("bert-cls")
    comparison = attnwidget.compare(model, tokenizer, "the keys to the cabinet are here")
    view = attnwidget.CompareView(comparison)
    assert view.methods == list(comparison.methods)
    assert set(view.figure_kinds) == {"faithfulness"}
    assert view.compared[0] is False and view.compared[-1] is False  # [CLS], [SEP]
    assert "explaining" in view.caption
    assert 'data-attnwidget-view="compare"' in view.to_html()  # NaN stays in the buffers


# ---- the golden fixture the JS tests read ---------------------------------------


def _b64(data: Any) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _padded(values: np.ndarray) -> list[float]:
    """The scatter's axis rule: the range padded by 5 % on each side."""
    lo, hi = float(values.min()), float(values.max())
    pad = (hi - lo) * 0.05 if hi > lo else (abs(lo) * 0.05 or 1.0)
    return [lo - pad, hi + pad]


def fixture() -> dict[str, Any]:
    comparison = fixed_comparison()
    view = CompareView(comparison)
    state = view.get_state()
    traits = {
        name: (_b64(value) if isinstance(value, (bytes, memoryview)) else value)
        for name, value in state.items()
        if name not in _MACHINERY
    }
    compared = np.asarray(comparison.compared)
    scores = view.score_matrix().astype(np.float64)
    spread = view.disagreement_array().astype(np.float64)
    kept = np.flatnonzero(compared)
    ranks = [
        (normalised_ranks(row[compared]) * (len(kept) - 1) + 1).tolist() for row in scores
    ]  # 1 = the highest score, ties share their mean rank
    order = [int(j) for j in np.argsort(-np.nan_to_num(spread, nan=-1.0), kind="stable")]
    disputed = [j for j in order if compared[j] and spread[j] > 0][:3]
    return {
        "traits": traits,
        "expected": {
            # Each row's colour range: max |score| over the compared tokens.
            "row_max": [float(np.abs(row[compared]).max()) for row in scores],
            "spread_max": float(np.nanmax(spread)),
            "excluded": [int(j) for j in np.flatnonzero(~compared)],
            "disputed": disputed,
            "compared_tokens": [int(j) for j in kept],
            "ranks": ranks,
            "scatter_0_2": {"x": _padded(scores[0][compared]), "y": _padded(scores[2][compared])},
            "agreement_kendall_0_2": float(comparison.agreement["kendall"].iloc[0, 2]),
            "best": {"comprehensiveness_aopc": 0, "sufficiency_aopc": 0},
        },
    }


def test_js_fixture_is_current() -> None:
    fresh = json.loads(json.dumps(fixture(), allow_nan=False))
    if os.environ.get(UPDATE_ENV, "").strip() not in {"", "0"}:
        FIXTURE.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    committed = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert committed["traits"].keys() == fresh["traits"].keys()
    for name, value in fresh["traits"].items():
        if name in ("scores", "disagreement", "agreement", "figures"):
            got = np.frombuffer(base64.b64decode(committed["traits"][name]), "<f4")
            want = np.frombuffer(base64.b64decode(value), "<f4")
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
        else:
            assert committed["traits"][name] == value, name
    for key, value in fresh["expected"].items():
        np.testing.assert_allclose(
            np.asarray(committed["expected"][key] if not isinstance(value, dict) else
                       [committed["expected"][key][a] for a in sorted(value)], dtype=float),
            np.asarray(value if not isinstance(value, dict) else
                       [value[a] for a in sorted(value)], dtype=float),
            rtol=1e-6, err_msg=f"{key}: rewrite with {UPDATE_ENV}=1 and run npm test in js/",
        )  # fmt: skip
