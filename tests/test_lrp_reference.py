"""An independent check of "lrp": explicit, slow relevance propagation written here.

For a tiny BERT classifier and a tiny Llama LM (random weights and biases,
float64), the tests below run the model forward by hand from its weights and
then propagate relevance backwards layer by layer in *relevance form*, with
plain tensors and no autograd: every rule divides the relevance of an output
by the output and redistributes it over the inputs (Bach et al., 2015;
AttnLRP's rules, Achtibat et al., 2024). The library computes the same thing
in gradient × input form with modified backward passes; the two must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_lrp import TEXT, randomise
from tiny_models import build

import attnwidget

EPS = 0.01  # a noticeable ε: both forms must agree on the ε-rule too


def stab(z: torch.Tensor) -> torch.Tensor:
    return z + EPS * torch.where(z >= 0, 1.0, -1.0)


def linear_relevance(x, weight, z, r):
    """ε-rule: R_x = x ⊙ Wᵀ (R_z / (z + ε sign z)), z = W x + b (bias included)."""
    return x * ((r / stab(z)) @ weight)


def add_relevance(a, b, r):
    """z-rule on a sum: R_a = a / (a + b) · R."""
    return a * r / (a + b), b * r / (a + b)


def layer_norm_forward(x, weight, bias, eps):
    centred = x - x.mean(-1, keepdim=True)
    sigma = torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps)
    return centred / sigma * weight + bias, sigma


def layer_norm_relevance(x, weight, sigma, y, r):
    """σ constant, y = M x + β with M_ji = (δ_ji − 1/d) γ_j / σ; ε-rule on y."""
    v = r / stab(y) * weight / sigma
    return x * (v - v.mean(-1, keepdim=True))


def attention_relevance(q, k, v, scaling, r_out, mask=None):
    """Per head (H, n, ·): O = softmax(c·QKᵀ + mask) V; uniform rule on both matmuls,
    AttnLRP softmax rule. Returns (R_q, R_k, R_v, R_A, R_X)."""
    p = q @ k.transpose(-1, -2)
    x = scaling * p
    a = torch.softmax(x if mask is None else x + mask, dim=-1)
    o = a @ v
    ratio = r_out / (2 * o)
    r_a = a * (ratio @ v.transpose(-1, -2))
    r_v = v * (a.transpose(-1, -2) @ ratio)
    r_x = x * (r_a - a * r_a.sum(-1, keepdim=True))
    if mask is not None:
        r_x = torch.where(mask < 0, 0.0, r_x)
    half = r_x / (2 * p)  # R_P = R_X: the scaling passes relevance on
    return q * (half @ k), k * (half.transpose(-1, -2) @ q), r_v, r_a, r_x


@torch.no_grad()
def bert_reference(model, ids: list[int], target: int):
    """Explicit AttnLRP for a BertForSequenceClassification (post-LN, CLS pooler)."""
    c = model.config
    heads, dh = c.num_attention_heads, c.hidden_size // c.num_attention_heads
    emb = model.bert.embeddings
    n = len(ids)
    e = emb.word_embeddings.weight[ids]
    extra = emb.position_embeddings.weight[:n] + emb.token_type_embeddings.weight[0]
    x0 = e + extra
    h, sigma0 = layer_norm_forward(x0, emb.LayerNorm.weight, emb.LayerNorm.bias, c.layer_norm_eps)
    h0 = h
    saved = []
    for layer in model.bert.encoder.layer:
        att = layer.attention.self
        zq, zk, zv = (h @ m.weight.T + m.bias for m in (att.query, att.key, att.value))  # (n, H·dh)
        q, k, v = (z.view(n, heads, dh).transpose(0, 1) for z in (zq, zk, zv))
        a = torch.softmax(att.scaling * q @ k.transpose(-1, -2), dim=-1)
        ctx = (a @ v).transpose(0, 1).reshape(n, -1)
        dense = layer.attention.output.dense
        za = ctx @ dense.weight.T + dense.bias
        r1 = za + h
        ln1 = layer.attention.output.LayerNorm
        h1, s1 = layer_norm_forward(r1, ln1.weight, ln1.bias, c.layer_norm_eps)
        inter = layer.intermediate.dense
        u = h1 @ inter.weight.T + inter.bias
        g = torch.nn.functional.gelu(u)
        out = layer.output.dense
        w = g @ out.weight.T + out.bias
        r2 = w + h1
        ln2 = layer.output.LayerNorm
        h2, s2 = layer_norm_forward(r2, ln2.weight, ln2.bias, c.layer_norm_eps)
        saved.append(locals().copy())
        h = h2
    pooler, classifier = model.bert.pooler.dense, model.classifier
    pooled = h[0]
    pz = pooled @ pooler.weight.T + pooler.bias
    pt = torch.tanh(pz)
    logits = pt @ classifier.weight.T + classifier.bias
    # ---- relevance, from the target logit down
    r_logits = torch.zeros_like(logits)
    r_logits[target] = logits[target]
    r_pz = linear_relevance(pt, classifier.weight, logits, r_logits)  # identity through tanh
    r_h = torch.zeros_like(h)
    r_h[0] = linear_relevance(pooled, pooler.weight, pz, r_pz)
    layer_relevance = [r_h.sum(-1)]
    attention_maps = []
    for s in reversed(saved):
        r_r2 = layer_norm_relevance(s["r2"], s["ln2"].weight, s["s2"], s["h2"], r_h)
        r_w, r_h1 = add_relevance(s["w"], s["h1"], r_r2)
        r_u = linear_relevance(s["g"], s["out"].weight, s["w"], r_w)  # identity through GELU
        r_h1 = r_h1 + linear_relevance(s["h1"], s["inter"].weight, s["u"], r_u)
        r_r1 = layer_norm_relevance(s["r1"], s["ln1"].weight, s["s1"], s["h1"], r_h1)
        r_a, r_h = add_relevance(s["za"], s["h"], r_r1)
        r_ctx = linear_relevance(s["ctx"], s["dense"].weight, s["za"], r_a)
        r_o = r_ctx.view(n, heads, dh).transpose(0, 1)
        att = s["att"]
        r_q, r_k, r_v, r_att, _ = attention_relevance(s["q"], s["k"], s["v"], att.scaling, r_o)
        attention_maps.append(r_att)
        for part, module, z in ((r_q, att.query, s["zq"]), (r_k, att.key, s["zk"])):
            r_h = r_h + linear_relevance(
                s["h"], module.weight, z, part.transpose(0, 1).reshape(n, -1)
            )
        r_h = r_h + linear_relevance(
            s["h"], att.value.weight, s["zv"], r_v.transpose(0, 1).reshape(n, -1)
        )
        layer_relevance.append(r_h.sum(-1))
    r_x0 = layer_norm_relevance(x0, emb.LayerNorm.weight, sigma0, h0, r_h)
    r_e = e * r_x0 / x0
    return {
        "token": r_e.sum(-1),
        "input": r_x0.sum(-1),
        "layers": torch.stack(layer_relevance[::-1]),
        "attention": torch.stack(attention_maps[::-1]),
        "logit": float(logits[target]),
    }


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def rotate_half_transposed(x):
    half = x.shape[-1] // 2
    return torch.cat([x[..., half:], -x[..., :half]], dim=-1)


def rms_forward(x, weight, eps):
    rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x / rms


def rms_relevance(x, y, r):
    """rms constant: a diagonal map y_i = (w_i / rms) x_i; ε-rule on y."""
    return y * r / stab(y)


@torch.no_grad()
def llama_reference(model, ids: list[int], target: int):
    """Explicit AttnLRP for a LlamaForCausalLM (pre-RMSNorm, RoPE, GQA, gated MLP)."""
    c = model.config
    heads, kv_heads = c.num_attention_heads, c.num_key_value_heads
    dh = c.hidden_size // heads
    groups = heads // kv_heads
    n = len(ids)
    e = model.model.embed_tokens.weight[ids]
    positions = torch.arange(n)[None]
    cos, sin = model.model.rotary_emb(e[None], positions)
    cos, sin = cos[0], sin[0]  # (n, dh)
    mask = torch.triu(torch.full((n, n), -1e300, dtype=torch.float64), diagonal=1)
    h = e
    saved = []
    for layer in model.model.layers:
        att, mlp = layer.self_attn, layer.mlp
        eps1 = layer.input_layernorm.variance_epsilon
        n1 = rms_forward(h, layer.input_layernorm.weight, eps1)
        zq, zk, zv = (n1 @ m.weight.T for m in (att.q_proj, att.k_proj, att.v_proj))
        q = zq.view(n, heads, dh).transpose(0, 1)
        k = zk.view(n, kv_heads, dh).transpose(0, 1)
        v = zv.view(n, kv_heads, dh).transpose(0, 1)
        qr, kr = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        krep, vrep = kr.repeat_interleave(groups, 0), v.repeat_interleave(groups, 0)
        a = torch.softmax(att.scaling * qr @ krep.transpose(-1, -2) + mask, dim=-1)
        ctx = (a @ vrep).transpose(0, 1).reshape(n, -1)
        o = ctx @ att.o_proj.weight.T
        r1 = o + h
        n2 = rms_forward(r1, layer.post_attention_layernorm.weight, eps1)
        g, u = n2 @ mlp.gate_proj.weight.T, n2 @ mlp.up_proj.weight.T
        m = torch.nn.functional.silu(g) * u
        d = m @ mlp.down_proj.weight.T
        saved.append(locals().copy())
        h = d + r1
    nf = rms_forward(h, model.model.norm.weight, model.model.norm.variance_epsilon)
    logits = nf[-1] @ model.lm_head.weight.T
    r_logits = torch.zeros_like(logits)
    r_logits[target] = logits[target]
    r_nf = torch.zeros_like(nf)
    r_nf[-1] = linear_relevance(nf[-1], model.lm_head.weight, logits, r_logits)
    r_h = rms_relevance(h, nf, r_nf)
    layer_relevance = [r_h.sum(-1)]
    attention_maps = []
    for s in reversed(saved):
        mlp, att = s["mlp"], s["att"]
        r_d, r_r1 = add_relevance(s["d"], s["r1"], r_h)
        r_m = linear_relevance(s["m"], mlp.down_proj.weight, s["d"], r_d)
        r_g = r_u = r_m / 2  # uniform rule on the product, identity through SiLU
        r_n2 = linear_relevance(s["n2"], mlp.gate_proj.weight, s["g"], r_g)
        r_n2 = r_n2 + linear_relevance(s["n2"], mlp.up_proj.weight, s["u"], r_u)
        r_r1 = r_r1 + rms_relevance(s["r1"], s["n2"], r_n2)
        r_o, r_h = add_relevance(s["o"], s["h"], r_r1)
        r_ctx = linear_relevance(s["ctx"], att.o_proj.weight, s["o"], r_o)
        r_out = r_ctx.view(n, heads, dh).transpose(0, 1)
        r_qr, r_krep, r_vrep, r_att, _ = attention_relevance(
            s["qr"], s["krep"], s["vrep"], att.scaling, r_out, mask=s["mask"]
        )
        attention_maps.append(r_att)
        r_kr = r_krep.view(kv_heads, groups, n, dh).sum(1)  # shared key heads add up
        r_v = r_vrep.view(kv_heads, groups, n, dh).sum(1)

        def unrotate(x, xr, r):  # z-rule on the rotation (a linear map without bias)
            w = r / xr
            return x * (w * cos + rotate_half_transposed(w * sin))

        r_q, r_k = unrotate(s["q"], s["qr"], r_qr), unrotate(s["k"], s["kr"], r_kr)
        r_n1 = torch.zeros_like(s["n1"])
        for part, module, z in (
            (r_q, att.q_proj, s["zq"]),
            (r_k, att.k_proj, s["zk"]),
            (r_v, att.v_proj, s["zv"]),
        ):
            r_n1 = r_n1 + linear_relevance(
                s["n1"], module.weight, z, part.transpose(0, 1).reshape(n, -1)
            )
        r_h = r_h + rms_relevance(s["h"], s["n1"], r_n1)
        layer_relevance.append(r_h.sum(-1))
    return {
        "token": r_h.sum(-1),
        "input": r_h.sum(-1),
        "layers": torch.stack(layer_relevance[::-1]),
        "attention": torch.stack(attention_maps[::-1]),
        "logit": float(logits[target]),
    }


@pytest.mark.parametrize(
    ("family", "reference"), [("bert-cls", bert_reference), ("llama-lm", llama_reference)]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_lrp_equals_an_explicit_relevance_propagation(family, reference, seed) -> None:
    model, tokenizer = build(family)
    randomise(model, seed, biases=True)
    model = model.double().eval()
    exp = attnwidget.explain(
        model, tokenizer, TEXT, methods=["lrp"], method_options={"lrp": {"epsilon": EPS}}
    )
    ids = tokenizer(TEXT)["input_ids"]
    expected = reference(model, ids, exp.target_id)
    d = exp.details["lrp"]
    assert d["target_score"] == pytest.approx(expected["logit"], rel=1e-6)  # float32 out

    def close(ours, theirs) -> None:
        theirs = theirs.numpy()
        scale = np.abs(theirs).max()
        assert scale > 1e-3
        assert np.allclose(ours, theirs, rtol=0, atol=1e-5 * scale)  # float32 arrays

    close(exp.scores["lrp"], expected["token"])
    close(d["input_relevance"], expected["input"])
    close(d["layer_relevance"], expected["layers"])
    close(d["attention_relevance"], expected["attention"])
