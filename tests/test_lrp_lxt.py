"""Compare "lrp" with LXT, the AttnLRP authors' library (optional: ``pip install lxt``).

LXT's efficient mode patches model *classes* in place (and ``torch.nn.LayerNorm``
itself), so it runs in a subprocess; the model weights and token ids are
passed through files. Two adaptations to run lxt 2.1 on transformers 5, both
outside lxt's rules:

* lxt replaces a model module's ``ALL_ATTENTION_FUNCTIONS`` by a plain dict,
  while transformers 5 calls ``ALL_ATTENTION_FUNCTIONS.get_interface``; a
  shim with that method is put back around lxt's dict.
* lxt's own BERT is a copy of transformers 4 code that does not import on
  transformers 5 (``transformers.modeling_attn_mask_utils`` is gone), and
  ``lxt.efficient``'s ``__init__`` imports it; the package is registered
  without running that ``__init__``, lxt's GPT-2 and Llama patch tables are
  loaded from their files, and for stock BERT and CamemBERT (RoBERTa's
  structure, which lxt does not list) the test applies lxt's own patch
  functions (LayerNorm, attention wrapper, identity rule on the activation
  modules) the way lxt's GPT-2 and Llama tables do; for Gemma (lxt lists
  Gemma 3, whose MLP and ``(1 + w)`` RMSNorm Gemma shares) lxt's Gemma 3 patch
  functions are applied to Gemma's classes.

Families lxt 2.1 does not cover (ALBERT, Phi-3's fused projections, GPT-NeoX,
OPT, Mixtral) are checked by conservation only (tests/test_lrp.py).

With ε = 0 (lxt has no ε on linear layers) the two must agree up to float32
rounding.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from test_lrp import randomise, text_for
from tiny_models import build

import attnwidget

LXT = importlib.util.find_spec("lxt") is not None

pytestmark = pytest.mark.skipif(
    not LXT, reason="lxt is not installed (optional: pip install --no-deps lxt)"
)

RUNNER = textwrap.dedent(
    """
    import importlib.util, json, sys, types
    import lxt
    # lxt.efficient's __init__ imports its transformers-4 BERT copy, which fails on
    # transformers 5: register the package without running that __init__.
    package = types.ModuleType("lxt.efficient")
    package.__path__ = [lxt.__path__[0] + "/efficient"]
    sys.modules["lxt.efficient"] = package
    import numpy as np, torch, transformers as tf
    from functools import partial
    from lxt.efficient import patches

    work = sys.argv[1]
    spec = json.load(open(f"{work}/spec.json"))

    class Shim(dict):
        def get_interface(self, name, default):
            return self.get(name, default)

    def lxt_table(name):
        path = package.__path__[0] + f"/models/{name}.py"
        module_spec = importlib.util.spec_from_file_location(f"lxt_{name}_table", path)
        table = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(table)
        return table

    if spec["family"] in ("gpt2", "llama"):  # lxt's own tables
        for target, patch in lxt_table(spec["family"]).attnLRP.items():
            assert patch(target), target
        if spec["family"] == "gpt2":
            from transformers.models.gpt2 import modeling_gpt2 as modeling
            model = tf.GPT2LMHeadModel(tf.GPT2Config.from_dict(spec["config"]))
        else:
            from transformers.models.llama import modeling_llama as modeling
            model = tf.LlamaForCausalLM(tf.LlamaConfig.from_dict(spec["config"]))
    elif spec["family"] == "gemma":
        # Gemma 1 has Gemma 3's MLP and RMSNorm ((1 + w) x / rms): lxt's Gemma 3
        # patch functions applied to Gemma's classes the way its Gemma 3 table does.
        from transformers.models.gemma import modeling_gemma as modeling
        gemma3 = lxt_table("gemma3")
        table = {
            modeling.GemmaMLP: partial(patches.patch_method, patches.gated_mlp_forward),
            modeling.GemmaRMSNorm: partial(
                patches.patch_method, gemma3.gemma3_norm, method_name="_norm"
            ),
            modeling: patches.patch_attention,
        }
        for target, patch in table.items():
            assert patch(target), target
        model = tf.GemmaForCausalLM(tf.GemmaConfig.from_dict(spec["config"]))
    else:
        from torch.nn import Dropout, LayerNorm, Tanh
        from transformers.activations import GELUActivation
        if spec["family"] == "bert":
            from transformers.models.bert import modeling_bert as modeling
        else:  # CamemBERT: RoBERTa's structure; its LM head's gelu is a GELUActivation
            from transformers.models.camembert import modeling_camembert as modeling
        table = {
            LayerNorm: partial(patches.patch_method, patches.layer_norm_forward),
            Dropout: partial(patches.patch_method, patches.dropout_forward),
            GELUActivation: partial(
                patches.patch_method, patches.non_linear_forward, keep_original=True
            ),
            Tanh: partial(patches.patch_method, patches.non_linear_forward, keep_original=True),
            modeling: patches.patch_attention,
        }
        for target, patch in table.items():
            assert patch(target), target
        if spec["family"] == "bert":
            model = tf.BertForSequenceClassification(tf.BertConfig.from_dict(spec["config"]))
        else:
            model = tf.CamembertForMaskedLM(tf.CamembertConfig.from_dict(spec["config"]))
    modeling.ALL_ATTENTION_FUNCTIONS = Shim(modeling.ALL_ATTENTION_FUNCTIONS)
    model.load_state_dict(torch.load(f"{work}/weights.pt"))
    model.set_attn_implementation("eager")
    model.eval()
    ids = torch.tensor([spec["ids"]])
    embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    logits = model(inputs_embeds=embeds).logits
    row = spec["row"]
    logit = logits[0, spec["target"]] if logits.ndim == 2 else logits[0, row, spec["target"]]
    logit.backward()
    np.save(f"{work}/relevance.npy", (embeds * embeds.grad)[0].sum(-1).detach().numpy())
    """
)


@pytest.mark.parametrize("family", ["gpt2-lm", "bert-cls", "llama-lm", "gemma-lm", "camembert-mlm"])
@pytest.mark.parametrize("seed", [0, 1])
def test_lrp_matches_lxt(family: str, seed: int, tmp_path: Path) -> None:
    model, tokenizer = build(family)
    randomise(model, seed, biases=True)
    text = text_for(family, tokenizer)
    exp = attnwidget.explain(
        model, tokenizer, text, methods=["lrp"], method_options={"lrp": {"epsilon": 0.0}}
    )
    torch.save(model.state_dict(), tmp_path / "weights.pt")
    spec = {
        "family": family.split("-")[0],
        "config": model.config.to_dict(),
        "ids": tokenizer(text)["input_ids"],
        "row": exp.query_index,
        "target": exp.target_id,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "runner.py").write_text(RUNNER)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "runner.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = np.load(tmp_path / "relevance.npy")
    ours = exp.scores["lrp"]
    scale = np.abs(theirs).max()
    assert scale > 1e-2
    gap = np.abs(ours - theirs).max() / scale
    print(f"{family} seed={seed}: max |ours - lxt| / max |lxt| = {gap:.1e}")
    assert np.allclose(ours, theirs, rtol=0, atol=1e-4 * scale), np.abs(ours - theirs).max()
