"""attnwidget's views in marimo: run with ``marimo edit examples/marimo_views.py``.

Each view is an anywidget: ``mo.ui.anywidget(view)`` shows it, and a cell that
reads the wrapper's ``.value`` runs again when the page changes a trait (a
click on a token). The Explorer is an ipywidgets box, which marimo does not
draw; here its views go into marimo's own tabs and its text comes from a marimo
text box (docs/hosts/marimo.md says why). tests/test_marimo.py serves this file
with ``marimo run`` and drives it in headless Chromium.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    import attnwidget
    from attnwidget import demo

    return attnwidget, demo, mo


@app.cell
def _(attnwidget, demo):
    # A tiny model shipped with attnwidget: nothing is downloaded.
    model, tokenizer = demo.load("sva-encoder")
    exp = attnwidget.explain(model, tokenizer, "the keys to the cabinet")
    return exp, model, tokenizer


@app.cell
def _(attnwidget, exp, mo):
    saliency = mo.ui.anywidget(attnwidget.SaliencyView(exp))
    saliency
    return (saliency,)


@app.cell
def _(exp, mo, saliency):
    # Runs again on every click on a token of the SaliencyView above.
    picked = saliency.value["selected_token"]
    mo.md(f"Picked token: **{exp.tokens[picked] if picked >= 0 else 'none'}**")
    return


@app.cell
def _(exp, mo):
    layer = mo.ui.dropdown(
        options=[str(i) for i in range(exp.num_layers)], value="0", label="HeadView layer"
    )
    layer
    return (layer,)


@app.cell
def _(attnwidget, exp, mo):
    heads = mo.ui.anywidget(attnwidget.HeadView(exp))
    heads
    return (heads,)


@app.cell
def _(heads, layer):
    # A change from Python: the view above redraws the chosen layer.
    heads.layer = int(layer.value)
    return


@app.cell
def _(attnwidget, exp, mo):
    flow = mo.ui.anywidget(attnwidget.FlowView(exp, selected_method="rollout"))
    flow
    return (flow,)


@app.cell
def _(attnwidget, model, tokenizer):
    explorer = attnwidget.Explorer(model, tokenizer, "the author that the critics praise")
    return (explorer,)


@app.cell
def _(mo):
    text = mo.ui.text(value="the author that the critics praise", label="Explorer text")
    text
    return (text,)


@app.cell
def _(explorer, text):
    # Setting the text re-explains it; the views are updated in place. The
    # Explorer's own display in marimo: its status line and its views in tabs.
    explorer.text = text.value
    explorer
    return


if __name__ == "__main__":
    app.run()
