"""No view sends the page a message the Jupyter server would drop (issue 20).

The server's websocket refuses messages over 10 MiB (tornado's
``max_message_size``), and the page then shows nothing. Each view now checks
every message it sends (state updates and custom replies) against
``MESSAGE_CAP`` and refuses a bigger one in Python, naming the largest part;
the Annotator names the item. The messages are recorded by a comm that has a
kernel, as in a notebook, so ipywidgets really sends them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnwidget.errors import InputError
from attnwidget.results.explanation import Explanation
from attnwidget.views import AttentionMatrixView, HeadView
from attnwidget.views.annotate.annotator import Annotator
from attnwidget.views.core.message_size import JUPYTER_LIMIT, MESSAGE_CAP, message_bytes
from attnwidget.views.teach.calculator import AttentionCalculator


class RecordingComm:
    """A comm with a kernel (so ipywidgets sends) that records each message's size."""

    kernel = object()
    comm_id = "message-caps-test"

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def on_msg(self, _callback: Any) -> None:
        pass

    def send(self, data: Any = None, buffers: Any = None, **_: Any) -> None:
        self.sizes.append(message_bytes(data, buffers or ()))

    def close(self, *_: Any, **__: Any) -> None:
        pass


def connected(view: Any) -> RecordingComm:
    comm = RecordingComm()
    view.comm = comm
    return comm


def test_the_cap_is_below_the_servers_limit() -> None:
    assert MESSAGE_CAP < JUPYTER_LIMIT


def test_an_annotator_item_of_15_mb_is_refused_naming_the_item(tmp_path: Path) -> None:
    big = "word " * 3_000_000  # 15 MB of text: its words alone would be a 23 MiB state
    examples = [{"id": "small", "text": "a short text"}, {"id": "huge", "text": big}]
    ann = Annotator(examples, store=tmp_path / "s.sqlite", annotator="ana")
    comm = connected(ann)
    ann.send_state()  # the whole state, as when the page (re)connects
    assert comm.sizes and max(comm.sizes) <= MESSAGE_CAP
    with pytest.raises(InputError) as caught:
        ann.index = 1
    message = str(caught.value)
    assert "Annotator" in message and "'huge'" in message and "MiB" in message, message
    assert "split" in message  # the fix
    assert max(comm.sizes) <= MESSAGE_CAP  # nothing over the cap went out
    # Refused before the move: Python still shows the item the page shows.
    assert ann.index == 0 and ann.item["id"] == "small" and ann.current_item.id == "small"
    assert ann.store.item("huge").text == big  # the store keeps the item


def test_any_view_refuses_an_update_over_the_cap_naming_the_trait() -> None:
    calc = AttentionCalculator()
    comm = connected(calc)
    calc.send_state()
    assert max(comm.sizes) <= MESSAGE_CAP
    names = [f"q{k}-" + "x" * 2_500_000 for k in range(len(calc.query_tokens))]
    with pytest.raises(InputError, match=r"AttentionCalculator: .* largest part is 'query_tokens'"):
        calc.query_tokens = names
    assert max(comm.sizes) <= MESSAGE_CAP


@pytest.mark.parametrize("n", [512, 4096])
def test_the_largest_message_of_the_long_input_views_is_under_the_cap(n: int) -> None:
    rng = np.random.default_rng(1)
    weights = rng.random((2, 2, n, n), dtype=np.float32)
    weights /= weights.sum(-1, keepdims=True)
    exp = Explanation.from_attentions(weights, [f"t{k}" for k in range(n)], methods=None)
    view = AttentionMatrixView(exp) if n > 512 else HeadView(exp)
    comm = connected(view)
    view.send_state()
    if isinstance(view, AttentionMatrixView):
        for reply in view.tiles(0, [(i, j) for i in range(4) for j in range(4)]):
            view.send(*reply)
    assert comm.sizes and max(comm.sizes) <= MESSAGE_CAP
    assert json.dumps(comm.sizes)  # recorded, real sizes
