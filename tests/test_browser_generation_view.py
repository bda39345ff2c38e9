"""GenerationView in a real headless Chromium (pytest-ipywidgets + Playwright).

Checks: the heat map has one row per generated token and one column per
context token, the future of each step hatched; a click on a generated token
reaches Python (``selected_step``) and shows that step's saliency and flow
diagram; Python's ``method`` and ``aggregate`` redraw the page; token text
with markup stays text (live and exported); nothing is requested from outside
the machine and the page logs no error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser_events import settle_injected
from IPython.display import display
from polling import wait_until
from test_browser_xss import HOSTILE, MARK, SHOWN_LITERALLY
from tiny_models import build

import attnwidget
from attnwidget.results.generation import GenerationExplanation
from attnwidget.views import GenerationView

pytestmark = pytest.mark.browser

ROOT = ".attnw-generationview"


def wait_data(page: Any, **expected: str) -> None:
    selector = ROOT + "".join(f'[data-{k}="{v}"]' for k, v in expected.items())
    page.locator(selector).wait_for(timeout=15000)


def fills(page: Any) -> list[str]:
    cells = page.locator(f"{ROOT} td.attnw-gen-cell")
    return cells.evaluate_all("cs => cs.map(c => c.style.backgroundColor)")


def test_click_selects_a_step_and_python_redraws(
    page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    model, tok = build("gpt2-lm")
    gexp = attnwidget.explain_generation(
        model.eval(), tok, "the keys to the", generated=" cabinet are on"
    )
    view = GenerationView(gexp)
    display(view)
    page = page_session
    wait_data(page, state="ready", step="-1", method="raw", aggregate="tokens")
    steps, columns = len(gexp), len(gexp.tokens)
    assert page.locator(f"{ROOT} td.attnw-gen-cell").count() == steps * columns
    # Step t sees len(prompt) + t columns; the rest of its row is hatched.
    unseen = sum(columns - n for n in gexp.prefix_lengths)
    assert page.locator(f"{ROOT} td.attnw-gen-unseen").count() == unseen
    shown = page.locator(f"{ROOT} button.attnw-gen-step").all_text_contents()
    assert shown == gexp.generated_tokens
    assert page.locator(f"{ROOT} .attnw-gen-flow").count() == 0

    # A click on a generated token -> selected_step in Python, saliency and flow drawn.
    page.locator(f'{ROOT} button.attnw-gen-step[data-step="2"]').click()
    wait_until(lambda: view.selected_step == 2)
    wait_data(page, step="2")
    chips = page.locator(f"{ROOT} .attnw-gen-chip").all_text_contents()
    assert chips == gexp.tokens[: gexp.prefix_lengths[2]]
    assert page.locator(f"{ROOT} svg.attnw-gen-flow line.attnw-gen-line").count() > 0
    target = page.locator(f"{ROOT} .attnw-gen-flow-target").text_content()
    assert target == gexp.generated_tokens[2]
    # A click on a cell selects its row.
    page.locator(f'{ROOT} td.attnw-gen-cell[data-step="0"][data-col="1"]').click()
    wait_until(lambda: view.selected_step == 0)

    # Python sets the method -> the page redraws with that method's colours.
    before, draws = fills(page), int(page.locator(ROOT).get_attribute("data-draws"))
    view.selected_method = "input_x_gradient"
    wait_data(page, method="input_x_gradient")
    assert int(page.locator(ROOT).get_attribute("data-draws")) > draws
    assert fills(page) != before
    assert page.locator(f"{ROOT} select").first.input_value() == "input_x_gradient"
    # The menu sets it back from the page.
    page.locator(f"{ROOT} select").first.select_option("raw")
    wait_until(lambda: view.selected_method == "raw")

    # Words: subword columns summed (" cabinet" is several byte-level pieces).
    view.aggregate = "words"
    wait_data(page, aggregate="words")
    words = len(view.word_labels)
    assert words < columns
    assert page.locator(f"{ROOT} td.attnw-gen-cell").count() == steps * words
    view.selected_step = -1
    wait_data(page, step="-1")
    assert page.locator(f"{ROOT} .attnw-gen-flow").count() == 0

    # Token text with markup stays text (on the same page, to share its start-up).
    view.close()
    page.locator(ROOT).wait_for(state="detached", timeout=15000)
    display(GenerationView(hostile_generation()))
    check_hostile(page, page_watch)
    page_watch.assert_clean()


def hostile_generation() -> GenerationExplanation:
    tokens = ["<s>", *HOSTILE[:3], "ok"]
    generated = [HOSTILE[3], HOSTILE[4], "end"]
    n, steps = len(tokens), len(generated)
    rng = np.random.default_rng(0)
    lengths = [n - 2 + t for t in range(steps)]
    scores = np.full((steps, n), np.nan, dtype=np.float32)
    for t, length in enumerate(lengths):
        scores[t, :length] = rng.random(length)
    return GenerationExplanation(
        prompt_tokens=tokens[:3], prompt_ids=np.arange(3), generated_tokens=generated,
        generated_ids=np.arange(steps), tokens=tokens, scores={"raw": scores},
        source_scores={"raw": scores[:, :3]}, prefix_tokens=tokens[3:],
        prefix_scores={"raw": scores[:, 3:]}, prefix_lengths=lengths,
        probabilities=np.ones(steps, dtype=np.float32), kind="causal-lm", methods=["raw"],
        text="", raw_tokens=tokens, special_mask=np.array([True] + [False] * (n - 1)),
    )  # fmt: skip


#: Markup only a token could have made (the flow diagram is the view's one svg).
INJECTED = """() => ({
  xss: window.__xss ?? null,
  elements: document.querySelectorAll('.attnw-frame img, .attnw-frame script, '
    + '.attnw-frame iframe, .attnw-frame svg:not(.attnw-gen-flow)').length,
  handlers: [...document.querySelectorAll('*')].filter(e =>
    [...e.attributes].some(a => /^on/i.test(a.name))).length,
})"""


def check_hostile(page: Any, watch: Any) -> None:
    every = ["<s>", *HOSTILE, "ok", "end"]
    page.wait_for_function(SHOWN_LITERALLY, arg=every, timeout=15000)
    for token in (HOSTILE[3], HOSTILE[0]):  # a generated token, then a prompt token
        assert page.evaluate(MARK, token)
        target = page.locator("[data-xss-target]").first
        target.hover()
        target.click()
        page.evaluate("() => document.querySelector('[data-xss-target]')"
                      "?.removeAttribute('data-xss-target')")  # fmt: skip
    page.locator(f'{ROOT} button.attnw-gen-step[data-step="2"]').click()  # flow diagram
    page.locator(f"{ROOT} svg.attnw-gen-flow").wait_for(timeout=15000)
    settle_injected(page, watch)  # an injected handler would have fired by now
    assert page.evaluate(INJECTED) == {"xss": None, "elements": 0, "handlers": 0}
    assert page.evaluate(SHOWN_LITERALLY, every)


def test_token_markup_stays_text_in_an_exported_page(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The live page is checked at the end of the test above."""
    from offline_browser import open_offline

    text = GenerationView(hostile_generation()).to_html()
    text, removed = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    assert removed == 1
    path = tmp_path / "generation.html"
    path.write_text(text, encoding="utf-8")
    offline = open_offline(request.getfixturevalue("browser"), path)
    try:
        check_hostile(offline.page, offline)
        offline.assert_clean()
    finally:
        offline.page.context.close()


def test_bad_settings_are_refused() -> None:
    import traitlets

    from attnwidget.errors import InputError

    view = GenerationView(hostile_generation())
    with pytest.raises(traitlets.TraitError, match="it has: raw"):
        view.selected_method = "flow"
    with pytest.raises(traitlets.TraitError, match="out of range"):
        view.selected_step = 3
    with pytest.raises(traitlets.TraitError, match="'tokens' or 'words'"):
        view.aggregate = "sentences"
    with pytest.raises(InputError, match="explain_generation"):
        GenerationView(object())
    with pytest.raises(TypeError):
        GenerationView(hostile_generation(), methd="raw")
