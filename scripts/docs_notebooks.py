"""The documentation's tutorials: notebooks executed offline, turned into site pages.

Used by scripts/docs_hooks.py while ``mkdocs build`` runs. Each notebook runs
once in a fresh kernel through scripts/run_notebook.py (offline, with
``ATTNWIDGET_STATIC=1`` so every view adds its standalone rendering), its
views are brought to their final state, and the result becomes a Markdown
page. The page holds each view's saved state; the site loads the front-end
bundle once (``extra_javascript`` in mkdocs.yml), which draws every view from
that state with no kernel, as a saved ``to_html()`` page does.

Executed notebooks are cached in ``.docs-cache/`` (ignored by git) under a hash
of the notebook and of everything its outputs depend on (the package's
source, the bundle, the demo models, these scripts), so a rebuild with nothing
changed executes nothing, and a changed line of the package executes all.
A cell that raises fails the build, naming the notebook and the cell.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbconvert import MarkdownExporter

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".docs-cache" / "notebooks"
sys.path.insert(0, str(ROOT / "scripts"))
import run_notebook  # noqa: E402  (scripts/ is not a package)


@dataclass(frozen=True)
class Tutorial:
    """One notebook shown as a page: ``tutorials/<slug>.md``."""

    slug: str
    source: Path  # relative to the repository root
    section: str  # the nav group it belongs to

    @property
    def uri(self) -> str:
        return f"tutorials/{self.slug}.md"


def _inputs_hash() -> str:
    """A hash of what every notebook's outputs depend on, besides the notebook."""
    digest = hashlib.sha256()
    roots = [ROOT / "attnwidget", ROOT / "scripts" / "run_notebook.py", Path(__file__)]
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in files:
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _cached_path(tutorial: Tutorial, inputs: str) -> Path:
    digest = hashlib.sha256(inputs.encode() + (ROOT / tutorial.source).read_bytes()).hexdigest()
    return CACHE / f"{tutorial.slug}-{digest[:16]}.ipynb"


def _execute(tutorial: Tutorial, target: Path) -> None:
    nb = run_notebook.execute(ROOT / tutorial.source, timeout=600, kernel="python3")
    run_notebook.make_static(nb)  # views at their final state; the bundle comes from the site
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f"{tutorial.slug}-*.ipynb"):
        stale.unlink()
    partial = target.with_suffix(".partial")
    nbformat.write(nb, partial)
    partial.replace(target)  # a build stopped midway leaves no half-written cache entry


def execute_all(tutorials: list[Tutorial], *, log: object = None) -> dict[str, Path]:
    """Execute the notebooks not cached yet (in parallel); slug -> executed notebook.

    Raises :class:`run_notebook.NotebookFailed` naming the notebook and its
    failing cell when one does not run to the end.
    """
    inputs = _inputs_hash()
    paths = {t.slug: _cached_path(t, inputs) for t in tutorials}
    if os.environ.get("ATTNWIDGET_DOCS_STALE_OK", "") == "1":
        # While writing prose: keep an older execution of an unchanged-looking
        # notebook instead of running it again after the package changed.
        for tutorial in tutorials:
            older = sorted(CACHE.glob(f"{tutorial.slug}-*.ipynb"))
            if not paths[tutorial.slug].is_file() and older:
                print(f"docs: ATTNWIDGET_DOCS_STALE_OK=1, reusing {older[-1].name}")
                paths[tutorial.slug] = older[-1]
    todo = [t for t in tutorials if not paths[t.slug].is_file()]
    workers = max(1, int(os.environ.get("ATTNWIDGET_DOCS_WORKERS", "2")))

    def run(tutorial: Tutorial) -> None:
        try:
            _execute(tutorial, paths[tutorial.slug])
        except run_notebook.NotebookFailed as error:
            raise run_notebook.NotebookFailed(f"{tutorial.source}: {error}") from None

    if todo:
        print(f"docs: executing {len(todo)} of {len(tutorials)} notebooks ({workers} at a time)")
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(run, t) for t in todo]:
                future.result()
    return paths


#: The bundle's inline copy in an output, if any: the site loads it once instead.
_BUNDLE = re.compile(re.escape(run_notebook.BUNDLE_OPEN_TAG) + r".*?</script>", re.DOTALL)


def to_markdown(tutorial: Tutorial, executed: Path) -> tuple[str, dict[str, bytes]]:
    """The executed notebook as a Markdown page and its image files (by site path).

    Markdown, not HTML: the site's theme styles the code and the search indexes
    the text. A view's output stays the raw HTML of its saved state.
    """
    nb = nbformat.read(executed, as_version=4)
    for cell in nb.cells:
        # transformers' weight-loading progress bars (stderr) say nothing to a reader.
        cell["outputs"] = [o for o in cell.get("outputs", []) if not _is_loading_bar(o)]
    files_dir = f"{tutorial.slug}_files"
    exporter = MarkdownExporter()
    body, resources = exporter.from_notebook_node(
        nb, resources={"output_files_dir": files_dir, "unique_key": tutorial.slug}
    )
    body = _BUNDLE.sub("", body)
    source = tutorial.source.as_posix()
    note = (
        f'!!! note "Executed when the site was built"\n'
        f"    From `{source}`: every cell ran offline on the shipped demo models, and each "
        f"view below is drawn in your browser from the state saved in this page (no kernel).\n\n"
    )
    # The notebook's title heads the page; the note goes right after it.
    first, _, rest = body.lstrip().partition("\n")
    page = f"{first}\n\n{note}{rest}" if first.startswith("# ") else note + body
    images = {f"tutorials/{name}": data for name, data in resources.get("outputs", {}).items()}
    return page, images


def _is_loading_bar(output: dict) -> bool:
    return (
        output.get("output_type") == "stream"
        and output.get("name") == "stderr"
        and all(
            line.startswith("Loading weights") or not line.strip()
            for line in "".join(output.get("text", "")).replace("\r", "\n").splitlines()
        )
    )


def title_of(executed_or_source: Path) -> str:
    """The notebook's first Markdown heading (its title in the nav)."""
    nb = nbformat.read(executed_or_source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return executed_or_source.stem
