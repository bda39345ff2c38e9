"""The largest message a view may send to the page, and the check every view runs.

The Jupyter server passes kernel messages to the browser over a websocket
whose messages tornado caps at ``max_message_size``: 10 MiB by default
(:data:`JUPYTER_LIMIT`). A bigger message is dropped: the page shows nothing,
or an old state, and the notebook logs only a websocket error. Every view
therefore checks each message before it goes (:func:`check_message`, called
from ``_AttnWidget._send``), and refuses one above :data:`MESSAGE_CAP` with an
:class:`~attnwidget.errors.InputError` naming the view, the largest part (a
trait or a custom message's key) and how to make it smaller. Views whose data
grow with the input page it instead (HeadView/ModelView's attention chunks,
AttentionMatrixView's tiles), each message under the cap.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from attnwidget.errors import InputError

#: The Jupyter server's default websocket message limit (tornado's max_message_size).
JUPYTER_LIMIT = 10 * 1024 * 1024
#: The most one message of a view may carry: below the server's limit, leaving room for
#: the message's envelope (header, parent header, metadata), about a kilobyte.
MESSAGE_CAP = 8 * 1024 * 1024


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _part_sizes(state: dict[str, Any], paths: Sequence[Sequence[Any]], buffers: Sequence[Any]):
    """Bytes per top-level key of the message: its JSON plus the buffers under it."""
    sizes: dict[str, int] = {}
    for key, value in state.items():
        try:
            sizes[str(key)] = len(json.dumps(value, default=str))
        except (TypeError, ValueError):  # pragma: no cover - the comm would fail anyway
            sizes[str(key)] = 0
    for path, buffer in zip(paths, buffers, strict=False):
        key = str(path[0]) if path else "?"
        sizes[key] = sizes.get(key, 0) + memoryview(buffer).nbytes
    return sizes


def message_bytes(content: dict[str, Any], buffers: Sequence[Any] = ()) -> int:
    """Bytes of a message's content: its JSON plus its binary buffers."""
    return len(json.dumps(content, default=str)) + sum(memoryview(b).nbytes for b in buffers)


def check_message(
    owner: str,
    msg: dict[str, Any],
    buffers: Sequence[Any] | None,
    describe: Callable[[str], str],
    cap: int = MESSAGE_CAP,
) -> None:
    """Raise :class:`InputError` when the widget message ``msg`` is above ``cap`` bytes.

    ``msg`` is what ipywidgets sends: ``{"method": "update", "state", "buffer_paths"}``
    or ``{"method": "custom", "content"}``. ``describe(part)`` returns what the
    view knows about a part (e.g. the Annotator: which item), or "".
    """
    buffers = list(buffers or ())
    size = message_bytes(msg, buffers)
    if size <= cap:
        return
    if msg.get("method") == "custom":
        parts = _part_sizes(dict(msg.get("content") or {}), [["content"]] * len(buffers), buffers)
        kind = "a message"
    else:
        parts = _part_sizes(dict(msg.get("state") or {}), msg.get("buffer_paths") or [], buffers)
        kind = "its state"
    largest = max(parts, key=lambda key: parts[key]) if parts else "?"
    detail = describe(largest)
    raise InputError(
        f"{owner}: {kind} would be {_mib(size)}, over the {_mib(cap)} a message to the page may "
        f"carry (the Jupyter server drops messages over {_mib(JUPYTER_LIMIT)}); the largest part "
        f"is {largest!r} ({_mib(parts.get(largest, 0))}){': ' + detail if detail else ''}. "
        "Nothing was sent: shorten or split that input (e.g. cut a long text into several "
        "items), or show a smaller part of it"
    )
