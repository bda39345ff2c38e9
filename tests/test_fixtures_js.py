"""Golden fixtures shared by Python and the JS tests (js/test/fixtures/).

Python writes small examples here and the JS tests (js/test/core/fixtures.test.ts)
read them: an attention example with its residual-adjusted maps, the paths
every path method gives for a few nodes (``compute_paths``), each as the
``paths`` reply exactly as the kernel sends it (meta + buffers), wire
encodings of every dtype (float16 plain and rescaled too), the synced trait
names of each view and the keys of each FlowView message. The JS tests check
that the TypeScript maths and decoders reproduce these numbers and that each
TS trait interface and message schema names exactly the Python ones.

The fixtures are committed. This test regenerates them and fails when the
committed ones differ (beyond float rounding across machines), so Python and
JS cannot drift apart unnoticed. After an intended change, rewrite them with
``ATTNWIDGET_UPDATE_FIXTURES=1 python -m pytest tests/test_fixtures_js.py``
and run ``npm test`` in js/.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, get_type_hints

import numpy as np
import pytest

from attnwidget.methods.graph import add_residual, fuse_heads
from attnwidget.results.explanation import Explanation
from attnwidget.views import (
    AdjudicationView,
    AlignmentView,
    Annotator,
    AttentionCalculator,
    AttentionMatrixView,
    CompareView,
    ExplanationRating,
    FlowView,
    GenerationView,
    HeadView,
    ImageView,
    ModelView,
    NeuronView,
    SaliencyView,
)
from attnwidget.views.core.buffers import decode_array, encode_array
from attnwidget.views.core.format import format_number
from attnwidget.views.core.selection import NONE, SELECTION_TRAITS
from attnwidget.views.core.standalone import _MACHINERY
from attnwidget.views.evaluate.evaluation_view import EvaluationView
from attnwidget.views.flow._messages import MESSAGES
from attnwidget.views.flow._paths import compute_paths, path_methods
from attnwidget.views.flow.flow_view import encode_paths

FIXTURES = Path(__file__).resolve().parent.parent / "js" / "test" / "fixtures"
UPDATE_ENV = "ATTNWIDGET_UPDATE_FIXTURES"
#: Significant digits of float64 expectations (the JS tests compare to 1e-6).
DIGITS = 10
#: Nodes whose paths are written: (node layer, token).
NODES = [(2, 0), (1, 3), (0, 2)]
TOKENS = ["[CLS]", "the", "keys", "are", "[SEP]"]


def _floats(array: Any) -> Any:
    """Nested lists of floats rounded to :data:`DIGITS` significant digits."""
    values = np.asarray(array, dtype=np.float64)
    return np.vectorize(lambda x: float(f"{x:.{DIGITS}g}"), otypes=[float])(values).tolist()


def _buffer(data: bytes, meta: dict[str, Any]) -> dict[str, Any]:
    """A buffer as JSON: its wire meta and its bytes in base64."""
    return {**meta, "base64": base64.b64encode(bytes(data)).decode("ascii")}


def explanation() -> Explanation:
    """2 layers, 2 heads, 5 tokens of peaked attention, with gradients (grad_attention)."""
    rng = np.random.default_rng(20260101)
    weights = rng.random((2, 2, 5, 5)) ** 3
    attentions = (weights / weights.sum(-1, keepdims=True)).astype(np.float32)
    exp = Explanation.from_attentions(attentions, TOKENS, methods=["raw", "rollout"])
    # Gradients span far more than float16 holds: the wire fixture rescales them.
    exp.attention_grads = (rng.standard_normal((2, 2, 5, 5)) * 3e5).astype(np.float32)
    return exp


def attention_fixture(exp: Explanation) -> dict[str, Any]:
    fused = fuse_heads(exp.attentions, "mean").astype(np.float32)
    data, meta = encode_array(fused, "float32")
    return {
        "tokens": TOKENS,
        "fused": _buffer(data, meta),
        "adjusted": _floats(add_residual(fused.astype(np.float64))),
    }


def paths_fixture(exp: Explanation) -> list[dict[str, Any]]:
    out = []
    for method in path_methods(exp):
        for layer, token in NODES:
            result = compute_paths(exp, method, layer, token)
            meta, buffers = encode_paths(result)
            # As FlowView._compute_reply completes it.
            meta.update({"type": "paths", "id": 1, "version": 1})
            out.append(
                {
                    "method": method,
                    "layer": layer,
                    "token": token,
                    "signed": bool(result.signed),
                    "nodes": _floats(result.nodes),
                    "edges": _floats(result.edges),
                    "reply": {
                        "content": meta,
                        "buffers": [base64.b64encode(b).decode("ascii") for b in buffers],
                    },
                }
            )
    return out


def wire_fixture(exp: Explanation) -> list[dict[str, Any]]:
    """Encodings of every wire dtype, with the values the Python decoder reads back."""
    examples = [
        ("scores float32", np.array([[0.25, -1.5, 3e-9], [1e30, 0.0, -7.0]]), "float32", {}),
        ("edge index uint32", np.array([0, 1, 24, 2**32 - 1]), "uint32", {}),
        ("attention float16", exp.attentions[0, 0], "float16", {"underflow": "allow"}),
        ("gradients float16 rescaled", exp.attention_grads[1, 0], "float16", {"fit": "rescale"}),
        (
            "tiny scores float16 rescaled",
            np.array([3e-9, -1e-8, 0.0]),
            "float16",
            {"fit": "rescale"},
        ),
    ]
    out = []
    for name, values, dtype, options in examples:
        data, meta = encode_array(values, dtype, name=name, **options)
        decoded = decode_array(data, meta)
        out.append(
            {
                "name": name,
                "buffer": _buffer(data, meta),
                "decoded": decoded.ravel().tolist(),  # exact: float32 / uint32 values
                "original": _floats(np.ravel(values)),
            }
        )
    return out


def _views() -> dict[str, type]:
    return {
        "saliency": SaliencyView,
        "head": HeadView,
        "model": ModelView,
        "flow": FlowView,
        "image": ImageView,
        "evaluation": EvaluationView,
        "compare": CompareView,
        "annotator": Annotator,
        "calculator": AttentionCalculator,
        "neuron": NeuronView,
        "alignment": AlignmentView,
        "generation": GenerationView,
        "adjudication": AdjudicationView,
        "rating": ExplanationRating,
    }


def traits_fixture() -> dict[str, list[str]]:
    return {
        name: sorted(t for t in cls.class_trait_names(sync=True) if t not in _MACHINERY)
        for name, cls in _views().items()
    }


def test_selection_traits_are_synced_and_start_at_none() -> None:
    """Every view's selection traits (SELECTION_TRAITS) sync and default to NONE (-1)."""
    views = {**_views(), "matrix": AttentionMatrixView}
    assert set(SELECTION_TRAITS) <= set(views)
    for view, names in SELECTION_TRAITS.items():
        traits = views[view].class_traits(sync=True)
        for name in names:
            assert name in traits, f"{view}: {name} is not a synced trait"
            assert traits[name].default_value == NONE, f"{view}.{name} does not start at NONE"


def selection_fixture() -> dict[str, Any]:
    """The selection traits whose "nothing selected" value is NONE (views/core/selection.py)."""
    return {"none": NONE, "traits": {v: list(names) for v, names in SELECTION_TRAITS.items()}}


def messages_fixture() -> dict[str, list[str]]:
    """FlowView's custom messages: the keys of each, by its ``type``."""
    return {kind: sorted(get_type_hints(schema)) for kind, schema in MESSAGES.items()}


def format_fixture() -> list[dict[str, Any]]:
    """Numbers as the views show them (views/core/format.py; format.ts must agree).

    Hand-picked edge cases and a seeded spread over magnitudes and digits;
    non-finite values travel as the strings JS's Number() reads back."""
    rng = np.random.default_rng(9)
    values = [0.41894618, 1.0000008, 1.8924047e-9, 0.0, -0.0, 1.125, -1.125, 1.005, 0.00099996]
    values += [999999.7, 123456.7, 9.996, 0.001, 1e6, 5e-324, 1.7976931348623157e308]
    values += [float(np.float32(v)) for v in rng.random(20)]
    values += list(rng.normal(size=60) * 10.0 ** rng.uniform(-12, 12, 60))
    cases = [(float(v), d) for v in values for d in (3, 1, 4)]
    cases += [(v, 3) for v in (float("nan"), float("inf"), float("-inf"))]
    return [
        {
            "value": v
            if np.isfinite(v)
            else {"nan": "NaN", "inf": "Infinity"}.get(str(v), "-Infinity"),
            "digits": d,
            "text": format_number(v, d),
        }
        for v, d in cases
    ]


def fixtures() -> dict[str, Any]:
    exp = explanation()
    return {
        "attention.json": attention_fixture(exp),
        "paths.json": paths_fixture(exp),
        "wire.json": wire_fixture(exp),
        "traits.json": traits_fixture(),
        "selection.json": selection_fixture(),
        "messages.json": messages_fixture(),
        "format.json": format_fixture(),
    }


def dump(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, allow_nan=False) + "\n"


def differences(old: Any, new: Any, where: str = "") -> list[str]:
    """Where two fixtures differ: floats beyond 1e-6 relative, buffers by decoded value."""
    if isinstance(old, dict) and isinstance(new, dict):
        if "base64" in old and "base64" in new:
            a, b = (decode_array(base64.b64decode(x["base64"]), x) for x in (old, new))
            if a.shape != b.shape or not np.allclose(a, b, rtol=1e-6, atol=0):
                return [f"{where}: buffer values"]
            old, new = (
                {k: v for k, v in x.items() if k != "base64"} for x in (old, new)
            )  # the meta must still match
        if old.keys() != new.keys():
            return [f"{where}: keys {sorted(old.keys() ^ new.keys())}"]
        return [d for k in old for d in differences(old[k], new[k], f"{where}.{k}")]
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} vs {len(new)} items"]
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in differences(a, b, f"{where}[{i}]")
        ]
    if isinstance(old, float) or isinstance(new, float):
        same = isinstance(old, (int, float)) and isinstance(new, (int, float))
        return (
            []
            if same and np.isclose(old, new, rtol=1e-6, atol=1e-12)
            else [f"{where}: {old!r} vs {new!r}"]
        )
    return [] if old == new else [f"{where}: {old!r} vs {new!r}"]


def comparable(name: str, value: Any) -> Any:
    """What must not drift. Attention flow's per-edge flows are one of possibly
    many maximum flows (another scipy release may pick another), so for "flow"
    only its exact end values count: the input nodes going down, the top
    nodes going up. Everything else is compared in full."""
    if name != "paths.json":
        return value
    out = []
    for entry in value:
        if entry["method"] == "flow":
            nodes = entry["nodes"]
            entry = {**entry, "edges": None, "reply": None, "nodes": [nodes[0], nodes[-1]]}
        out.append(entry)
    return out


def test_fixture_generation_is_deterministic() -> None:
    assert {k: dump(v) for k, v in fixtures().items()} == {
        k: dump(v) for k, v in fixtures().items()
    }


def test_committed_fixtures_match_python() -> None:
    generated = fixtures()
    if os.environ.get(UPDATE_ENV, "").strip() not in {"", "0"}:
        FIXTURES.mkdir(parents=True, exist_ok=True)
        for name, value in generated.items():
            (FIXTURES / name).write_text(dump(value), encoding="utf-8")
    problems = []
    for name, value in generated.items():
        path = FIXTURES / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        committed = comparable(name, json.loads(path.read_text(encoding="utf-8")))
        fresh = comparable(name, json.loads(dump(value)))
        problems += [f"{name}{d}" for d in differences(committed, fresh)]
    if problems:
        pytest.fail(
            "js/test/fixtures/ differ from what Python computes now:\n  "
            + "\n  ".join(problems[:20])
            + f"\nIf the change is intended, run {UPDATE_ENV}=1 python -m pytest "
            "tests/test_fixtures_js.py and then `npm test` in js/."
        )


def test_fixture_comparison_catches_drift() -> None:
    """The comparison itself: a changed number, buffer or name is a difference."""
    generated = json.loads(dump(fixtures()))
    paths = json.loads(dump(generated["paths.json"]))
    paths[0]["nodes"][0][0] += 1e-3
    assert differences(generated["paths.json"], paths)
    flow = next(i for i, p in enumerate(paths) if p["method"] == "flow")
    paths = json.loads(dump(generated["paths.json"]))
    paths[flow]["nodes"][0][1] += 1e-3  # an exact flow value changed: drift
    assert differences(*(comparable("paths.json", p) for p in (generated["paths.json"], paths)))
    wire = json.loads(dump(generated["wire.json"]))
    data = bytearray(base64.b64decode(wire[0]["buffer"]["base64"]))
    data[0] ^= 0x40
    wire[0]["buffer"]["base64"] = base64.b64encode(bytes(data)).decode("ascii")
    assert differences(generated["wire.json"], wire)
    traits = json.loads(dump(generated["traits.json"]))
    traits["flow"].remove("threshold")
    assert differences(generated["traits.json"], traits)
    assert not differences(generated, json.loads(dump(generated)))
