"""The subpackages the docs name are reachable from a plain `import attnwidget`."""

from __future__ import annotations

import subprocess
import sys


def test_subpackages_load_on_first_use_in_a_fresh_interpreter() -> None:
    code = (
        "import sys, attnwidget, inspect\n"
        # numba (attention flow's compiled solver, ~0.5 s) loads on first use only
        "assert 'numba' not in sys.modules\n"
        "assert inspect.isclass(attnwidget.annotations.Store)\n"
        "assert callable(attnwidget.teach.attention_scores)\n"
        "assert callable(attnwidget.metrics.cohen_kappa)\n"
        "assert callable(attnwidget.demo.load)\n"
        "assert callable(attnwidget.evaluate)\n"
        "assert callable(attnwidget.diagnostics.uniform_baseline)\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_views_are_public_names() -> None:
    import attnwidget
    import attnwidget.views

    for name in (
        "AdjudicationView",
        "AlignmentView",
        "AttentionCalculator",
        "ImageView",
        "HeadView",
        "NeuronView",
        "SaliencyView",
    ):
        assert name in attnwidget.__all__ and name in attnwidget.views.__all__
        assert getattr(attnwidget, name) is getattr(attnwidget.views, name)
