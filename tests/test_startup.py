"""Start-up: ``import attnwidget`` loads no model code; the LRP engines register
their attention functions with transformers on first use, once, also when
several threads start at once. Each check runs in a fresh interpreter, since
this process has long imported everything.

The time itself (goal: at most 1.2× ``import torch, transformers``) is
measured by ``bench/startup.py``; a timing would be flaky on a shared machine,
so this file checks what makes it slow instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import transformers

LRP_RUNS = int(transformers.__version__.split(".")[0]) >= 5  # the engines need transformers 5


def _run(code: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_loads_no_modeling_module() -> None:
    loaded = _run(
        """
        import json, sys
        import attnwidget
        print(json.dumps(sorted(sys.modules)))
        """
    )
    modeling = [
        name
        for name in loaded
        if name.startswith("transformers.models.") and ".modeling_" in f".{name.split('.')[-1]}"
    ]
    assert modeling == [], f"import attnwidget loaded model code: {modeling[:10]}"
    # transformers.modeling_utils (where AttentionInterface lives) takes seconds to
    # import; the engines import it when a relevance pass first runs.
    assert "transformers.modeling_utils" not in loaded
    assert "attnwidget.pipeline.explain" in loaded  # the check saw a real import


@pytest.mark.skipif(not LRP_RUNS, reason="lrp and chefer2021 need transformers>=5.0")
def test_engines_register_on_first_use_once_across_threads() -> None:
    seen = _run(
        """
        import json, threading
        import numpy as np
        import attnwidget
        from attnwidget import demo
        import sys
        from attnwidget.relevance.lrp import attention
        # the module that registers attention functions with transformers
        _interface = sys.modules[attention.register_attention.__module__]

        before = sorted(_interface._REGISTERED)
        # one model per thread: explain serialises calls on one model, not across models
        models = [demo.load("sva-encoder") for _ in range(4)]
        model, tokenizer = models[0]
        from transformers import AttentionInterface
        known_before = "attnwidget_lrp" in AttentionInterface()
        calls = []
        original = _interface._register

        def counting(name, function, *, required):
            calls.append(name)
            return original(name, function, required=required)

        _interface._register = counting
        barrier = threading.Barrier(4)
        results = [None] * 4

        def work(i):
            barrier.wait()
            exp = attnwidget.explain(
                *models[i], "the keys to the cabinet are here", methods=["lrp", "chefer2021"]
            )
            results[i] = {k: v.tolist() for k, v in exp.scores.items()}

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        serial = attnwidget.explain(
            model, tokenizer, "the keys to the cabinet are here", methods=["lrp", "chefer2021"]
        )
        print(json.dumps({
            "before": before,
            "known_before": known_before,
            "calls": sorted(calls),
            "after": sorted(_interface._REGISTERED),
            "known_after": "attnwidget_lrp" in AttentionInterface(),
            "same": all(
                np.array_equal(np.asarray(r[k]), serial.scores[k])
                for r in results for k in ("lrp", "chefer2021")
            ),
        }))
        """
    )
    assert seen["before"] == [] and seen["known_before"] is False  # nothing at import
    assert seen["calls"] == ["attnwidget_chefer2021", "attnwidget_lrp"]  # once each
    assert seen["after"] == ["attnwidget_chefer2021", "attnwidget_lrp"]
    assert seen["known_after"] is True
    assert seen["same"] is True  # the threads' scores equal a serial run's
