"""The documentation's view pages: one per view, its synced traits and a live example.

Used by scripts/docs_hooks.py. The traits table is read from the view class
(each synced trait, its type, default and help), so it cannot drift from the
code. The example is code that runs when the site builds, on the shipped demo
models; the page shows that code and, under it, the view drawn in the reader's
browser from its saved state (no kernel), as a ``to_html()`` page is.
"""

from __future__ import annotations

import ast
import html
import os
import tempfile
from dataclasses import dataclass
from typing import Any

_SETUP = """\
import attnwidget
from attnwidget import demo

model, tokenizer = demo.load("sva-encoder")
exp = attnwidget.explain(model, tokenizer, "the keys to the old cabinet",
                         methods=["raw", "rollout", "grad_attention", "input_x_gradient"])
"""


@dataclass(frozen=True)
class ViewPage:
    name: str
    example: str  # runs after _SETUP; its last line is the view
    iframe: bool = False  # a composite widget (the Explorer): shown as its saved page


VIEWS = [
    ViewPage("SaliencyView", "attnwidget.SaliencyView(exp)"),
    ViewPage("HeadView", "attnwidget.HeadView(exp)"),
    ViewPage("ModelView", "attnwidget.ModelView(exp)"),
    ViewPage("FlowView", 'attnwidget.FlowView(exp, selected_method="rollout")'),
    ViewPage("AttentionMatrixView", "attnwidget.AttentionMatrixView(exp, layer=1, head=-1)"),
    ViewPage(
        "GenerationView",
        'causal, causal_tokenizer = demo.load("sva-causal")\n'
        'gexp = attnwidget.explain_generation(causal, causal_tokenizer, "the keys to the",\n'
        "                                     max_new_tokens=4)\n"
        "attnwidget.GenerationView(gexp)",
    ),
    ViewPage(
        "ImageView",
        'vit, processor = demo.load("shapes-vit")\n'
        'record = demo.images(1, seed=0, split="test")[0]\n'
        'image_exp = attnwidget.explain(vit, processor, record.image, methods=["rollout", "raw"])\n'
        "attnwidget.ImageView(image_exp)",
    ),
    ViewPage(
        "NeuronView",
        'attnwidget.NeuronView(model, tokenizer, "the keys to the cabinet", layer=0, head=0,\n'
        "                      selected_token=2)",
    ),
    ViewPage("AttentionCalculator", "attnwidget.AttentionCalculator()"),
    ViewPage(
        "AlignmentView",
        "from attnwidget.demo import seq2seq\n\n"
        'rnn, vocab = demo.load("seq2seq-additive")\n'
        'attnwidget.AlignmentView(seq2seq.translate(rnn, vocab, "attention"))',
    ),
    ViewPage(
        "Annotator",
        'attnwidget.Annotator(["the keys to the cabinet are here", "the key is lost"],\n'
        '                     store="rationales.sqlite", annotator="you",\n'
        '                     labels=["singular", "plural"])',
    ),
    ViewPage(
        "AdjudicationView",
        "from attnwidget.annotations import Store\n\n"
        'store = Store("rationales.sqlite")\n'
        'store.add_items([{"id": "r1", "text": "the keys to the cabinet are here"},\n'
        '                 {"id": "r2", "text": "the key is lost"}])\n'
        'store.save("r1", annotator="ana", spans=[(1, 2)])  # "keys"\n'
        'store.save("r1", annotator="ben", spans=[(1, 3)])  # "keys to"\n'
        'store.save("r2", annotator="ana", spans=[(1, 2)])\n'
        'store.save("r2", annotator="ben", spans=[], no_evidence=True)\n'
        'attnwidget.AdjudicationView(store, annotators=["ana", "ben"])',
    ),
    ViewPage(
        "ExplanationRating",
        'texts = ["the keys to the cabinet", "the key to the cabinets", "the dogs near the tree"]\n'
        'exps = [attnwidget.explain(model, tokenizer, t, methods=["rollout", "input_x_gradient"])\n'
        "        for t in texts]\n"
        'attnwidget.ExplanationRating(exps, store="ratings.sqlite", annotator="you",\n'
        '                             mode="compare", seed=0)',
    ),
    ViewPage(
        "EvaluationView",
        'texts = ["the keys to the cabinet", "the key to the cabinets", "the dogs near the tree"]\n'
        'result = attnwidget.evaluate(model, tokenizer, texts, methods=["raw", "rollout"],\n'
        '                             metrics=["comprehensiveness_aopc", "sufficiency_aopc"],\n'
        "                             progress=False)\n"
        "attnwidget.EvaluationView(result)",
    ),
    ViewPage(
        "CompareView",
        'comparison = attnwidget.compare(model, tokenizer, "the keys to the old cabinet",\n'
        "                                rationale=[(1, 2)])  # the word 'keys'\n"
        'attnwidget.CompareView(comparison, selected_pair=["rollout", "input_x_gradient"])',
    ),
    ViewPage(
        "Explorer",
        'attnwidget.Explorer(model, tokenizer, "the keys to the old cabinet")',
        iframe=True,
    ),
]


def _run(code: str) -> Any:
    """Run the setup and the example in a fresh namespace; the value of its last statement."""
    namespace: dict[str, Any] = {}
    tree = ast.parse(code)
    last = tree.body.pop()
    if not isinstance(last, ast.Expr):
        raise ValueError("a view example must end with the view as an expression")
    exec(compile(tree, "<view example>", "exec"), namespace)
    return eval(compile(ast.Expression(last.value), "<view example>", "eval"), namespace)


def _traits_table(cls: type) -> str:
    import anywidget
    import ipywidgets

    base = set(anywidget.AnyWidget.class_trait_names()) | set(ipywidgets.VBox.class_trait_names())
    rows = ["| trait | type | default | meaning |", "|---|---|---|---|"]
    for name, trait in sorted(cls.class_traits(sync=True).items()):
        if name in base or name.startswith("_"):
            continue
        default = trait.default_value
        shown = "—" if isinstance(default, bytes | bytearray) else f"`{default!r}`"
        if len(shown) > 40:
            shown = "…"
        help_text = (trait.help or "").replace("|", "\\|").replace("\n", " ")
        kind = type(trait).__name__ + (" (read-only)" if trait.read_only else "")
        rows.append(f"| `{name}` | {kind} | {shown} | {help_text} |")
    if len(rows) == 2:
        return "No synced traits of its own: it links the views inside it."
    return "\n".join(rows)


def render(page: ViewPage) -> str:
    """The Markdown page of one view (runs its example)."""
    import attnwidget
    from attnwidget.views.core.standalone import exported

    cls = getattr(attnwidget, page.name)
    doc = (cls.__doc__ or "").strip().split("\n\n", 1)[0].replace("\n", " ")
    code = _SETUP + "\n" + page.example
    with tempfile.TemporaryDirectory() as folder:
        here = os.getcwd()
        os.chdir(folder)  # the Annotator's store lands in a throwaway folder
        try:
            view = _run(code)
            if page.iframe:
                saved = view.to_html()
                live = (
                    f'<iframe class="attnw-docs-frame" title="{page.name}, saved page" '
                    f'srcdoc="{html.escape(saved, quote=True)}"></iframe>'
                )
            else:
                block, replies = exported(view)
                live = "\n".join(['<div class="attnw-docs-live">', block, *replies, "</div>"])
        finally:
            os.chdir(here)
    return "\n".join(
        [
            f"# {page.name}",
            "",
            doc,
            "",
            f"API: [`attnwidget.{page.name}`](../api/views.md#attnwidget.views.{page.name}). "
            "All views: [Views](index.md).",
            "",
            "## Live example",
            "",
            "This code ran when the site was built; the view below is drawn in your "
            "browser from the state it saved (click and hover: no kernel needed; "
            "computations that need Python say so).",
            "",
            "```python",
            code.rstrip(),
            "```",
            "",
            live,
            "",
            "## Synced traits",
            "",
            "Read from the class: each trait below is one value shared by Python and the page.",
            "",
            _traits_table(cls),
            "",
        ]
    )
