"""Which ``keep`` (what of the attention a capture kept) each method works from.

``keep="all"`` keeps the (L, H, n, n) attention and its gradient; ``"fused"``
each layer's head mean (L, n, n) plus rows; ``"rows"`` only rows: each layer's
and head's query row, the rollout row for every top layer and the
gradient-weighted attention row for every start layer
(:mod:`attnwidget.capture.keep`). Methods that do not read the attention
(gradients, integrated gradients, blank-out, LRP, which re-run the model)
work under every keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnwidget.errors import InputError
from attnwidget.methods.registry import MethodSpec

KEEP_ORDER: dict[str, int] = {"rows": 0, "fused": 1, "all": 2}

#: Needs that read the captured attention (a method with one of them needs
#: "all" unless :func:`required_keep` knows better).
_ATTENTION_NEEDS = frozenset({"attentions", "attention_grads", "head_values"})


def required_keep(spec: MethodSpec, options: dict[str, Any]) -> tuple[str, str]:
    """The smallest keep ``spec`` works from with ``options``, and why (for messages)."""
    name, fusion = spec.name, options.get("head_fusion", "mean")
    if name in ("raw", "grad_attention"):
        return "rows", ""
    if name in ("rollout", "flow"):
        if fusion != "mean":
            return "all", f"head_fusion={fusion!r} fuses the heads itself"
        if name == "rollout" and options.get("discard_ratio", 0.0) == 0.0:
            return "rows", ""
        why = "discard_ratio drops links of whole maps" if name == "rollout" else ""
        return "fused", why or "max flow reads every layer's fused map"
    if spec.needs & _ATTENTION_NEEDS:
        return "all", "it reads every head's attention map"
    return "rows", ""


def smallest_keep(specs: Sequence[MethodSpec], options: dict[str, dict[str, Any]]) -> str:
    """The smallest keep every method in ``specs`` works from."""
    keeps = [required_keep(spec, options.get(spec.name, {}))[0] for spec in specs]
    return max(keeps, key=KEEP_ORDER.__getitem__, default="rows")


def check_keep_for(
    specs: Sequence[MethodSpec], options: dict[str, dict[str, Any]], keep: str
) -> None:
    """Raise InputError naming the keep a method needs when ``keep`` is too small."""
    for spec in specs:
        needed, why = required_keep(spec, options.get(spec.name, {}))
        if KEEP_ORDER[needed] > KEEP_ORDER[keep]:
            raise InputError(
                f"method {spec.name!r} needs keep={needed!r} ({why}), but the attention "
                f"was captured with keep={keep!r}; pass keep={needed!r} to explain(), or "
                "leave keep unset (None) to choose the smallest keep the methods need."
            )


def keep_plan(
    keep: Any, specs: Sequence[MethodSpec], options: dict[str, dict[str, Any]]
) -> tuple[str | None, str]:
    """``keep`` checked (value, and against the methods) before a model runs, and the
    smallest keep the methods need (what ``keep=None`` falls back to for long inputs)."""
    from attnwidget.capture.keep import check_keep

    keep = check_keep(keep)
    if keep is not None:
        check_keep_for(specs, options, keep)
    return keep, smallest_keep(specs, options)
