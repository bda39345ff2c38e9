"""ExplanationRating in a real headless Chromium, one test per mode.

A click saves the answer (read back with a fresh sqlite3 connection); the
trials come in the seeded order, which is the one recorded in the store; the
method names are not in the page unless show_method=True.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from IPython.display import display
from polling import wait_until

from attnwidget.annotations import plan_trials
from attnwidget.results.explanation import Explanation
from attnwidget.views import ExplanationRating

pytestmark = pytest.mark.browser

ROOT = ".attnw-rating"
TEXTS = [["[CLS]", "good", "film", "[SEP]"], ["[CLS]", "dull", "plot", "[SEP]"],
         ["[CLS]", "fine", "[SEP]"]]  # fmt: skip
METHODS = ["rollout", "raw"]


def explanations() -> list[Explanation]:
    out = []
    for k, tokens in enumerate(TEXTS):
        rng = np.random.default_rng(k)
        n = len(tokens)
        weights = rng.random((2, 2, n, n), dtype=np.float32)
        weights /= weights.sum(-1, keepdims=True)
        exp = Explanation.from_attentions(weights, tokens, methods=METHODS)
        exp.target = ("pos", "neg", "pos")[k]
        out.append(exp)
    return out


def answers(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT position, mode, seed, methods, method_shown, explanation_shown, rating,"
            " chosen, chosen_side, predicted, actual, correct, seconds FROM ratings ORDER BY id"
        ).fetchall()


def recorded_trials(path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(path) as conn:
        (trials,) = conn.execute("SELECT trials FROM rating_sessions").fetchone()
    return json.loads(trials)


def page_text(page: Any) -> str:
    return page.locator(ROOT).inner_text()


def wait_position(page: Any, k: int) -> None:
    page.locator(f'{ROOT}[data-position="{k}"]').wait_for(timeout=15000)


def test_rate_mode_saves_each_click_in_the_seeded_order(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    path = tmp_path / "r.sqlite"
    view = ExplanationRating(explanations(), store=path, annotator="ana", mode="rate", seed=4)
    display(view)
    page = page_session
    wait_position(page, 0)
    expected = plan_trials(TEXTS, METHODS, "rate", 4)
    assert [t["methods"] for t in recorded_trials(path)] == [t["methods"] for t in expected]
    assert [t["input"] for t in recorded_trials(path)] == [t["input"] for t in expected]
    for method in METHODS:
        assert method not in page_text(page)  # hidden by default
    for k in range(2):
        shown = page.locator(f"{ROOT} .attnw-rating-token").all_text_contents()
        assert shown == TEXTS[expected[k]["input"]]
        page.locator(f"{ROOT} .attnw-rating-note").fill(f"note {k}")
        page.locator(f'{ROOT} button[data-rating="{k + 3}"]').click()
        wait_position(page, k + 1)
    rows = answers(path)
    assert [(r[0], r[1], r[2], json.loads(r[3]), r[4], r[6]) for r in rows] == [
        (k, "rate", 4, expected[k]["methods"], 0, k + 3) for k in range(2)
    ]
    assert all(r[12] is not None and r[12] >= 0 for r in rows)  # seconds recorded
    assert view.answered == 2
    page_watch.assert_clean()


def test_compare_mode_records_the_side_and_the_method_picked(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    path = tmp_path / "c.sqlite"
    view = ExplanationRating(explanations(), store=path, annotator="ana", mode="compare", seed=1)
    display(view)
    page = page_session
    wait_position(page, 0)
    expected = plan_trials(TEXTS, METHODS, "compare", 1)
    assert [t["methods"] for t in view.trials] == [t["methods"] for t in expected]
    labels = page.locator(f"{ROOT} .attnw-rating-label").all_text_contents()
    assert labels == ["A", "B"] and not any(m in page_text(page) for m in METHODS)
    page.locator(f'{ROOT} button[data-side="right"]').click()
    wait_position(page, 1)
    (row,) = answers(path)
    assert row[1] == "compare" and json.loads(row[3]) == expected[0]["methods"]
    assert (row[7], row[8]) == (expected[0]["methods"][1], "right")
    page_watch.assert_clean()


def test_simulate_mode_reveals_and_scores_and_shows_methods_when_asked(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    path = tmp_path / "s.sqlite"
    view = ExplanationRating(
        explanations(), store=path, annotator="ana", mode="simulate", seed=2, show_method=True
    )
    display(view)
    page = page_session
    wait_position(page, 0)
    trials = view.trials
    assert [t["explanation_shown"] for t in trials] == [
        t["explanation_shown"] for t in plan_trials(TEXTS, METHODS, "simulate", 2)
    ]
    for k, trial in enumerate(trials):
        panels = page.locator(f"{ROOT} .attnw-rating-label").all_text_contents()
        if trial["explanation_shown"]:
            assert panels == trial["methods"]  # names shown when asked
        else:
            assert panels == ["Input (no explanation)"]  # the control condition
        page.locator(f'{ROOT} button[data-choice="pos"]').click()
        page.locator(f'{ROOT}[data-state="revealed"]').wait_for(timeout=10000)
        right = trial["actual"] == "pos"
        reveal = page.locator(f"{ROOT} .attnw-rating-reveal")
        assert reveal.get_attribute("data-correct") == str(right).lower()
        page.locator(f"{ROOT} .attnw-rating-next").click()
        wait_position(page, k + 1)
    rows = answers(path)
    assert [(r[5], r[9], r[10], r[11]) for r in rows] == [
        (int(t["explanation_shown"]), "pos", t["actual"], int(t["actual"] == "pos")) for t in trials
    ]
    page.locator(f'{ROOT}[data-state="done"]').wait_for(timeout=10000)
    wait_until(lambda: view.answered == 3)
    page_watch.assert_clean()
