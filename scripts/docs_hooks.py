"""mkdocs hooks (mkdocs.yml ``hooks:``): the pages made while the site builds.

- Tutorials: the notebooks of :data:`TUTORIALS`, executed (scripts/docs_notebooks.py);
- Methods: one page per registered method, from ``attnwidget.method_info`` plus
  the formula and caveats written in ``docs/methods/_notes/<name>.md``;
- Views: one page per view, its synced traits and a live example
  (scripts/docs_views.py);
- Hosts: whatever ``docs/hosts/*.md`` holds when the site builds;
- the front-end bundle, copied from ``attnwidget/static/widget.js``, which every
  page loads once to draw the views saved in it.

Generated pages exist only in the built site, so they cannot go stale in git.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import docs_notebooks  # noqa: E402
import docs_views  # noqa: E402
from docs_notebooks import Tutorial  # noqa: E402

DOCS = ROOT / "docs"
BUNDLE_URI = "assets/attnwidget/widget.js"
VIEW_CACHE = ROOT / ".docs-cache" / "views"

TUTORIALS = [
    Tutorial("quickstart", Path("notebooks/quickstart.ipynb"), "Explore"),
    Tutorial("images", Path("notebooks/images.ipynb"), "Explore"),
    Tutorial("long-inputs", Path("docs/tutorials/long_inputs.ipynb"), "Explore"),
    Tutorial("generation", Path("docs/tutorials/generation.ipynb"), "Explore"),
    Tutorial("embeddings", Path("docs/tutorials/embeddings.ipynb"), "Explore"),
    Tutorial("annotate", Path("docs/tutorials/annotate.ipynb"), "Annotate and evaluate"),
    Tutorial("annotate-team", Path("docs/tutorials/annotate_team.ipynb"), "Annotate and evaluate"),
    Tutorial("evaluate", Path("docs/tutorials/evaluate.ipynb"), "Annotate and evaluate"),
    *(
        Tutorial(p.stem.replace("_", "-"), p.relative_to(ROOT), "Teaching lessons")
        for p in sorted((ROOT / "notebooks" / "teaching").glob("[0-9]*.ipynb"))
    ),
]

#: Nav entries (a section's index page) that the hook fills with generated pages.
_EXPANDED = ("tutorials/index.md", "methods/index.md", "views/index.md")


def _title(markdown: str, fallback: str) -> str:
    found = re.search(r"^# (.+)$", markdown, re.MULTILINE)
    return found.group(1).strip() if found else fallback


def _method_names() -> list[str]:
    import attnwidget

    return list(attnwidget.available_methods())


def _hosts_nav() -> list[dict[str, str]]:
    """One entry per docs/hosts/*.md present now (pages may arrive later)."""
    pages = sorted((DOCS / "hosts").glob("*.md"))
    index = [p for p in pages if p.name == "index.md"]
    rest = [p for p in pages if p.name != "index.md"]
    return [
        {_title(p.read_text(encoding="utf-8"), p.stem): f"hosts/{p.name}"} for p in index + rest
    ]


def _tutorials_nav() -> list[Any]:
    nav: list[Any] = ["tutorials/index.md"]
    for section in dict.fromkeys(t.section for t in TUTORIALS):
        nav.append(
            {
                section: [
                    {docs_notebooks.title_of(ROOT / t.source): t.uri}
                    for t in TUTORIALS
                    if t.section == section
                ]
            }
        )
    return nav


def on_config(config: Any) -> Any:
    """Fill the nav's Tutorials, Methods, Views and Hosts sections."""
    generated = {
        "tutorials/index.md": _tutorials_nav(),
        "methods/index.md": ["methods/index.md", *(f"methods/{m}.md" for m in _method_names())],
        "views/index.md": [
            "views/index.md",
            *(f"views/{v.name}.md" for v in docs_views.VIEWS),
            "bertviz.md",
        ],
    }
    nav: list[Any] = []
    for entry in config["nav"]:
        (name, value), *_ = entry.items() if isinstance(entry, dict) else [(None, entry)]
        if isinstance(value, str) and value in generated:
            nav.append({name: generated[value]})
        elif value == "hosts/":
            hosts = _hosts_nav()
            if hosts:  # no section until a host page exists
                nav.append({name: hosts})
        else:
            nav.append(entry)
    config["nav"] = nav
    return config


def _method_page(name: str) -> str:
    import attnwidget

    info = attnwidget.method_info(name)
    notes_path = DOCS / "methods" / "_notes" / f"{name}.md"
    if not notes_path.is_file():
        raise FileNotFoundError(
            f"the method {name!r} has no docs/methods/_notes/{name}.md (its formula and caveats)"
        )
    rows = ["| option | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    for option in info.options:
        types = option.types if isinstance(option.types, tuple) else (option.types,)
        kind = " or ".join(getattr(t, "__name__", str(t)) for t in types)
        allowed = ", ".join(f"`{c!r}`" for c in option.choices) if option.choices else ""
        allowed = allowed or option.requirement
        meaning = option.doc.replace("|", "\\|")
        rows.append(f"| `{option.name}` | {kind} | `{option.default!r}` | {allowed} | {meaning} |")
    options = "\n".join(rows) if info.options else "This method takes no options."
    needs = ", ".join(f"`{n}`" for n in sorted(info.needs)) or "nothing beyond the scores"
    return "\n".join(
        [
            f"# `{name}`",
            "",
            info.summary,
            "",
            "| | |",
            "|---|---|",
            f"| paper | {info.reference} |",
            f"| explains | {info.explains} |",
            f"| needs from the run | {needs} |",
            f"| signed scores | {'yes' if info.signed else 'no'} |",
            "",
            "## Options",
            "",
            "Given as `method_options={" + repr(name) + ": {...}}` to `explain`; checked "
            "before the model runs. The table is `attnwidget.method_info(" + repr(name) + ")`.",
            "",
            options,
            "",
            notes_path.read_text(encoding="utf-8").strip(),
            "",
        ]
    )


def _view_page(page: docs_views.ViewPage) -> str:
    """A view's page, cached under the hash of the package and the docs scripts."""
    inputs = docs_notebooks._inputs_hash() + (ROOT / "scripts" / "docs_views.py").read_text()
    key = hashlib.sha256((inputs + page.name).encode()).hexdigest()[:16]
    cached = VIEW_CACHE / f"{page.name}-{key}.md"
    if not cached.is_file():
        text = docs_views.render(page)
        VIEW_CACHE.mkdir(parents=True, exist_ok=True)
        for stale in VIEW_CACHE.glob(f"{page.name}-*.md"):
            stale.unlink()
        cached.write_text(text, encoding="utf-8")
    return cached.read_text(encoding="utf-8")


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages and the bundle to the site's files."""

    def add(uri: str, content: str | bytes) -> None:
        files.append(File.generated(config, uri, content=content))

    bundle = ROOT / "attnwidget" / "static" / "widget.js"
    if not bundle.is_file():
        raise FileNotFoundError(f"{bundle} is missing: build it first (cd js && npm run build)")
    add(BUNDLE_URI, bundle.read_bytes())

    executed = docs_notebooks.execute_all(TUTORIALS)
    for tutorial in TUTORIALS:
        page, images = docs_notebooks.to_markdown(tutorial, executed[tutorial.slug])
        add(tutorial.uri, page)
        for uri, data in images.items():
            add(uri, data)
    for name in _method_names():
        add(f"methods/{name}.md", _method_page(name))
    for view in docs_views.VIEWS:
        add(f"views/{view.name}.md", _view_page(view))
    return files
