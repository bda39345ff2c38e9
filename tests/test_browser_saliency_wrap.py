"""SaliencyView at a glance, in a real headless Chromium (pytest-ipywidgets).

- Colour range over the words: a CLS-dominated grad_attention / chefer2021
  row (the demo encoder's) shows the words in different colours, the legend
  says what the range covers, and ``scale="all"`` from Python redraws (and
  the page's picker sets it back in Python).
- 300 tokens of a real model wrap into lines as wide as the output: no
  horizontal scroll, every line's method rows aligned with their labels, a
  click on a later line round-trips; 1,000 tokens render in reasonable time.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
import tiny_models
from IPython.display import display
from polling import wait_until

import attnwidget
from attnwidget.results.explanation import Explanation
from attnwidget.views import SaliencyView
from attnwidget.views.core.format import format_number, format_range

pytestmark = pytest.mark.browser

ROOT = ".attnw-saliency"

#: Per line: cell tops of every column by method, label tops, overflow.
LAYOUT_JS = """root => {
  const lines = root.querySelector('.attnw-lines');
  const box = lines.getBoundingClientRect();
  const byLine = new Map();
  for (const col of lines.querySelectorAll(':scope > .attnw-col')) {
    const cells = [...col.children].map(c => c.getBoundingClientRect());
    const key = Math.round(col.getBoundingClientRect().top);
    if (!byLine.has(key)) byLine.set(key, []);
    byLine.get(key).push({ index: +col.dataset.index, tops: cells.map(r => r.top),
                           left: cells[0].left, right: Math.max(...cells.map(r => r.right)) });
  }
  const labels = [...lines.querySelectorAll(':scope > .attnw-line-labels')].map(block => ({
    texts: [...block.children].map(c => c.textContent),
    tops: [...block.children].map(c => c.getBoundingClientRect().top),
    right: block.getBoundingClientRect().right,
  }));
  const out = root.parentElement.getBoundingClientRect();
  return {
    lines: [...byLine.values()], labels,
    linesRight: box.right, outRight: out.right, outWidth: out.width,
    rootScroll: [root.scrollWidth, root.clientWidth],
    scrollers: [...root.querySelectorAll('.attnw-scroll')].map(s => [s.scrollWidth, s.clientWidth]),
    page: [document.documentElement.scrollWidth, window.innerWidth],
  };
}"""


def colours(page: Any, method: str, indices: list[int]) -> list[str]:
    return [
        page.locator(f'{ROOT} .attnw-tok[data-method="{method}"][data-index="{j}"]').evaluate(
            "c => getComputedStyle(c).backgroundColor"
        )
        for j in indices
    ]


def test_words_set_the_colour_range_and_python_can_include_all(
    page_watch, solara_test, page_session
) -> None:
    model, tokenizer = attnwidget.demo.load("sva-encoder")
    text = next(iter(attnwidget.demo.sentences(1, seed=0))).text
    exp = attnwidget.explain(model, tokenizer, text, methods=["grad_attention", "chefer2021"])
    special = np.isin(exp.input_ids, tokenizer.all_special_ids)
    words = [j for j in range(len(exp.tokens)) if not special[j] and j != exp.query_index]
    view = SaliencyView(exp)
    display(view)
    page = page_session
    page.locator(f"{ROOT} .attnw-line-labels").first.wait_for()

    for method in ("grad_attention", "chefer2021"):
        scores = exp.scores[method]
        # The query (CLS) dominates: beyond the words' range, drawn but outlined.
        assert scores[exp.query_index] > 10 * scores[words].max()
        word_colours = colours(page, method, words)
        assert len(set(word_colours)) >= 3, (method, word_colours)  # not uniform dark
        best = words[int(np.argmax(scores[words]))]
        assert colours(page, method, [best])[0] == "rgb(253, 231, 37)"  # viridis' top
        query = page.locator(
            f'{ROOT} .attnw-tok[data-method="{method}"][data-index="{exp.query_index}"]'
        )
        assert set(query.get_attribute("class").split()) >= {"attnw-unscaled", "attnw-beyond"}
        assert "not in the colour range" in query.get_attribute("title")
        # The legend's range is the words' max, formatted as Python formats it.
        legend = page.locator(f'{ROOT} .attnw-label[data-method="{method}"] .attnw-range')
        assert legend.text_content() == format_range(0, float(scores[words].max()))
    coverage = page.locator(f"{ROOT} .attnw-saliency-coverage").text_content()
    assert "range over words; [SEP] and the query ([CLS]) excluded" in coverage

    # Python -> page: every token sets the range; the words go uniformly dark.
    view.scale = "all"
    page.locator(f"{ROOT} .attnw-saliency-coverage", has_text="range over all tokens").wait_for()
    assert page.locator(f"{ROOT} select.attnw-saliency-scale").input_value() == "all"
    dark = colours(page, "chefer2021", words)
    assert len(set(dark)) <= 2 and "rgb(253, 231, 37)" not in dark
    assert page.locator(f"{ROOT} .attnw-unscaled, {ROOT} .attnw-beyond").count() == 0
    legend = page.locator(f'{ROOT} .attnw-label[data-method="chefer2021"] .attnw-range')
    assert legend.text_content() == format_range(0, float(exp.scores["chefer2021"].max()))

    # Page -> Python: the picker.
    page.locator(f"{ROOT} select.attnw-saliency-scale").select_option("words")
    wait_until(lambda: view.scale == "words")
    page.locator(f"{ROOT} .attnw-saliency-coverage", has_text="range over words").wait_for()
    page_watch.assert_clean()


def long_explanation(n: int) -> tuple[Explanation, Any]:
    """A real (tiny, random) BERT classifier's explanation of exactly n tokens."""
    import torch
    import transformers

    tokenizer = tiny_models.wordpiece_tokenizer.__wrapped__()  # a fresh copy
    tokenizer.model_max_length = n
    torch.manual_seed(0)
    config = transformers.BertConfig(
        **tiny_models.SMALL, vocab_size=len(tokenizer), max_position_embeddings=1024
    )
    model = transformers.BertForSequenceClassification(config)
    text = " ".join(tiny_models.CORPUS * 4)
    methods = ["raw", "rollout", "grad_attention", "input_x_gradient"]
    exp = attnwidget.explain(model, tokenizer, text, methods=methods, truncation=True)
    assert len(exp.tokens) == n
    return exp, tokenizer


def test_300_tokens_wrap_into_aligned_lines_without_sideways_scroll(
    page_watch, solara_test, page_session
) -> None:
    exp, _ = long_explanation(300)
    view = SaliencyView(exp)
    page = page_session
    page.set_viewport_size({"width": 900, "height": 800})
    display(view)
    page.locator(f"{ROOT} .attnw-line-labels").first.wait_for()
    root = page.locator(ROOT)
    layout = root.evaluate(LAYOUT_JS)

    # No horizontal scroll anywhere, and nothing wider than the output.
    assert layout["rootScroll"][0] <= layout["rootScroll"][1]
    assert all(scroll <= client for scroll, client in layout["scrollers"]), layout["scrollers"]
    assert layout["page"][0] <= layout["page"][1]
    assert layout["linesRight"] <= layout["outRight"] + 0.5
    lines = layout["lines"]
    assert len(lines) >= 5  # 300 tokens do not fit one line at 900 px
    assert sorted(c["index"] for line in lines for c in line) == list(range(300))
    methods = view.methods
    assert len(layout["labels"]) == len(lines)
    for line, labels in zip(lines, layout["labels"], strict=True):
        assert labels["texts"] == methods  # each line names its rows
        for column in line:
            assert column["right"] <= layout["linesRight"] + 0.5
            assert column["left"] >= labels["right"]  # labels never cover tokens
            # Rows aligned: cell i of every column sits level with label i.
            assert np.allclose(column["tops"], labels["tops"], atol=1.0), (column, labels)
        indices = [c["index"] for c in line]
        assert indices == list(range(indices[0], indices[0] + len(indices)))  # in order

    # Hover: the score formatted as Python formats it.
    j = lines[3][2]["index"]
    cell = page.locator(f'{ROOT} .attnw-tok[data-method="grad_attention"][data-index="{j}"]')
    score = float(view.score_matrix()[methods.index("grad_attention"), j])
    cell.hover()
    status = page.locator(f"{ROOT} .attnw-status")
    assert f'#{j} "{exp.tokens[j]}" · score {format_number(score)}' in status.text_content()

    # A click on a later line -> Python; Python -> the page highlights the column.
    cell.click()
    wait_until(lambda: view.selected_token == j)
    selected = page.locator(f"{ROOT} .attnw-tok.attnw-selected")
    assert selected.count() == len(methods)
    view.selected_token = 299
    page.locator(f'{ROOT} .attnw-tok.attnw-selected[data-index="299"]').first.wait_for()
    assert selected.count() == len(methods)

    # A narrower output re-wraps: more lines, labels follow.
    page.set_viewport_size({"width": 600, "height": 800})
    wait_until(lambda: int(root.locator(".attnw-lines").get_attribute("data-lines")) > len(lines))
    narrow = root.evaluate(LAYOUT_JS)
    assert len(narrow["labels"]) == len(narrow["lines"]) > len(lines)
    assert narrow["page"][0] <= narrow["page"][1]
    page_watch.assert_clean()


def test_1000_tokens_render_in_reasonable_time(page_watch, solara_test, page_session) -> None:
    n = 1000
    rng = np.random.default_rng(1)
    tokens = ["[CLS]", *(f"w{i}" for i in range(n - 2)), "[SEP]"]
    attentions = rng.random((1, 1, n, n), dtype=np.float32)
    attentions /= attentions.sum(-1, keepdims=True)
    scores = {f"m{k}": rng.random(n).astype(np.float32) for k in range(5)}
    page = page_session
    page.set_viewport_size({"width": 900, "height": 800})
    start = time.perf_counter()
    display(SaliencyView(Explanation(tokens=tokens, attentions=attentions, scores=scores)))
    page.locator(f"{ROOT} .attnw-lines[data-lines]").wait_for()
    elapsed = time.perf_counter() - start
    assert page.locator(f"{ROOT} .attnw-tok").count() == 5 * n
    layout = page.locator(ROOT).evaluate(LAYOUT_JS)
    assert layout["page"][0] <= layout["page"][1]
    assert all(scroll <= client for scroll, client in layout["scrollers"])
    print(f"1,000 tokens x 5 methods: drawn {elapsed:.2f} s after display()")
    assert elapsed < 10.0
    page_watch.assert_clean()


def test_flow_view_labels_use_the_word_range(page_watch, solara_test, page_session) -> None:
    from attnwidget.views import FlowView

    model, tokenizer = attnwidget.demo.load("sva-encoder")
    text = next(iter(attnwidget.demo.sentences(1, seed=0))).text
    exp = attnwidget.explain(model, tokenizer, text, methods=["rollout"])
    special = np.isin(exp.input_ids, tokenizer.all_special_ids)
    view = FlowView(exp)
    display(view)
    page = page_session
    layers, flow = exp.num_layers, ".attnw-flow"
    page.locator(f"{flow}[data-state=ready][data-selected='{layers}:0']").wait_for()
    left = page.locator(f"{flow} .attnw-flow-left .attnw-flow-tok")
    legend = page.locator(f"{flow} .attnw-flow-legend")

    def expected_legend(selected: int) -> str:
        values = np.array(
            [float(left.nth(j).get_attribute("data-score")) for j in range(left.count())]
        )
        words = [j for j in range(len(values)) if not special[j] and j != selected]
        return format_range(0, float(values[words].max()))

    # The query CLS's own share dwarfs the words': it is left out of the range.
    rollout = exp.scores["rollout"]
    assert legend.text_content() == (
        f"input rollout: {expected_legend(0)} (range over words; [SEP] and the selected token "
        "excluded)"
    )
    words = [j for j in range(len(rollout)) if not special[j] and j != 0]
    assert expected_legend(0) == format_range(0, float(rollout[words].max()))
    assert "attnw-unscaled" in left.nth(0).get_attribute("class").split()
    best = words[int(np.argmax(rollout[words]))]
    assert "not in the colour range" not in left.nth(best).get_attribute("title")
    assert format_number(float(rollout[best])) in left.nth(best).get_attribute("title")

    # Python selects another top node: the range leaves that token out instead.
    view.select(layers, 3)
    page.locator(f"{flow}[data-state=ready][data-selected='{layers}:3']").wait_for()
    page.locator(
        f"{flow} .attnw-flow-left .attnw-flow-tok.attnw-unscaled[data-index='3']"
    ).wait_for()
    # [CLS] is still a special token: still drawn outside the range.
    assert "attnw-unscaled" in left.nth(0).get_attribute("class").split()
    assert legend.text_content().startswith(f"input rollout: {expected_legend(3)} (")

    # Python includes every token: no label is left out, the range is the max of all.
    view.scale = "all"
    legend.filter(has_text="range over all tokens").wait_for()
    assert page.locator(f"{flow} .attnw-flow-left .attnw-unscaled").count() == 0
    values = [float(left.nth(j).get_attribute("data-score")) for j in range(left.count())]
    assert legend.text_content().startswith(f"input rollout: {format_range(0, max(values))} (")
    page_watch.assert_clean()
