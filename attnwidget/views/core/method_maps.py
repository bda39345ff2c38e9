"""The per-layer, per-head maps some methods compute, as the views show them.

``effective_attention`` (Brunner et al., 2020) and ``attention_norm``
(Kobayashi et al., 2020) replace each head's attention by another (L, H, n, n)
map, kept in ``explanation.details[name]["maps"]``. HeadView and ModelView show
each as one more matrix (keyed by the method's name, next to "self"), and
FlowView draws its paths as it draws raw attention's.

As shown: effective attention as computed (it can be negative; negative links
are not drawn as lines, their weights are in the tooltips and ``selection``);
attention norms divided by their row's sum (each query's share of
``Σ_j ‖α_ij f(x_j)‖``), since the norms are on the scale of the hidden states,
not of weights in [0, 1]; the method's own scores and ``details`` keep the
norms themselves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Method name -> the label of its matrix in HeadView and ModelView.
METHOD_MATRICES: dict[str, str] = {
    "effective_attention": "Effective attention",
    "attention_norm": "Attention norm (row share)",
}


def method_maps(explanation: Any, name: str) -> np.ndarray | None:
    """float32 (L, H, n, n): ``name``'s maps as the views show them, or None."""
    maps = getattr(explanation, "details", {}).get(name, {}).get("maps")
    if maps is None:
        return None
    maps = np.asarray(maps, dtype=np.float32)
    if name == "attention_norm":
        sums = maps.sum(axis=-1, keepdims=True)
        maps = np.divide(maps, sums, out=np.zeros_like(maps), where=sums > 0)
    return maps


def shown_methods(explanation: Any) -> list[str]:
    """The methods of :data:`METHOD_MATRICES` whose maps ``explanation`` holds."""
    details = getattr(explanation, "details", {})
    return [name for name in METHOD_MATRICES if "maps" in details.get(name, {})]
