"""NeuronView's cost from the sizes, known before the model runs.

The page gets one layer's (H, n, n) scores and weights and its (H, n, d)
vectors as float32, so its state grows as ``8·H·n²`` bytes: a text long
enough to pass the message cap (:data:`~attnwidget.views.core.message_size.MESSAGE_CAP`)
is refused here, before the forward pass, instead of after it (7,072 tokens
took 36 s to reach that refusal). Below the cap, work estimated at
:data:`~attnwidget.methods.progress.LONG_WORK_SECONDS` or more is announced
and its steps shown (:class:`~attnwidget.methods.progress.Progress`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from attnwidget.capture.qk import QKLayout
from attnwidget.errors import InputError
from attnwidget.views.core.message_size import MESSAGE_CAP

#: CPU float operations per second assumed by the estimate (a busy laptop core
#: runs ~1e9–1e10; the low end keeps the estimate from promising too little).
FLOPS_PER_SECOND = 2e9
#: What the rest of a NeuronView's state takes beside one layer's arrays: the
#: front-end bundle sent with every view's state (~230 KB), the tokens and the
#: other traits. Left free under the cap so a page (re)connecting gets it whole.
STATE_RESERVE = 1024 * 2**10


@dataclass(frozen=True)
class NeuronSize:
    """The sizes that set NeuronView's cost."""

    tokens: int
    layers: int
    heads: int
    head_dim: int
    rotary: bool
    parameters: int

    @property
    def page_bytes(self) -> int:
        """Bytes of one layer's arrays in the page's state: scores, weights, q, k (rotated)."""
        vectors = (4 if self.rotary else 2) * self.heads * self.tokens * self.head_dim
        return 4 * (2 * self.heads * self.tokens**2 + vectors)

    @property
    def seconds(self) -> float:
        """A rough estimate: the forward pass (2 flops per parameter and token, plus
        each layer's n² attention) and one layer's scores and weights (~10 flops each)."""
        n, attention = self.tokens, self.layers * self.heads * self.tokens**2
        flops = 2 * self.parameters * n + 4 * attention * self.head_dim
        return (flops + 10 * self.heads * n * n) / FLOPS_PER_SECOND

    def most_tokens(self, cap: int = MESSAGE_CAP) -> int:
        """The longest text (tokens) whose page state fits under ``cap``."""
        per_token = (4 if self.rotary else 2) * self.heads * self.head_dim
        # 8·H·n² + 4·per_token·n ≤ cap − reserve, solved for n
        a, b = 8 * self.heads, 4 * per_token
        room = cap - STATE_RESERVE
        return int((-b + math.sqrt(b * b + 4 * a * room)) / (2 * a))


def neuron_size(model: Any, layouts: list[QKLayout], tokens: int) -> NeuronSize:
    first = layouts[0]
    return NeuronSize(
        tokens=tokens,
        layers=len(layouts),
        heads=first.heads,
        head_dim=first.head_dim,
        rotary=first.kind == "llama",
        parameters=sum(p.numel() for p in model.parameters()),
    )


def check_fits(size: NeuronSize, cap: int = MESSAGE_CAP) -> None:
    """Refuse, before anything runs, a text whose page state would pass ``cap``."""
    if size.page_bytes <= cap - STATE_RESERVE:
        return
    raise InputError(
        f"NeuronView: {size.tokens:,} tokens × {size.heads} heads would send "
        f"{size.page_bytes / 2**20:.1f} MiB per layer to the page (its (H, n, n) scores and "
        f"weights), over the {cap / 2**20:.0f} MiB a message may carry; nothing was run. "
        f"Use a text of at most {size.most_tokens(cap):,} tokens (cut it into parts), or "
        "HeadView / AttentionMatrixView, which page long inputs."
    )
