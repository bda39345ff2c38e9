"""transformers versions: the declared floor, and what works below LRP's floor.

``import attnwidget`` must work on every transformers the package declares
(pyproject.toml). LRP and chefer2021 register an attention function through
``transformers.AttentionInterface`` and ``transformers.masking_utils``, which
older versions lack: there the package still imports, every other method
works, and LRP refuses with an error naming the version it needs.

CI runs a core set of the tests a second time in an environment with the
oldest declared transformers (scripts/test.sh). This module is also the
pytest plugin of that run (``-p test_versions``): it skips, each with its
reason, the tests that need a newer transformers, and reports how many ran.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import transformers

import attnwidget
from attnwidget.capture import attention_implementation
from attnwidget.errors import ModelNotSupportedError
from attnwidget.relevance.lrp.attention import IMPLEMENTATION, lrp_attention, register

ROOT = Path(__file__).resolve().parent.parent

#: Whether LRP can run here: transformers 5 (every supported family calls its
#: attention through AttentionInterface from 5.0; decided here from
#: transformers itself, not from our code).
HAS_ATTENTION_INTERFACE = (
    int(transformers.__version__.split(".")[0]) >= 5
    and hasattr(transformers, "AttentionInterface")
    and importlib.util.find_spec("transformers.masking_utils") is not None
)
#: model.set_attn_implementation (transformers>=4.54); older models choose
#: their attention class when built.
HAS_SET_ATTN = hasattr(transformers.PreTrainedModel, "set_attn_implementation")
NEEDS_ATTENTION_INTERFACE = (
    "needs transformers.AttentionInterface and transformers.masking_utils "
    f"(LRP, chefer2021; transformers>=5.0), absent in transformers {transformers.__version__}"
)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _declared_floor() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    match = re.search(r'"transformers>=([0-9.]+)"', text)
    assert match, "pyproject.toml declares no transformers floor"
    return match.group(1)


def _oldest_tested() -> str:
    match = re.search(
        r"^OLDEST_TRANSFORMERS=([0-9.]+)$", (ROOT / "scripts/test.sh").read_text(), re.M
    )
    assert match, "scripts/test.sh pins no OLDEST_TRANSFORMERS"
    return match.group(1)


def test_the_declared_floor_is_the_version_ci_tests() -> None:
    # The CI environment must hold exactly the oldest version pip may install.
    floor, tested = _declared_floor(), _oldest_tested()
    assert _version(tested) == _version(floor) + (0,) * (3 - len(_version(floor))), (floor, tested)
    assert _version(transformers.__version__) >= _version(floor)


def test_registration_follows_what_transformers_offers() -> None:
    assert register(required=False) is HAS_ATTENTION_INTERFACE


@pytest.mark.skipif(not HAS_ATTENTION_INTERFACE, reason=NEEDS_ATTENTION_INTERFACE)
def test_lrp_attention_is_registered_with_transformers() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    assert register() is True
    assert AttentionInterface()[IMPLEMENTATION] is lrp_attention
    assert IMPLEMENTATION in AttentionMaskInterface()


@pytest.mark.skipif(HAS_ATTENTION_INTERFACE, reason="LRP runs on this transformers")
def test_register_names_the_version_lrp_needs() -> None:
    with pytest.raises(ModelNotSupportedError) as error:
        register()
    message = str(error.value)
    assert "transformers>=5.0" in message
    assert f"this is transformers {transformers.__version__}" in message
    assert "pip install -U" in message
    assert error.value.__cause__ is None or isinstance(error.value.__cause__, ImportError)
    assert register(required=False) is False


@pytest.mark.skipif(HAS_ATTENTION_INTERFACE, reason="LRP runs on this transformers")
@pytest.mark.parametrize("method", ["lrp", "chefer2021"])
def test_lrp_is_refused_clearly_and_the_model_left_as_it_was(method: str) -> None:
    from tiny_models import build

    model, tokenizer = build("bert-cls")
    model.train()
    flags = [p.requires_grad for p in model.parameters()]
    implementation = attention_implementation(model)
    with pytest.raises(ModelNotSupportedError, match="AttentionInterface"):
        attnwidget.explain(model, tokenizer, "the dog runs", methods=[method])
    assert model.training and attention_implementation(model) == implementation
    assert [p.requires_grad for p in model.parameters()] == flags
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    # Every other method works on the same model.
    explanation = attnwidget.explain(
        model, tokenizer, "the dog runs", methods=["raw", "input_x_gradient"]
    )
    assert np.isfinite(explanation.scores["input_x_gradient"]).all()


def test_import_works_in_a_fresh_interpreter() -> None:
    # The package imports on this transformers (also below LRP's floor) and
    # the core API is there.
    import subprocess
    import sys

    code = "import attnwidget; print(len(attnwidget.available_methods()))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= 6


# ---------------------------------------------------------------------------
# Plugin of the oldest-transformers run (loaded with ``-p test_versions``).


def _returns_token_type_ids(tokenizer: Any) -> bool:
    return "token_type_ids" in tokenizer("a dog", "the cats")


def _skips() -> dict[str, tuple[bool, str]]:
    """Node id prefix -> (skipped on this transformers?, why). Each condition is
    the feature itself, so a test runs again as soon as its cause is gone."""
    from tiny_models import roberta_tokenizer

    return {
        "tests/test_capture.py::test_attention_and_gradients_match_an_independent_capture": (
            not HAS_SET_ATTN,
            "the test's reference calls model.set_attn_implementation (transformers>=4.54)",
        ),
        "tests/test_capture.py::test_model_is_left_exactly_as_it_was": (
            not HAS_ATTENTION_INTERFACE,
            "runs every method, LRP and chefer2021 included: " + NEEDS_ATTENTION_INTERFACE,
        ),
        "tests/test_capture.py::test_sentence_pairs_record_the_segment_boundary[roberta-cls]": (
            _returns_token_type_ids(roberta_tokenizer()),
            "the tiny RoBERTa fixture's tokenizer returns token_type_ids here (segment B = "
            "1) but its config has one token type; real RoBERTa tokenizers return none",
        ),
    }


def pytest_collection_modifyitems(config: Any, items: list[pytest.Item]) -> None:
    """Skip, with its reason, each test that needs a newer transformers."""
    skips, used = _skips(), set()
    for item in items:
        for prefix, (condition, reason) in skips.items():
            if item.nodeid.startswith(prefix):
                used.add(prefix)
                if condition:
                    item.add_marker(pytest.mark.skip(reason=reason))
    files = {item.nodeid.split("::")[0] for item in items}
    stale = [p for p in skips if p.split("::")[0] in files and p not in used]
    if stale:
        raise pytest.UsageError(f"tests/test_versions.py _skips() names no test: {stale}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many tests ran on this transformers (the core set's size)."""
    stats = terminalreporter.stats
    ran = len(stats.get("passed", [])) + len(stats.get("failed", []))
    skipped = len(stats.get("skipped", []))
    terminalreporter.write_line(
        f"transformers {transformers.__version__} (torch {torch.__version__}): "
        f"{ran} tests ran, {skipped} skipped (reasons: pytest -rs)"
    )
