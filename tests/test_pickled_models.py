"""A model pickled in one process and explained in another gives the same scores.

transformers (5.x) records attention only for model classes whose
``__init__`` ran in the current process; an unpickled model (a Dask worker,
``torch.load`` of a whole model, multiprocessing) never ran it there and used
to return no attention at all ("the model returned no attention weights").
The capture registers the classes again. The second process here is a real,
fresh Python interpreter.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel

import attnwidget
from attnwidget import demo

TEXT = "the keys to the old cabinet"
METHODS = ["raw", "rollout", "grad_attention", "lrp"]

CHILD = textwrap.dedent(
    """
    import pickle, sys
    import numpy as np
    import torch
    import attnwidget
    for path, how, out in zip(*[iter(sys.argv[1:])] * 3):
        if how == "torch":
            model, tokenizer = torch.load(path, weights_only=False)
        else:
            with open(path, "rb") as handle:
                model, tokenizer = pickle.load(handle)
        exp = attnwidget.explain(model, tokenizer, {text!r}, methods={methods!r})
        np.savez(out, **{{m: exp.scores[m] for m in {methods!r}}})
    """
).format(text=TEXT, methods=METHODS)


def tiny_gpt2() -> tuple[torch.nn.Module, object]:
    _, tokenizer = demo.load("sva-causal")  # any tokenizer with these words
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=64)
    return GPT2LMHeadModel(config).eval(), tokenizer


MODELS = {
    "sva-encoder": lambda: demo.load("sva-encoder"),
    "sva-causal": lambda: demo.load("sva-causal"),
    "tiny-gpt2": tiny_gpt2,
}


def test_unpickled_models_in_a_fresh_process_explain_like_the_originals(tmp_path: Path) -> None:
    # One fresh interpreter for every case (its start-up is most of the cost);
    # each model arrives both ways: pickle and torch.save of the whole model.
    expected, arguments = {}, []
    for name, build in MODELS.items():
        model, tokenizer = build()
        expected[name] = attnwidget.explain(model, tokenizer, TEXT, methods=METHODS)
        for how in ("pickle", "torch"):
            path = tmp_path / f"{name}-{how}.bin"
            if how == "torch":
                torch.save((model, tokenizer), path)
            else:
                path.write_bytes(pickle.dumps((model, tokenizer)))
            arguments += [str(path), how, str(tmp_path / f"{name}-{how}.npz")]
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), *arguments], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name, exp in expected.items():
        for how in ("pickle", "torch"):
            with np.load(tmp_path / f"{name}-{how}.npz") as got:
                for method in METHODS:
                    np.testing.assert_allclose(
                        got[method],
                        exp.scores[method],
                        rtol=1e-5,
                        atol=1e-7,
                        err_msg=f"{name}, {how}, {method}",
                    )
