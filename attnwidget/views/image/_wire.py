"""ImageView's data on the wire: the image as PNG, and the patch-to-patch maps
the page draws when a patch is clicked, in chunks no message exceeds.

Query maps
----------
Row 0 of every map is the explanation's query token (CLS for a classifier:
what the page shows while no patch is selected), rows 1..P the patch tokens
in row-major order; the P columns are the patch tokens (the special columns
are dropped, as :meth:`~attnwidget.Explanation.patch_scores` drops them).

- ``"attention"``: layer l, every head: float16 (H, 1+P, P), the post-softmax
  attention of each query row over the patches;
- ``"rollout"``: layer l: float16 (1, 1+P, P), attention rollout up to layer
  l (:func:`attnwidget.rollout`, with the explanation's rollout options).

A *chunk* is one map's layer, a range of heads and a range of query rows::

    {"map": "attention", "layer": 3, "heads": [0, 12], "rows": [0, 197]}

with ``(h1 - h0) * (r1 - r0) * P`` float16 values, head-major, each chunk at
most :data:`MAX_MESSAGE_BYTES` (the Jupyter server drops websocket messages
over 10 MiB by default). The initial state ships whole layers, the shown
one first (``preload`` bytes + ``preload_index`` chunks with
``offset``/``nbytes``), as many as fit in :data:`PRELOAD_BYTES` with the
whole state within :data:`STATE_BYTES` (a view that opens on a score map
draws none before a click, and takes a smaller budget:
``image_view.SCORE_VIEW_PRELOAD_BYTES``); the page asks for the rest:

- page -> kernel: ``{"type": "request", "map": "attention", "layer": l}``;
- kernel -> page: ``{"type": "chunk", **chunk, "dtype": "float16",
  "shape": [heads, rows, P]}`` with the values as its one buffer, as many as
  the layer takes; ``{"type": "error", "message": ...}`` when it cannot.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from attnwidget._images import patch_positions
from attnwidget.results.explanation import Explanation
from attnwidget.views.core.attention_data import MAX_MESSAGE_BYTES
from attnwidget.views.core.base import RecordedReply
from attnwidget.views.core.buffers import encode_attention
from attnwidget.views.core.format import format_number

#: The whole initial state at most (image, scores and preloaded maps), in bytes.
STATE_BYTES = MAX_MESSAGE_BYTES
#: The query maps the initial state holds at most: ViT-B/16's shown layer
#: (0.96 MiB of attention and rollout), every layer of small models. A saved
#: page parses the state before it draws: 4 MiB of it doubled the first render.
PRELOAD_BYTES = 2**20
#: The image is sent at most this many pixels on its longer side (downscaled).
MAX_IMAGE_SIDE = 1024
#: The patch-to-patch maps, by their name in messages.
MAPS = ("attention", "rollout")
#: Bytes per float16 value.
_HALF = 2
#: The rollout options a view reuses from the explanation's rollout scores.
_ROLLOUT_OPTIONS = ("head_fusion", "residual", "discard_ratio", "keep_columns")


# -- the image ------------------------------------------------------------------


def encode_png(pixels: np.ndarray) -> bytes:
    """uint8 (H, W, 3) RGB as PNG bytes: with Pillow when installed, else zlib."""
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    try:
        import io

        from PIL import Image
    except ImportError:
        return png_bytes(pixels)
    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(out, format="PNG")
    return out.getvalue()


def png_bytes(pixels: np.ndarray) -> bytes:
    """uint8 (H, W, 3) RGB as a PNG written with zlib alone (no Pillow).

    8-bit truecolour, no interlace; each row "Up"-filtered (its difference to
    the row above, modulo 256), which compresses photos and flat drawings
    alike far better than no filter.
    """
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    if pixels.ndim != 3 or pixels.shape[2] != 3 or min(pixels.shape[:2]) < 1:
        raise ValueError(f"png_bytes needs uint8 (H, W, 3) pixels, got shape {pixels.shape}.")
    height, width = pixels.shape[:2]
    rows = pixels.reshape(height, width * 3)
    up = rows.copy()
    up[1:] = rows[1:] - rows[:-1]  # uint8 arithmetic wraps modulo 256, as PNG's filter
    filters = np.full((height, 1), 2, dtype=np.uint8)  # 2 = Up (row 0: the row above is 0)
    raw = np.hstack([filters, up]).tobytes()

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


def display_image(image: np.ndarray, max_side: int = MAX_IMAGE_SIDE) -> np.ndarray:
    """The image as sent: downscaled (antialiased) when its longer side exceeds ``max_side``."""
    height, width = image.shape[:2]
    if max(height, width) <= max_side:
        return image
    import torch
    from torch.nn.functional import interpolate

    factor = max_side / max(height, width)
    size = (max(1, round(height * factor)), max(1, round(width * factor)))
    tensor = torch.as_tensor(np.ascontiguousarray(image)).permute(2, 0, 1)[None].float()
    with torch.no_grad():
        out = interpolate(tensor, size=size, mode="bilinear", antialias=True, align_corners=False)
    return out[0].permute(1, 2, 0).round().clamp(0, 255).to(torch.uint8).numpy()


# -- patch-to-patch maps ----------------------------------------------------------


class QueryMaps:
    """The two maps of one image explanation, as float32 (layers, heads, 1+P, P)."""

    def __init__(self, explanation: Explanation) -> None:
        n = len(explanation.tokens)
        self.columns = patch_positions(n, explanation.special_tokens)
        self.rows = np.concatenate([[explanation.query_index], self.columns])
        attentions = explanation.renormalised_attentions  # with ignored keys: the methods' rows
        assert attentions is not None  # an image explanation keeps every map
        self._attentions = attentions
        options = explanation.method_options.get("rollout", {})
        self._rollout_options = {k: options[k] for k in _ROLLOUT_OPTIONS if k in options}
        self._rollout: np.ndarray | None = None
        self.layers, self.heads = (int(d) for d in attentions.shape[:2])

    @property
    def patches(self) -> int:
        return int(self.columns.size)

    def heads_of(self, name: str) -> int:
        return self.heads if name == "attention" else 1

    def layer_bytes(self, name: str) -> int:
        return self.heads_of(name) * int(self.rows.size) * self.patches * _HALF

    def layer(self, name: str, layer: int) -> np.ndarray:
        """float32 (heads, 1+P, P) of ``name`` at ``layer``."""
        if name == "attention":
            block = np.asarray(self._attentions[layer], dtype=np.float32)
            return block[:, self.rows][:, :, self.columns]
        return self.rollout()[layer][None]

    def rollout(self) -> np.ndarray:
        """float32 (layers, 1+P, P): rollout up to each layer, query rows × patch columns."""
        if self._rollout is None:
            from attnwidget.methods.rollout import rollout

            maps = rollout(self._attentions, **self._rollout_options)
            self._rollout = maps[:, self.rows][:, :, self.columns].astype(np.float32)
        return self._rollout


def chunk_ranges(
    heads: int, rows: int, cols: int, max_bytes: int = MAX_MESSAGE_BYTES
) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """``(heads, rows)`` ranges covering a (heads, rows, cols) float16 layer, each
    at most ``max_bytes``: whole layers, else groups of heads, else row blocks."""
    row_bytes = cols * _HALF
    head_bytes = rows * row_bytes
    if head_bytes <= max_bytes:
        step = max(1, max_bytes // head_bytes)
        for h0 in range(0, heads, step):
            yield (h0, min(heads, h0 + step)), (0, rows)
        return
    step = max(1, max_bytes // row_bytes)
    for h0 in range(heads):
        for r0 in range(0, rows, step):
            yield (h0, h0 + 1), (r0, min(rows, r0 + step))


def layer_chunks(
    maps: QueryMaps, name: str, layer: int, max_bytes: int | None = None
) -> Iterator[tuple[dict[str, Any], bytes]]:
    """The chunk messages (content, float16 bytes) that carry ``name`` at ``layer``,
    each at most ``max_bytes`` (default :data:`MAX_MESSAGE_BYTES`)."""
    values = maps.layer(name, layer)
    heads, rows, cols = values.shape
    limit = MAX_MESSAGE_BYTES if max_bytes is None else max_bytes
    for (h0, h1), (r0, r1) in chunk_ranges(heads, rows, cols, limit):
        data = encode_attention(values[h0:h1, r0:r1], name=f"{name} of layer {layer}")
        content = {
            "type": "chunk",
            "map": name,
            "layer": int(layer),
            "heads": [h0, h1],
            "rows": [r0, r1],
            "dtype": "float16",
            "shape": [h1 - h0, r1 - r0, cols],
        }
        yield content, data


def layer_order(layers: int, shown: int) -> list[tuple[str, int]]:
    """(map, layer) in the order they are preloaded and exported: the shown layer
    first (rollout, then attention), then the other rollout layers, then attention."""
    order = [("rollout", shown), ("attention", shown)]
    order += [("rollout", layer) for layer in range(layers) if layer != shown]
    order += [("attention", layer) for layer in range(layers) if layer != shown]
    return order


def preload(
    maps: QueryMaps, shown: int, budget: int
) -> tuple[bytes, list[dict[str, Any]], set[tuple[str, int]]]:
    """Whole layers for the initial state within ``budget`` bytes: (bytes, index,
    the (map, layer) pairs held)."""
    parts: list[bytes] = []
    index: list[dict[str, Any]] = []
    held: set[tuple[str, int]] = set()
    offset = 0
    for name, layer in layer_order(maps.layers, shown):
        if maps.layer_bytes(name) > budget - offset:
            continue
        for content, data in layer_chunks(maps, name, layer, max_bytes=budget):
            entry = {k: content[k] for k in ("map", "layer", "heads", "rows")}
            index.append({**entry, "offset": offset, "nbytes": len(data)})
            parts.append(data)
            offset += len(data)
        held.add((name, layer))
    return b"".join(parts), index, held


# -- requests and saved pages ------------------------------------------------------


def request_reply(
    maps: QueryMaps, content: dict[str, Any]
) -> tuple[list[tuple[dict[str, Any], bytes]], str]:
    """The chunks answering a page's request, or ([], why it cannot be served)."""
    name, layer = content.get("map"), content.get("layer")
    if (
        name not in MAPS
        or not isinstance(layer, int)
        or isinstance(layer, bool)
        or not 0 <= layer < maps.layers
    ):
        return [], (
            f"cannot serve {name!r} at layer {layer!r}: maps are {', '.join(MAPS)}, layers "
            f"0..{maps.layers - 1}"
        )
    return list(layer_chunks(maps, name, layer)), ""


def export_replies(
    maps: QueryMaps, held: set[tuple[str, int]], shown: int, budget: int
) -> tuple[list[RecordedReply], dict[str, Any] | None]:
    """A saved page's replies: the layers the live state lacks, up to ``budget`` bytes
    (in :func:`layer_order`), and the message for a request beyond them."""
    replies: list[RecordedReply] = []
    left = budget
    for name, layer in layer_order(maps.layers, shown):
        if (name, layer) in held:
            continue
        if maps.layer_bytes(name) > left:
            why = (
                f"this saved page holds {format_number(budget / 2**20)} MiB of the query maps "
                "(to_html(embed_bytes=...)); this layer was left out. Save the view again with "
                "a larger embed_bytes, or rerun the notebook"
            )
            return replies, {"type": "error", "message": why}
        left -= maps.layer_bytes(name)
        match = {"type": "request", "map": name, "layer": layer}
        replies += [RecordedReply(match, c, [d]) for c, d in layer_chunks(maps, name, layer)]
    return replies, None
