"""The method API contract: declared options, their validation before the model
runs, method_info, one meaning per explanation (classifier query rows) and
attention flow's bound flags for encoder–decoder queries.

Every error path checks the message and that the model is left exactly as it
was (attention implementation, hooks, requires_grad, training modes, weights)
and, where the input alone shows the problem, that the model never ran.
"""

from __future__ import annotations

import inspect

import networkx as nx
import numpy as np
import pytest
import torch
from networkx.algorithms.flow import edmonds_karp
from tiny_models import build

import attnwidget
from attnwidget.capture import attention_implementation
from attnwidget.errors import InputError, UnknownMethodError
from attnwidget.methods import ScoreContext, compute_scores
from attnwidget.methods.flow.flow import attention_flow_result
from attnwidget.methods.registry import READS_ATTENTION
from attnwidget.relevance.lrp import run_lrp

TEXT = "the keys to the cabinet are on the table"
GRADIENT_METHODS = [
    "grad_attention",
    "input_x_gradient",
    "integrated_gradients",
    "blank_out",
    "lrp",
    "chefer2021",
]


# ---- the model is left as it was ---------------------------------------------


class Snapshot:
    """Everything explain() may touch on a model, to compare after an error."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.calls = 0
        # Counts forward passes; registered before the snapshot, so it is part
        # of the hook state that must come back unchanged.
        model.register_forward_pre_hook(self._count)
        self.state = self._read()

    def _count(self, _module: torch.nn.Module, _inputs: object) -> None:
        self.calls += 1

    def _read(self) -> dict[str, object]:
        model = self.model
        return {
            "impl": attention_implementation(model),
            "modes": {name: m.training for name, m in model.named_modules()},
            "flags": {name: p.requires_grad for name, p in model.named_parameters()},
            "hooks": {
                name: (
                    len(m._forward_hooks),
                    len(m._forward_pre_hooks),
                    len(m._backward_hooks),
                    len(getattr(m, "_backward_pre_hooks", {})),
                )
                for name, m in model.named_modules()
            },
            "weights": {k: v.clone() for k, v in model.state_dict().items()},
        }

    def assert_unchanged(self) -> None:
        after = self._read()
        for key in ("impl", "modes", "flags", "hooks"):
            assert after[key] == self.state[key], key
        weights = self.state["weights"]
        assert all(torch.equal(weights[k], v) for k, v in after["weights"].items())
        assert all(p.grad is None for p in self.model.parameters())


def mixed_state_model(family: str = "bert-cls") -> tuple[torch.nn.Module, object]:
    """A model in an unusual state (training, one frozen weight, one module in eval)."""
    model, tokenizer = build(family)
    model.train()
    model.get_input_embeddings().weight.requires_grad_(False)
    next(m for m in model.modules() if m is not model and not list(m.children())).eval()
    return model, tokenizer


# ---- method_info and declared options ----------------------------------------


@pytest.mark.parametrize("name", attnwidget.available_methods())
def test_method_info_describes_every_method_and_its_options(name: str) -> None:
    info = attnwidget.method_info(name)
    spec = attnwidget.get_method(name)
    assert info.name == name and info.summary == spec.summary
    assert info.reference == spec.reference and set(info.needs) == set(spec.needs)
    text, markdown = repr(info), info._repr_markdown_()
    assert text.startswith(f"{name}: ") and spec.reference in text
    for option in info.options:
        assert option.doc and option.name in text and repr(option.default) in text
        type_cell = option.type_name.replace("|", "\\|")  # escaped inside a table
        assert f"| {option.name} | {type_cell} | {option.default!r} |" in markdown
    # Attention-only methods read a row; the others explain the target.
    # (each head's values, for effective_attention and attention_norm, count as attention)
    assert ("attention" in info.explains) == (set(spec.needs) <= READS_ATTENTION)


def test_every_builtin_method_declares_its_options() -> None:
    declared = {
        name: [o.name for o in attnwidget.method_info(name).options]
        for name in attnwidget.available_methods()
    }
    assert declared["raw"] == ["layer", "head_fusion", "head"]
    assert set(declared["rollout"]) == {
        "layer",
        "head_fusion",
        "residual",
        "discard_ratio",
        "keep_columns",
    }
    assert set(declared["flow"]) >= {"layer", "normalize", "head_fusion", "residual"}
    assert declared["grad_attention"] == ["start_layer"]
    assert declared["input_x_gradient"] == []
    assert {"steps", "max_steps", "tolerance"} <= set(declared["integrated_gradients"])
    assert declared["blank_out"] == ["batch_size", "baseline"]
    assert set(declared["lrp"]) == {"epsilon", "embeddings"}
    assert {"start_layer", "epsilon"} <= set(declared["chefer2021"])


@pytest.mark.parametrize(
    ("method", "function"),
    [
        ("raw", attnwidget.raw_attention),
        ("rollout", attnwidget.rollout),
        ("flow", attention_flow_result),
        ("grad_attention", attnwidget.grad_attention),
        ("integrated_gradients", attnwidget.integrated_gradients),
        ("blank_out", attnwidget.blank_out),
        ("lrp", run_lrp),
    ],
)
def test_declared_defaults_equal_the_pure_functions_defaults(method: str, function) -> None:
    # Declarations and signatures are written separately; they must not drift.
    parameters = inspect.signature(function).parameters
    for option in attnwidget.method_info(method).options:
        # raw_attention(layer=None) keeps every layer; the method reads one (the last).
        if option.name in parameters and (method, option.name) != ("raw", "layer"):
            assert parameters[option.name].default == option.default, option.name


def test_defaults_are_filled_in_and_reported() -> None:
    model, tokenizer = build("bert-cls")
    exp = attnwidget.explain(
        model,
        tokenizer,
        TEXT,
        methods=["raw", "rollout", "integrated_gradients"],
        method_options={"rollout": {"head_fusion": "max", "keep_columns": [0, 1]}},
    )
    assert exp.method_options["raw"] == {"layer": -1, "head_fusion": "mean", "head": None}
    assert exp.method_options["rollout"] == {
        "layer": -1,
        "head_fusion": "max",
        "residual": True,
        "discard_ratio": 0.0,
        "keep_columns": (0, 1),  # a list is accepted and stored as a tuple
    }
    assert exp.method_options["integrated_gradients"]["steps"] is None
    assert set(exp.method_options) == {"raw", "rollout", "integrated_gradients"}
    # The options were used: rollout with max fusion, computed here by hand.
    fused = exp.attentions.astype(np.float64).max(axis=1)
    n = fused.shape[-1]
    product = np.eye(n)
    for layer in fused:
        adjusted = 0.5 * layer + 0.5 * np.eye(n)
        product = (adjusted / adjusted.sum(-1, keepdims=True)) @ product
    assert np.allclose(exp.scores["rollout"], product[exp.query_index], atol=1e-5)


def test_options_reach_the_methods() -> None:
    model, tokenizer = build("gpt2-lm")
    exp = attnwidget.explain(
        model,
        tokenizer,
        TEXT,
        methods=["raw", "grad_attention"],
        method_options={"raw": {"head": 2, "layer": 0}, "grad_attention": {"start_layer": 1}},
    )
    q = exp.query_index
    assert np.allclose(exp.scores["raw"], exp.attentions[0, 2, q], atol=1e-6)
    a, g = exp.attentions[1].astype(np.float64), exp.attention_grads[1].astype(np.float64)
    last_layer_only = np.eye(len(exp.tokens)) + np.clip(a * g, 0, None).mean(0)
    assert np.allclose(exp.scores["grad_attention"], last_layer_only[q], atol=1e-5)


# ---- invalid options: refused before the model runs ------------------------------


BAD_OPTIONS = [
    # (methods, method_options, message pattern)
    (["raw"], {"rolout": {}}, r"unknown method 'rolout'.*known methods: .*rollout"),
    (["raw"], {"rollout": {"layer": 0}}, r"options for 'rollout'.*not among the requested.*raw"),
    (
        ["rollout"],
        {"rollout": {"head_fusoin": "max"}},
        r"unknown option 'head_fusoin' for method 'rollout'.*head_fusion.*discard_ratio"
        r".*method_info\('rollout'\)",
    ),
    (["input_x_gradient"], {"input_x_gradient": {"steps": 3}}, r"it takes no options"),
    (["rollout"], {"rollout": {"head_fusion": 3}}, r"\['head_fusion'\]=3 has type int.*str"),
    (["rollout"], {"rollout": {"head_fusion": "median"}}, r"'median'.*'mean', 'max', 'min'"),
    (["rollout"], {"rollout": {"discard_ratio": 1.5}}, r"discard_ratio'\]=1.5 must be in \[0, 1\)"),
    (["rollout"], {"rollout": {"keep_columns": [0, "a"]}}, r"tuple\[int, \.\.\.\]"),
    (["raw"], {"raw": {"layer": 1.0}}, r"'layer'\]=1.0 has type float.*int"),
    (["integrated_gradients"], {"integrated_gradients": {"steps": 0}}, r"steps'\]=0 must be ≥ 1"),
    (
        ["integrated_gradients"],
        {"integrated_gradients": {"steps": True}},
        r"steps'\]=True has type bool.*int \| None",
    ),
    (
        ["integrated_gradients"],
        {"integrated_gradients": {"tolerance": float("nan")}},
        r"tolerance'\]=nan must be a finite number",
    ),
    (["lrp"], {"lrp": {"embeddings": "position"}}, r"'position'.*'token', 'input'"),
    (["lrp"], {"lrp": {"epsilon": -1}}, r"epsilon'\]=-1.0 must be ≥ 0"),
    # The tiny BERT has 2 layers: start_layer must name one of them.
    (
        ["chefer2021"],
        {"chefer2021": {"start_layer": 2}},
        r"start_layer'\]=2 is out of range for a model with 2 layers; use 0 … 1",
    ),
    (["chefer2021"], {"chefer2021": {"start_layer": -3}}, r"start_layer'\]=-3 .*-2 … -1"),
    (["raw"], {"raw": "max"}, r"method_options\['raw'\] must be a dict"),
    (["raw"], [("raw", {})], r"method_options must be a dict"),
]


@pytest.mark.parametrize(("methods", "options", "pattern"), BAD_OPTIONS)
def test_bad_method_options_are_refused_before_the_model_runs(
    methods: list[str], options: object, pattern: str
) -> None:
    model, tokenizer = mixed_state_model()
    snapshot = Snapshot(model)
    with pytest.raises(InputError, match=pattern):
        attnwidget.explain(model, tokenizer, TEXT, methods=methods, method_options=options)
    assert snapshot.calls == 0
    snapshot.assert_unchanged()


def test_bad_method_names_are_refused_before_the_model_runs() -> None:
    model, tokenizer = mixed_state_model()
    snapshot = Snapshot(model)
    with pytest.raises(UnknownMethodError, match=r"unknown method 'rolout'.*rollout"):
        attnwidget.explain(model, tokenizer, TEXT, methods=["raw", "rolout"])
    with pytest.raises(InputError, match=r"methods='raw' is a string; pass a list"):
        attnwidget.explain(model, tokenizer, TEXT, methods="raw")
    assert snapshot.calls == 0
    snapshot.assert_unchanged()


def test_from_attentions_and_compute_scores_validate_the_same_way() -> None:
    rng = np.random.default_rng(0)
    attentions = rng.dirichlet(np.ones(4), size=(2, 2, 4))
    tokens = ["a", "b", "c", "d"]
    with pytest.raises(InputError, match=r"unknown option 'fusion' for method 'raw'"):
        attnwidget.Explanation.from_attentions(
            attentions, tokens, methods=["raw"], method_options={"raw": {"fusion": "max"}}
        )
    with pytest.raises(InputError, match=r"'flow'.*not among the requested"):
        attnwidget.Explanation.from_attentions(attentions, tokens, method_options={"flow": {}})
    exp = attnwidget.Explanation.from_attentions(
        attentions, tokens, methods=["raw"], method_options={"raw": {"head_fusion": "min"}}
    )
    assert exp.method_options == {"raw": {"layer": -1, "head_fusion": "min", "head": None}}
    assert np.allclose(exp.scores["raw"], attentions[-1].min(0)[0], atol=1e-6)
    context = ScoreContext(attentions=attentions, query_index=0, options={"rollout": {"x": 1}})
    with pytest.raises(InputError, match=r"unknown option 'x' for method 'rollout'"):
        compute_scores(["rollout"], context)


# ---- one meaning per explanation: classifier query rows ---------------------------


@pytest.mark.parametrize("family", ["bert-cls", "gpt2-cls"])
def test_classifier_rows_other_than_the_pooled_one_are_refused_for_logit_methods(
    family: str,
) -> None:
    model, tokenizer = mixed_state_model(family)
    snapshot = Snapshot(model)
    for method in GRADIENT_METHODS:
        # Row 3 is neither the first nor the last token: refused before the run.
        with pytest.raises(
            InputError, match=rf"query_index=3 asks for row 3.*pooled.*\({method}\)"
        ):
            attnwidget.explain(model, tokenizer, TEXT, methods=["raw", method], query_index=3)
    assert snapshot.calls == 0
    # The other end of the sequence is only known not to be pooled after the run.
    other_end = -1 if family == "bert-cls" else 0
    pooled = 0 if family == "bert-cls" else "last"
    with pytest.raises(
        InputError, match=r"position \d+.*\(input_x_gradient\).*attention methods \(.*rollout"
    ):
        attnwidget.explain(
            model, tokenizer, TEXT, methods=["input_x_gradient"], query_index=other_end
        )
    snapshot.assert_unchanged()
    # The pooled row itself is the default and is accepted.
    default = attnwidget.explain(model, tokenizer, TEXT, methods=["input_x_gradient"])
    n = len(default.tokens)
    assert default.query_index == (0 if pooled == 0 else n - 1)
    same = attnwidget.explain(
        model, tokenizer, TEXT, methods=["input_x_gradient"], query_index=default.query_index
    )
    assert np.allclose(same.scores["input_x_gradient"], default.scores["input_x_gradient"])
    snapshot.assert_unchanged()


@pytest.mark.parametrize("family", ["bert-cls", "gpt2-cls"])
def test_attention_methods_may_read_any_classifier_row(family: str) -> None:
    model, tokenizer = build(family)
    exp = attnwidget.explain(model, tokenizer, TEXT, methods=["raw", "rollout"], query_index=3)
    assert exp.query_index == 3
    assert np.allclose(exp.scores["raw"], exp.attentions[-1].mean(0)[3], atol=1e-6)


# ---- flow's bound flags for encoder–decoder queries -------------------------------


def residual_attention(attentions: np.ndarray) -> np.ndarray:
    """Â_l = 0.5·mean_h(A_l) + 0.5·I, rows re-normalised (Abnar & Zuidema, 2020)."""
    fused = attentions.astype(np.float64).mean(axis=1)
    adjusted = 0.5 * fused + 0.5 * np.eye(fused.shape[-1])
    return adjusted / adjusted.sum(-1, keepdims=True)


def networkx_flows(adjusted: np.ndarray) -> np.ndarray:
    """Max flow from every top-layer node (L, i) to every input token (0, j)."""
    layers, n = adjusted.shape[0], adjusted.shape[-1]
    graph = nx.DiGraph()
    for layer in range(1, layers + 1):
        for i in range(n):
            for j in range(n):
                graph.add_edge((layer, i), (layer - 1, j), capacity=adjusted[layer - 1, i, j])
    flows = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            flows[i, j] = nx.maximum_flow_value(graph, (layers, i), (0, j), flow_func=edmonds_karp)
    return flows


def check_weighted_flow(details: dict, attentions: np.ndarray, weights: np.ndarray) -> int:
    """Compare flow's encoder–decoder details with the oracle; return the undecided count."""
    adjusted = residual_attention(attentions)
    flows = networkx_flows(adjusted)
    bound = np.minimum(adjusted[-1].sum(-1)[:, None], adjusted[0].sum(0)[None, :])
    assert np.allclose(details["raw_values"], weights @ flows, atol=1e-7)
    assert np.allclose(details["trivial_bound"], weights @ bound, atol=1e-9)
    used = weights > 0
    clearly_at = (flows >= bound - 1e-12)[used].all(axis=0)
    clearly_below = (flows < bound - 1e-7)[used].any(axis=0)
    assert np.array_equal(details["at_bound"][clearly_at], np.ones(clearly_at.sum(), bool))
    assert not details["at_bound"][clearly_below].any()
    return int((~clearly_at & ~clearly_below).sum())


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_flow_reports_at_bound_for_encoder_decoder_queries(family: str) -> None:
    model, tokenizer = build(family)
    exp = attnwidget.explain(
        model, tokenizer, TEXT, methods=["flow"], method_options={"flow": {"normalize": False}}
    )
    weights = exp.cross_attentions[-1].astype(np.float64).mean(axis=0)[exp.query_index]
    details = exp.details["flow"]
    assert details["at_bound"].dtype == bool and details["at_bound"].shape == (len(exp.tokens),)
    assert check_weighted_flow(details, exp.attentions, weights) == 0
    assert np.allclose(exp.scores["flow"], details["raw_values"], atol=1e-6)


def test_weighted_at_bound_needs_every_weighted_row_at_its_bound() -> None:
    # Peaked three-layer attention gives some pairs at the trivial bound and
    # some below it; zero weights must not count.
    rng = np.random.default_rng(1)
    n = 6
    attentions = rng.dirichlet(np.full(n, 0.3), size=(4, 2, n))
    weights = np.array([0.5, 0.0, 0.3, 0.0, 0.2, 0.0])
    context = ScoreContext(attentions=attentions, query_index=0, query_weights=weights)
    scores, details = compute_scores(["flow"], context)
    assert check_weighted_flow(details["flow"], attentions, weights) == 0
    at_bound = details["flow"]["at_bound"]
    assert at_bound.any() and not at_bound.all()  # both cases occur in this example
    # A token at bound for the weighted rows but not for a zero-weight row stays at bound.
    result = attention_flow_result(attentions)
    only_unused = result.at_bound[weights > 0].all(0) & ~result.at_bound[weights == 0].all(0)
    assert only_unused.any() and at_bound[only_unused].all()
    assert np.isfinite(scores["flow"]).all()
