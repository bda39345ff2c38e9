"""An Explorer as ONE offline page: every tab's view, the tabs switched by CSS alone.

The page is :func:`attnwidget.views.core.standalone.document`'s locked-down
document (no network, only the bundle may run) holding each view's state
block and recorded replies, the bundle once, and a tab bar made of radio
buttons and labels: a checked radio shows its panel through a CSS sibling
rule, so switching tabs needs no script of its own. Hidden panels keep
their width (``visibility: hidden; height: 0``) so every view lays out
when drawn, as it would in a visible panel.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from attnwidget.views.core.standalone import bundle_script, document, exported, widget_bundle

#: Scoped to the page's root class: no rule reaches a view's own elements.
_TABS_CSS = """
.attnw-explorer-page > input.attnw-xtab { position: absolute; opacity: 0; }
.attnw-explorer-page > .attnw-xtab-bar { display: flex; gap: 4px; margin: 8px 0; }
.attnw-explorer-page > .attnw-xtab-bar > label { padding: 4px 12px; cursor: pointer;
  border: 1px solid #bbb; border-radius: 4px 4px 0 0; }
.attnw-explorer-page > .attnw-xtab-panel { visibility: hidden; height: 0; overflow: hidden; }
.attnw-explorer-page > .attnw-xtab-status { margin: 4px 0; color: #444; }
"""


def _tab_rules(count: int) -> str:
    rules = []
    for k in range(count):
        rules.append(
            f".attnw-explorer-page > #attnw-xtab-{k}:checked ~ .attnw-xtab-panel-{k} "
            "{ visibility: visible; height: auto; overflow: visible; }"
        )
        rules.append(
            f".attnw-explorer-page > #attnw-xtab-{k}:checked ~ .attnw-xtab-bar > "
            f"label[for=attnw-xtab-{k}] {{ font-weight: 600; border-bottom-color: transparent; }}"
        )
        rules.append(
            f".attnw-explorer-page > #attnw-xtab-{k}:focus-visible ~ .attnw-xtab-bar > "
            f"label[for=attnw-xtab-{k}] {{ outline: 2px solid #0072b2; }}"
        )
    return "\n".join(rules)


def explorer_page(title: str, views: Sequence[tuple[str, Any]], lines: Sequence[str] = ()) -> str:
    """The page of ``views`` ((tab title, view) pairs, the first shown) under ``lines``."""
    if not views:
        raise ValueError("nothing to save: the Explorer shows no explanation yet.")
    bundle = bundle_script(widget_bundle(views[0][1]))
    radios, labels, panels, replies = [], [], [], []
    for k, (name, view) in enumerate(views):
        block, view_replies = exported(view)
        checked = " checked" if k == 0 else ""
        radios.append(
            f'<input type="radio" class="attnw-xtab" name="attnw-xtab" id="attnw-xtab-{k}"'
            f"{checked}>"
        )
        labels.append(f'<label for="attnw-xtab-{k}">{html.escape(name)}</label>')
        panels.append(
            f'<div class="attnw-xtab-panel attnw-xtab-panel-{k}" data-tab="{html.escape(name)}">'
            f"\n{block}\n</div>"
        )
        replies.extend(view_replies)
    status = [f'<div class="attnw-xtab-status">{html.escape(line)}</div>' for line in lines]
    body = [
        f"<h1>{html.escape(title)}</h1>",
        '<div class="attnw-explorer-page">',
        *status,
        *radios,
        f'<div class="attnw-xtab-bar" role="tablist">{"".join(labels)}</div>',
        *panels,
        "</div>",
    ]
    return document(title, body, bundle, replies, css=_TABS_CSS + _tab_rules(len(views)))
