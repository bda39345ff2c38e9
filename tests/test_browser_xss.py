"""XSS audit: token text is text in every view, live and exported.

Tokens come from tokenizers and user input; a view that ever parsed one as
HTML would run attacker-chosen script in the notebook. Each view is fed
tokens that are markup and script, then drawn three ways:

- ``live``: displayed as a widget (pytest-ipywidgets' page on 127.0.0.1);
- ``export``: ``to_html()`` opened from a file with the network cut off;
- ``export-no-csp``: the same page with its Content-Security-Policy removed,
  so the escaping itself is tested, not only the policy behind it.

After drawing, hovering and clicking the hostile token, nothing may have run
(``window.__xss`` stays unset), no element may have been made from a token
(no ``img``/``script``/``svg`` under the view, no ``on*`` attribute
anywhere), and every token must be shown literally as the text of an element.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser_events import settle_injected
from IPython.display import display

import attnwidget.views as views
from attnwidget.results.explanation import Explanation

pytestmark = pytest.mark.browser

HOSTILE = [
    "<img src=x onerror=window.__xss=1>",
    "</script><script>window.__xss=2</script>",
    '"><svg onload=window.__xss=3>',
    "<script>window.__xss=4</script>",
    "&lt;b&gt;",  # an entity stays these characters, it is not decoded to "<b>"
]
TOKENS = ["[CLS]", *HOSTILE, "ok", "[SEP]"]
KINDS = ["saliency", "head", "model", "flow", "neuron", "compare", "adjudication"]
#: Views of people's judgements: ExplanationRating, and HeadView's notes panel (notes,
#: roles, the annotator's and the model's names are hostile too).
KINDS += ["rating", "head-notes"]
MODES = ["live", "export", "export-no-csp"]


def explanation() -> Explanation:
    n = len(TOKENS)
    rng = np.random.default_rng(0)
    weights = rng.random((2, 2, n, n), dtype=np.float32) ** 4
    weights /= weights.sum(-1, keepdims=True)
    return Explanation.from_attentions(weights, TOKENS, methods=["raw", "rollout"])


class _HostileTokenizer:
    """len(TOKENS) ids of a tiny real BERT, named by TOKENS (NeuronView runs a model)."""

    def __call__(self, _text: str, return_tensors: str = "pt") -> dict[str, Any]:
        import torch

        ids = torch.arange(5, 5 + len(TOKENS))[None]
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return list(TOKENS)


def make_view(kind: str) -> Any:
    if kind == "adjudication":  # every token an annotator's name (a row each) and the text
        import tempfile

        from attnwidget.annotations import Store

        store = Store(Path(tempfile.mkdtemp()) / "xss.sqlite")
        store.add_items([{"id": HOSTILE[0], "text": " ".join(TOKENS)}])
        for k, name in enumerate(TOKENS):
            store.save(HOSTILE[0], annotator=name, spans=[(k, k + 1)])
        return views.AdjudicationView(store, annotators=TOKENS)
    if kind == "neuron":
        from tiny_models import build

        model, _tokenizer = build("bert-cls")
        return views.NeuronView(model, _HostileTokenizer(), "hostile", selected_token=1)
    if kind == "compare":  # with a pair selected: the scatter labels its points with the tokens
        from compare_fixtures import fixed_comparison

        comparison = fixed_comparison(tokens=TOKENS)
        return views.CompareView(comparison, selected_pair=comparison.methods[:2])
    exp = explanation()
    if kind in ("rating", "head-notes"):  # tokens, and notes/roles/names, all hostile
        import tempfile

        path = Path(tempfile.mkdtemp()) / "judgements.sqlite"
        if kind == "rating":
            return views.ExplanationRating([exp], store=path, annotator=HOSTILE[0], mode="compare")
        view = views.HeadView(exp, store=path, annotator=HOSTILE[0], model_name=HOSTILE[1])
        view.save_note(layer=0, head=1, role=HOSTILE[2], note=HOSTILE[3])
        return view
    if kind == "saliency":
        return views.SaliencyView(exp)
    if kind == "head":
        return views.HeadView(exp)
    if kind == "model":
        return views.ModelView(exp, layer=0, head=1)  # enlarged: its tokens are text
    flow_view = getattr(views, "FlowView", None)
    if flow_view is None:
        pytest.skip("FlowView is not in attnwidget.views yet")
    return flow_view(exp, selected_method="rollout")


#: True once every token is the whole text of some element (a leaf) of a view.
SHOWN_LITERALLY = """tokens => {
  const leaves = [...document.querySelectorAll('.attnw-frame *')]
    .filter(e => e.children.length === 0).map(e => e.textContent);
  return tokens.every(t => leaves.includes(t));
}"""

#: Marks the first leaf showing ``token``, so Playwright can hover and click it.
MARK = """token => {
  const leaf = [...document.querySelectorAll('.attnw-frame *')]
    .find(e => e.children.length === 0 && e.textContent === token);
  if (leaf) leaf.setAttribute('data-xss-target', '');
  return Boolean(leaf);
}"""

#: Markup that could only have come from a token (views draw none of these, but
#: for the charts they mark as theirs: CompareView's scatter, data-attnw-chart).
INJECTED = """() => ({
  xss: window.__xss ?? null,
  elements: document.querySelectorAll('.attnw-frame img, .attnw-frame script, ' +
    '.attnw-frame svg:not([data-attnw-chart]), .attnw-frame iframe').length,
  handlers: [...document.querySelectorAll('*')].filter(e =>
    [...e.attributes].some(a => /^on/i.test(a.name))).length,
})"""


def check(page: Any, watch: Any) -> None:
    page.wait_for_function(SHOWN_LITERALLY, arg=TOKENS, timeout=15000)
    for token in HOSTILE[:2]:  # re-render around the hostile tokens: hover, click
        assert page.evaluate(MARK, token)
        target = page.locator("[data-xss-target]").first
        target.hover()
        target.click()
        # The mark is gone if the view redrew the clicked element (NeuronView does).
        page.evaluate("() => document.querySelector('[data-xss-target]')"
                      "?.removeAttribute('data-xss-target')")  # fmt: skip
    settle_injected(page, watch)  # an injected handler would have fired by now
    assert page.evaluate(INJECTED) == {"xss": None, "elements": 0, "handlers": 0}
    assert page.evaluate(SHOWN_LITERALLY, TOKENS)  # still text after the redraws


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_tokens_are_text_in_every_view(
    kind: str, mode: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if mode == "live":
        watch = request.getfixturevalue("page_watch")
        request.getfixturevalue("solara_test")
        page = request.getfixturevalue("page_session")
        # Made after solara_test: its widgets belong to the test page's kernel.
        display(make_view(kind))
        check(page, watch)
        watch.assert_clean()
        return

    from offline_browser import open_offline

    text = make_view(kind).to_html()
    if mode == "export-no-csp":
        text, removed = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
        assert removed == 1
    path = tmp_path / f"{kind}.html"
    path.write_text(text, encoding="utf-8")
    offline = open_offline(request.getfixturevalue("browser"), path)
    try:
        check(offline.page, offline)
        offline.assert_clean()
    finally:
        offline.page.context.close()
