"""chefer2021 on Vision Transformers equals Chefer, Gur & Wolf's (CVPR 2021) algorithm.

The image counterpart of ``test_chefer2021_reference`` (read that first), and
as independent of attnwidget: :class:`VitReference` recomputes the forward
pass of a Hugging Face ``ViTForImageClassification`` or
``DeiTForImageClassification`` from the model's weights in float64 — the
patch embedding (a convolution with stride = kernel = patch size), the CLS
(and DeiT's distillation) token, the position embeddings (interpolated
bicubically to another grid, as ``interpolate_pos_encoding`` does), the
pre-LN blocks ``x + attn(LN1(x))``, ``x + MLP(LN2(x))``, the final
LayerNorm and the classifier on the CLS token — takes the plain gradient of
the target logit with respect to each attention map by autograd on that
forward, and propagates relevance by hand, module by module, with the
authors' rules (``shared/reference/methods.md``, ``vision.md``): a one-hot
start at the target logit; α = 1, β = 0 on every linear layer (bias not an
input); LayerNorm, GELU, softmax and the scaling passed unchanged; residual
additions split by gradient × input and re-normalised over the whole
tensor; both attention matmuls split by gradient × input and halved; the
halved ``R_A`` of ``A·V`` kept as ``R^{A_l}``. Relevance stops at the first
block's input (the authors' rollout needs nothing below it). Then
``Ā_l = I + E_h[(∇A_l ⊙ R^{A_l})⁺]``, rows *not* normalised (in their ViT
code, ``baselines/ViT/ViT_LRP.py``'s ``compute_rollout_attention``, the
normalising line is commented out; their BERT code keeps it), rolled out
from ``start_layer`` with later layers on the left; the map is the CLS row
without the special columns (their ``rollout[:, 0, 1:]``). With
``normalise=True`` the reference divides the rows as their BERT code does,
to check the option ``row_normalise=True`` on images.

Compared: our patch scores with theirs after min–max renormalisation over
the patches, within 1e-4, at ``start_layer=1`` (the authors' ViT setting)
and 0, at the default 32×32 and at 48×48 (``interpolate_pos_encoding``);
the raw rows too, and every layer's ``R^{A_l}`` on a float64 copy.

The same reference, extended by our rules for heads the authors never had
(``test_chefer2021_vit_heads``), also covers DeiT with a teacher, BEiT (its
relative position bias rebuilt by hand, default grid only) and Dinov2 (its
first block's input, after Dinov2's own position interpolation, read off a
float64 copy of the model): see the ``head`` and layer-scale branches.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from test_chefer2021_reference import Reference, div
from tiny_vision import SMALL, VISION_FAMILIES

import attnwidget

F = torch.nn.functional
linear, add, matmul = Reference.linear, Reference.add, Reference.matmul


# ---- the reference ------------------------------------------------------------------


class VitReference:
    """A HF image classifier (ViT family) recomputed from its weights in float64."""

    def __init__(self, model: torch.nn.Module) -> None:
        config = model.config
        self.name = type(model).__name__
        self.prefix = model.base_model_prefix + "."
        self.w = {k: v.detach().double() for k, v in model.state_dict().items()}
        self.layers, self.heads = config.num_hidden_layers, config.num_attention_heads
        self.patch, self.eps = config.patch_size, config.layer_norm_eps
        self.grid = config.image_size // config.patch_size
        self.dinov2 = self.name.startswith("Dinov2")
        self.registers = getattr(config, "num_register_tokens", 0) if self.dinov2 else 0
        self.specials = 2 if self.name.startswith("DeiT") else 1 + self.registers
        self.model = model

    def p(self, name: str) -> torch.Tensor:
        return self.w[self.prefix + name]

    def layer(self, index: int) -> str:
        return f"encoder.layer.{index}." if self.dinov2 else f"layers.{index}."

    def names(self) -> dict[str, str | None]:
        """A block's two LayerNorms and its two layer scales (None: no layer scale)."""
        if self.dinov2:
            scales = ("layer_scale1.lambda1", "layer_scale2.lambda1")
            return dict(zip(("ln1", "ln2", "s1", "s2"), ("norm1", "norm2", *scales), strict=True))
        scales = ("lambda_1", "lambda_2") if self.name.startswith("Beit") else (None, None)
        norms = ("layernorm_before", "layernorm_after")
        return dict(zip(("ln1", "ln2", "s1", "s2"), (*norms, *scales), strict=True))

    def norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        """LayerNorm with the gain and bias stored under ``name``."""
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        gain, bias = self.p(name + ".weight"), self.p(name + ".bias")
        return (x - mean) / torch.sqrt(var + self.eps) * gain + bias

    def embed(self, pixels: torch.Tensor) -> torch.Tensor:
        """The first block's input (n, D), from the pixels (1, 3, H, W)."""
        if self.dinov2:  # Dinov2's own interpolation, read off a float64 copy of the model
            kept = {}
            wide = copy.deepcopy(self.model).double()
            block = wide.get_submodule(self.prefix + "encoder.layer.0")
            hook = block.register_forward_pre_hook(lambda _m, a: kept.setdefault("x", a[0]))
            with torch.no_grad():
                wide(pixel_values=pixels.double())
            hook.remove()
            return kept["x"][0]
        w = self.p("embeddings.patch_embeddings.projection.weight")
        b = self.p("embeddings.patch_embeddings.projection.bias")
        patches = F.conv2d(pixels.double(), w, b, stride=self.patch)[0]  # (D, h, w)
        h, wd = patches.shape[1:]
        patches = patches.flatten(1).T  # row-major over the grid, as HF flattens
        tokens = [self.p("embeddings.cls_token")[0]]
        if self.specials == 2:
            tokens.append(self.p("embeddings.distillation_token")[0])
        x = torch.cat([*tokens, patches])
        if self.name.startswith("Beit"):  # relative position bias instead (see bias())
            return x
        pos = self.p("embeddings.position_embeddings")[0]
        special, grid = pos[: self.specials], pos[self.specials :]
        if (h, wd) != (self.grid, self.grid):  # interpolate_pos_encoding: bicubic resize
            grid = grid.reshape(1, self.grid, self.grid, -1).permute(0, 3, 1, 2)
            grid = F.interpolate(grid, size=(h, wd), mode="bicubic", align_corners=False)
            grid = grid.permute(0, 2, 3, 1).reshape(h * wd, -1)
        return x + torch.cat([special, grid])

    def bias(self, index: int, n: int) -> torch.Tensor | float:
        """BEiT's relative position bias (H, n, n) at the default grid; 0 elsewhere."""
        if not self.name.startswith("Beit"):
            return 0.0
        g = self.grid
        assert n == g * g + 1, "the reference builds BEiT's bias at the default grid only"
        table = self.p(self.layer(index) + "relative_position_bias.relative_position_bias_table")
        distances = (2 * g - 1) ** 2
        ys, xs = np.divmod(np.arange(g * g), g)
        rel = (ys[:, None] - ys[None] + g - 1) * (2 * g - 1) + (xs[:, None] - xs[None] + g - 1)
        idx = np.zeros((n, n), dtype=np.int64)
        idx[1:, 1:] = rel
        idx[0, :], idx[:, 0], idx[0, 0] = distances, distances + 1, distances + 2
        return table[torch.as_tensor(idx)].permute(2, 0, 1)

    def forward(self, pixels: torch.Tensor) -> dict:
        """Every intermediate the relevance pass needs; attention maps keep their grads."""
        x = self.embed(pixels).detach().requires_grad_(True)
        n = x.shape[0]
        acts = {"layers": []}
        heads = lambda t: t.view(n, self.heads, -1).transpose(0, 1)  # noqa: E731
        for index in range(self.layers):
            base = self.layer(index)
            names = self.names()
            a = {"x": x, "base": base}
            a["h"] = self.norm(x, base + names["ln1"])
            for name in ("q", "k", "v"):
                w = self.p(base + f"attention.{name}_proj.weight")
                b = self.w.get(self.prefix + base + f"attention.{name}_proj.bias", 0.0)
                a[name] = heads(a["h"] @ w.T + b)
            d = a["q"].shape[-1]
            attn = torch.softmax(
                a["q"] @ a["k"].transpose(-1, -2) / d**0.5 + self.bias(index, n), -1
            )
            attn.retain_grad()  # .grad: the plain gradient of the target logit, ∇A_l
            a["attn"] = attn
            a["ctx"] = (attn @ a["v"]).transpose(0, 1).reshape(n, -1)
            o = a["ctx"] @ self.p(base + "attention.o_proj.weight").T
            a["o"] = o + self.p(base + "attention.o_proj.bias")
            scaled = a["o"] * self.p(base + names["s1"]) if names["s1"] else a["o"]
            a["s1"] = scaled
            a["x1"] = x1 = scaled + x
            a["h2"] = self.norm(x1, base + names["ln2"])
            a["m1"] = a["h2"] @ self.p(base + "mlp.fc1.weight").T + self.p(base + "mlp.fc1.bias")
            a["g"] = F.gelu(a["m1"])
            a["m2"] = a["g"] @ self.p(base + "mlp.fc2.weight").T + self.p(base + "mlp.fc2.bias")
            scaled = a["m2"] * self.p(base + names["s2"]) if names["s2"] else a["m2"]
            a["s2"] = scaled
            x = scaled + x1
            acts["layers"].append(a)
        acts["last"] = x
        acts["logits"] = self.head(x, acts)
        return acts

    def head(self, x: torch.Tensor, acts: dict) -> torch.Tensor:
        """The classifier head; keeps what its relevance rules need in ``acts``."""
        if self.name.startswith("Beit"):  # mean of the patch tokens, LayerNorm, linear
            pooled = self.norm(x[1:].mean(0), "pooler.layernorm")
            acts["features"] = [("mean", x[1:], pooled, self.w["classifier.weight"])]
            return pooled @ self.w["classifier.weight"].T + self.w["classifier.bias"]
        y = self.norm(x, "layernorm")
        if self.dinov2:  # linear on cat(CLS, mean of the patch tokens)
            features = torch.cat([y[0], y[self.specials :].mean(0)])
            acts["features"] = [("cat", y, features, self.w["classifier.weight"])]
            return features @ self.w["classifier.weight"].T + self.w["classifier.bias"]
        if self.name == "DeiTForImageClassificationWithTeacher":  # (cls + distillation) / 2
            acts["features"] = [
                ("token", 0, y[0], self.w["cls_classifier.weight"]),
                ("token", 1, y[1], self.w["distillation_classifier.weight"]),
            ]
            acts["heads"] = [
                y[i] @ self.w[f"{h}_classifier.weight"].T + self.w[f"{h}_classifier.bias"]
                for i, h in enumerate(("cls", "distillation"))
            ]
            return (acts["heads"][0] + acts["heads"][1]) / 2
        acts["features"] = [("token", 0, y[0], self.w["classifier.weight"])]
        return y[0] @ self.w["classifier.weight"].T + self.w["classifier.bias"]

    # -- relevance --

    def head_relevance(self, acts: dict, target: int) -> torch.Tensor:
        """Relevance (n, D) of the last block's output, from a one-hot at ``target``."""
        r = torch.zeros_like(acts["logits"])
        r[target] = 1.0
        rx = torch.zeros_like(acts["last"])
        features = acts["features"]
        if "heads" in acts:  # division by 2 passes; the two heads' sum: residual split
            r_cls, r_dist = add(acts["heads"][0], acts["heads"][1], r)
            parts = [r_cls, r_dist]
        else:
            parts = [r]
        for (kind, where, inputs, weight), part in zip(features, parts, strict=True):
            r_in = linear(inputs, weight, part)
            if kind == "token":  # selection of one token; the final LayerNorm passes
                rx[where] += r_in
            elif kind == "mean":  # pooler LayerNorm passes; mean = linear, weights 1/N
                rx[1:] += mean_rule(where, r_in)
            else:  # cat(CLS, mean of patches): split the features, then the mean
                d = rx.shape[-1]
                rx[0] += r_in[:d]
                rx[self.specials :] += mean_rule(where[self.specials :], r_in[d:])
        return rx

    def relevance(self, acts: dict, target: int) -> list[torch.Tensor]:
        """R^{A_l} for every layer, propagated by hand from a one-hot at ``target``."""
        n = acts["last"].shape[0]
        rx = self.head_relevance(acts, target)
        cams = [None] * self.layers
        flat = lambda t: t.transpose(0, 1).reshape(n, -1)  # noqa: E731
        for index in reversed(range(self.layers)):
            a = acts["layers"][index]
            base = a["base"]
            # x2 = scale·m2 + x1: split (the layer scale passes relevance unchanged)
            r_m2, r_x1 = add(a["s2"], a["x1"], rx)
            r_g = linear(a["g"], self.p(base + "mlp.fc2.weight"), r_m2)  # GELU passes
            r_h2 = linear(a["h2"], self.p(base + "mlp.fc1.weight"), r_g)
            r_x1 = r_x1 + r_h2  # LayerNorm passes; the fan-out of x1 sums
            r_o, r_x = add(a["s1"], a["x"], r_x1)  # x1 = scale·o + x
            r_ctx = linear(a["ctx"], self.p(base + "attention.o_proj.weight"), r_o)
            r_ctx = r_ctx.view(n, self.heads, -1).transpose(0, 1)
            r_attn, r_v = matmul(a["attn"].detach(), a["v"], r_ctx)
            r_attn, r_v = r_attn / 2, r_v / 2
            cams[index] = r_attn
            # softmax, the bias and the scaling pass R; Q·Kᵀ split and halved
            r_q, r_kt = matmul(a["q"], a["k"].transpose(-1, -2), r_attn)
            r_q, r_k = r_q / 2, r_kt.transpose(-1, -2) / 2
            for name, part in (("q", r_q), ("k", r_k), ("v", r_v)):
                w = self.p(base + f"attention.{name}_proj.weight")
                r_x = r_x + linear(a["h"], w, flat(part))
            rx = r_x
        return cams


def mean_rule(x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """A mean over tokens as a linear map with weights 1/N under α1β0 (our extension):
    each feature's R shared among the tokens by their positive parts."""
    xp = x.clamp(min=0)
    return xp / x.shape[0] * div(r, xp.sum(0) / x.shape[0])


def reference_rollout(
    model, pixels: torch.Tensor, target: int, start: int, normalise: bool = False
) -> tuple:
    """The authors' algorithm from the weights: the rollout from ``start`` (n, n),
    whose CLS row is their map, R^{A_l} (L, H, n, n), and the number of special tokens.
    Rows of each ``I + Ā_l`` divided by their sums only with ``normalise``."""
    ref = VitReference(model)
    acts = ref.forward(pixels)
    acts["logits"][target].backward()
    with torch.no_grad():
        cams = ref.relevance(acts, target)
        n = acts["last"].shape[0]
        bars = []
        for a, cam in zip(acts["layers"], cams, strict=True):
            bar = (a["attn"].grad * cam).clamp(min=0).mean(0) + torch.eye(n)
            bars.append(bar / bar.sum(-1, keepdim=True) if normalise else bar)
        start = start % ref.layers
        joint = bars[start]
        for bar in bars[start + 1 :]:
            joint = bar @ joint
    return joint.numpy(), torch.stack(cams).numpy(), ref.specials


# ---- models, images, comparison -----------------------------------------------------


def build(family: str, layers: int = 3, seed: int = 0):
    """A tiny random ``family`` model (``tiny_vision``'s config, ``layers`` blocks)."""
    import transformers as tf

    config_name, model_name, extra = VISION_FAMILIES[family]
    torch.manual_seed(seed)
    config = getattr(tf, config_name)(**{**SMALL, "num_hidden_layers": layers}, **extra)
    return getattr(tf, model_name)(config).eval()


def processor(size: int = 32):
    import transformers as tf

    return tf.ViTImageProcessor(size={"height": size, "width": size})


def randomise(model: torch.nn.Module, seed: int, std: float = 0.5) -> None:
    """Weights ~ N(0, std²), norm gains ~ 1 + N(0, 0.1²), so relevance is not flat."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator, dtype=torch.float64)
            if "norm" in name.lower() and name.endswith("weight"):
                param.copy_(1 + 0.1 * noise)
            else:
                param.copy_(std * noise)


def picture(size: int = 32, seed: int = 0) -> np.ndarray:
    """A random image with a bright square (some structure for the map to follow)."""
    rng = np.random.default_rng(seed)
    image = rng.random((size, size, 3)) * 120
    image[size // 4 : size // 2, size // 3 : 2 * size // 3] += 120
    return image.astype(np.uint8)


def renormalised(v: np.ndarray) -> np.ndarray:
    return (v - v.min()) / (v.max() - v.min())


def scores(model, proc, image, start: int, target: int | None = None, normalise=None):
    options = {"chefer2021": {"start_layer": start}}
    if normalise is not None:
        options["chefer2021"]["row_normalise"] = normalise
    exp = attnwidget.explain(
        model, proc, image, methods=["chefer2021"], target=target, method_options=options
    )
    assert exp.details["chefer2021"]["relevance"] == "paper"
    assert exp.details["chefer2021"]["row_normalise"] is bool(normalise)  # images: False
    return exp


def rollout(exp) -> np.ndarray:
    """Our rollout matrix (n, n), from the per-layer factors chefer2021 returns."""
    maps = exp.details["chefer2021"]["layer_maps"]
    product = np.eye(maps.shape[-1])
    for layer_map in maps:
        product = layer_map @ product
    return product


def compare(
    model, size: int, start: int, seed: int = 0, row: bool = True, normalise=None
) -> dict[str, float]:
    """Our scores vs the reference's, on the model and on a float64 copy.

    ``normalise``: our option ``row_normalise`` (None: the default, which for
    images is the authors' ViT code, rows not normalised); the reference
    normalises its rows when it is True.

    Returns the largest gaps of the whole rollout matrix (``matrix64``) and of
    R^{A_l} relative to its largest value (``cam64``), and, with ``row``, of
    the patch scores (the CLS row, the authors' map): their range over the
    patches (``spread``), raw (``raw32``, ``raw64``) and after min–max over
    the patches (``gap32``, ``gap64``). Asserts neither is flat.
    """
    proc, image = processor(size), picture(size, seed)
    exp = scores(model, proc, image, start, normalise=normalise)
    pixels = proc(images=image, return_tensors="pt")["pixel_values"]
    joint, cams, specials = reference_rollout(
        model, pixels, exp.target_id, start, normalise=bool(normalise)
    )
    # The rules divide by sums that can nearly cancel, so a float32 forward can drift
    # far in the lower layers (the reference run in float32 drifts as much): the
    # rules themselves are compared on a float64 copy of the model.
    wide = scores(
        copy.deepcopy(model).double(), proc, image, start, exp.target_id, normalise=normalise
    )
    for e in (exp, wide):
        ours = e.scores["chefer2021"]
        assert e.special_tokens == list(range(specials)) and np.all(ours[:specials] == 0)
        assert len(ours) == specials + (size // SMALL["patch_size"]) ** 2
    links = joint[specials:, specials:] - np.diag(np.diag(joint[specials:, specials:]))
    # Each Ā_l is mostly its identity (normalised or not), so the links between patches are small
    # (1e-6 … 1e-2 here), yet far above the gaps (~1e-9); R^{A_l} is not small.
    assert np.ptp(links) > 1e-6 and np.abs(cams).max() > 1e-2, "a flat rollout"
    relevance = wide.details["chefer2021"]["attention_relevance"]  # float32 copy of R^A
    gaps = {
        "matrix64": float(np.abs(rollout(wide) - joint).max()),
        "cam64": float(np.abs(relevance - cams).max() / np.abs(cams).max()),
    }
    if not row:
        return gaps
    theirs = joint[0, specials:]  # their map: rollout[0, specials:]
    ours32, ours64 = (e.scores["chefer2021"][specials:] for e in (exp, wide))
    spread = float(np.ptp(theirs))
    assert spread > 1e-4, "a comparison of flat rows"
    return {
        **gaps,
        "spread": spread,
        "raw32": float(np.abs(ours32 - theirs).max()),
        "raw64": float(np.abs(ours64 - theirs).max()),
        "gap32": float(np.abs(renormalised(ours32) - renormalised(theirs)).max()),
        "gap64": float(np.abs(renormalised(ours64) - renormalised(theirs)).max()),
    }


@pytest.mark.parametrize("family", ["vit", "deit"])
@pytest.mark.parametrize("size", [32, 48])
@pytest.mark.parametrize("start", [1, 0])
def test_vit_and_deit_equal_the_authors_algorithm(family: str, size: int, start: int) -> None:
    model = build(family)
    randomise(model, seed=5)
    for seed in (0, 1):
        gaps = compare(model, size, start, seed)
        assert gaps["gap64"] < 1e-4 and gaps["raw64"] < 1e-7, gaps
        assert gaps["matrix64"] < 1e-7 and gaps["cam64"] < 1e-6, gaps  # R^A kept in float32
        if start == 1:  # the last layers only: float32 stays close as well
            assert gaps["raw32"] < 1e-5, gaps


@pytest.mark.parametrize("family", ["vit", "deit"])
def test_row_normalise_true_on_images_equals_the_bert_style_rollout(family: str) -> None:
    """The other choice, on request: rows normalised as in the authors' BERT code."""
    model = build(family)
    randomise(model, seed=5)
    for start in (1, 0):
        gaps = compare(model, 32, start, normalise=True)
        assert gaps["gap64"] < 1e-4 and gaps["raw64"] < 1e-7, gaps
        assert gaps["matrix64"] < 1e-7 and gaps["cam64"] < 1e-6, gaps


def test_the_shipped_vit_follows_the_authors_vit_code() -> None:
    """shapes-vit, the authors' ViT setting (start_layer=1): within 1e-4 after
    min–max of the rollout without row normalisation; the normalised rollout is
    farther from it than that (how far the two conventions lie apart here).
    On a float64 copy, as ``compare``'s 64-bit gaps: this model's patch scores
    differ by ~1e-4 of their size, so float32 alone moves the min–max map by
    ~3e-4."""
    from attnwidget import demo

    model, proc = demo.load("shapes-vit", attn_implementation="eager")
    model = model.double()
    for shape in demo.images(3, seed=0):
        exp = scores(model, proc, shape.image, start=1)
        pixels = proc(images=shape.image, return_tensors="pt")["pixel_values"]
        joint, _, specials = reference_rollout(model, pixels, exp.target_id, 1)
        ours, theirs = exp.scores["chefer2021"][specials:], joint[0, specials:]
        assert np.ptp(theirs) > 1e-4, "a comparison of flat rows"
        assert np.abs(renormalised(ours) - renormalised(theirs)).max() <= 1e-4
        other = scores(model, proc, shape.image, 1, exp.target_id, normalise=True)
        normed = other.scores["chefer2021"][specials:]
        assert np.abs(renormalised(normed) - renormalised(theirs)).max() > 1e-4


def test_row_normalise_is_a_listed_validated_option() -> None:
    text = str(attnwidget.method_info("chefer2021"))
    assert "row_normalise: bool | None = None" in text, text
    model, proc, image = build("vit"), processor(), picture()
    with pytest.raises(attnwidget.errors.InputError, match=r"row_normalise.*bool"):
        attnwidget.explain(
            model,
            proc,
            image,
            methods=["chefer2021"],
            method_options={"chefer2021": {"row_normalise": "yes"}},
        )
