"""The :class:`Explanation` record returned by :func:`attnwidget.explain`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnwidget._arrays import as_token_list
from attnwidget.errors import AttentionShapeError, InputError
from attnwidget.methods import sinks
from attnwidget.methods.graph import as_attention_array


def _positions(attentions: Any, rows: Any = None) -> int | None:
    if attentions is None:  # keep="fused"/"rows": the rows' last axis is n
        attentions = rows
    shape = getattr(attentions, "shape", None)
    return int(shape[-1]) if shape is not None and len(shape) else None


#: Weights this far below 0 are refused; smaller ones are float rounding of
#: attention computed elsewhere (e.g. a difference of sums), not a wrong input.
NEGATIVE_TOLERANCE = 1e-6


def _query_row(query_index: Any, n: int) -> int:
    """``query_index`` (negative counts from the end) as a row 0 … n-1, or an InputError."""
    if isinstance(query_index, bool) or not isinstance(query_index, (int, np.integer)):
        raise InputError(
            f"query_index={query_index!r} is a {type(query_index).__name__}; pass an int "
            f"row (0 … {n - 1}, or -{n} … -1 from the end)."
        )
    if not -n <= query_index < n:
        raise InputError(
            f"query_index={query_index} is out of range for {n} tokens; pass 0 … {n - 1} "
            f"(or -{n} … -1 from the end)."
        )
    return int(query_index) % n


def _refuse_negative_weights(array: np.ndarray) -> None:
    """Attention weights are probabilities; name the first negative one (layer, head, row)."""
    negative = array < -NEGATIVE_TOLERANCE
    count = int(negative.sum())
    if not count:
        return
    layer, head, row, column = (int(i) for i in np.argwhere(negative)[0])
    raise InputError(
        f"attention holds {count} negative weight{'s' if count > 1 else ''}; the first, "
        f"{float(array[layer, head, row, column]):.4g}, at layer {layer}, head {head}, row "
        f"{row}, column {column} (0-based). Attention weights are post-softmax probabilities "
        "(each ≥ 0, each row summing to 1): pass the softmax output (output_attentions=True), "
        "not logits or scores, nor relevance or differences of maps."
    )


@dataclass
class Explanation:
    """Attention and relevance scores of one input for one target.

    Attributes:
        tokens: readable token strings (no ``Ġ``/``##`` markers), length n.
        attentions: float32 (L, H, n, n) post-softmax self-attention; for
            encoder–decoder models the encoder's (see also ``decoder_attentions``
            and ``cross_attentions``). None unless ``keep == "all"``.
        query_index: the row explained (CLS, last position, or mask position;
            for encoder–decoder models the decoder position).
        scores: method name -> float32 (n,) relevance of each input token.
        target: the explained target (class label, token string, or None).
        target_id: class index or token id of the target.
        logits, probabilities: float32 model outputs at the query position.
        raw_tokens: the tokenizer's own token strings.
        input_ids: int64 (n,) token ids, when a model produced them.
        sentence_b_start: index of the first token of the second segment of a
            sentence pair, else None.
        kind: "encoder", "masked-lm", "causal-lm", "encoder-decoder", "image",
            "embedding" (a bare encoder, :mod:`attnwidget.pipeline.similarity`) or
            "arrays".
        decoder_tokens, decoder_attentions (L, H, m, m), cross_attentions
            (L, H, m, n): encoder–decoder models only.
        details: per-method extras (e.g. integrated gradients' completeness
            gap and step count, flow's trivial-bound flags).
        method_options: method name -> the options it ran with, defaults
            filled in (see :func:`attnwidget.method_info`).
        image, patch_grid, patch_size, special_tokens: image explanations
            (``kind="image"``) only: the input as uint8 RGB (H, W, 3), the
            patch grid (rows, cols) the model saw, the patch side in pixels
            of the model's input, and the indices of the tokens that are not
            patches (CLS, distillation, registers; they come first). Their
            scores are 0 (not explained): see :meth:`patch_scores` and
            :meth:`heatmap`.
        target_score: the explained scalar: the target's logit, or for a
            sentence pair (``target="similarity"``) the cosine similarity of
            the two texts' pooled embeddings.
        pair_tokens, pair_scores, pair_attentions (L, H, m, m), pair_details:
            the second text of a similarity explanation (``kind="embedding"``),
            which runs as its own input: its m tokens, each method's (m,)
            scores (the same similarity explained from its side), its
            attention and per-method extras. None / empty otherwise.
        pooling: how a bare encoder's hidden states were pooled ("mean" or
            "cls"), None for models with a head.
        keep: what of the attention was kept ("all", "fused" or "rows"; see
            :func:`attnwidget.explain`). With "fused" or "rows", ``attentions``
            and ``attention_grads`` are None; views of single heads need "all"
            (:meth:`require_attentions` says so).
        fused_attentions: float32 (L, n, n), each layer's head-mean attention
            (keep="fused"; None otherwise, see :meth:`fused_attention`).
        attention_rows: float32 (L, H, n), each layer's and head's query row
            (keep="fused" or "rows"; None for "all").
        ignored_keys: the key positions left out of every attention row
            (``explain(..., ignore_keys=...)``, :mod:`attnwidget.methods.sinks`),
            sorted, 0 … n−1; [] for none. ``attentions`` stays the model's own;
            the methods read, and the views draw, :attr:`renormalised_attentions`.
    """

    tokens: list[str]
    attentions: np.ndarray | None
    query_index: int = 0
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    target: Any = None
    target_id: int | None = None
    logits: np.ndarray | None = None
    probabilities: np.ndarray | None = None
    raw_tokens: list[str] | None = None
    input_ids: np.ndarray | None = None
    sentence_b_start: int | None = None
    kind: str = "arrays"
    attention_grads: np.ndarray | None = None
    decoder_tokens: list[str] | None = None
    decoder_attentions: np.ndarray | None = None
    cross_attentions: np.ndarray | None = None
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    method_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    image: np.ndarray | None = None
    patch_grid: tuple[int, int] | None = None
    patch_size: int | None = None
    special_tokens: list[int] = field(default_factory=list)
    keep: str = "all"
    fused_attentions: np.ndarray | None = None
    attention_rows: np.ndarray | None = None
    target_score: float | None = None
    pair_tokens: list[str] | None = None
    pair_scores: dict[str, np.ndarray] = field(default_factory=dict)
    pair_attentions: np.ndarray | None = None
    pair_details: dict[str, dict[str, Any]] = field(default_factory=dict)
    pooling: str | None = None
    ignored_keys: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        # A string would read as one token per character; refused with the fix.
        self.tokens = as_token_list(
            self.tokens, expected=_positions(self.attentions, self.attention_rows)
        )
        n = len(self.tokens)
        if self.attentions is None:
            self._check_kept(n)
        elif self.attentions.ndim != 4 or self.attentions.shape[-2:] != (n, n):
            raise AttentionShapeError(
                f"attentions has shape {tuple(self.attentions.shape)} but there are {n} "
                f"tokens; expected (L, H, {n}, {n}). Pass the tokens the attention was "
                "computed on (special tokens included)."
            )
        # For encoder–decoder models the explained row is a decoder position.
        rows = len(self.decoder_tokens) if self.decoder_tokens is not None else n
        if not 0 <= self.query_index < rows:
            raise IndexError(f"query_index={self.query_index} out of range for {rows} tokens.")
        if self.kind == "image":
            self._check_image()
        self.ignored_keys = sinks.stored_keys(self.ignored_keys, n, self.attentions is not None)

    @property
    def renormalised_attentions(self) -> np.ndarray | None:
        """(L, H, n, n): ``attentions`` with :attr:`ignored_keys` left out of every row,
        each row renormalised over the other keys
        (:func:`~attnwidget.methods.sinks.renormalise_keys`), what the attention
        methods read and the views draw; ``attentions`` itself when no key is left out."""
        maps = self.attentions
        return maps if maps is None else sinks.renormalised(maps, self.ignored_keys)

    def _check_kept(self, n: int) -> None:
        """keep="fused"/"rows": the query rows (L, H, n) and, for "fused", (L, n, n) maps."""
        rows, fused = self.attention_rows, self.fused_attentions
        if self.keep == "all" or rows is None or rows.ndim != 3 or rows.shape[-1] != n:
            raise AttentionShapeError(
                f"attentions is None (keep={self.keep!r}), so attention_rows must be an "
                f"(L, H, {n}) array and keep 'fused' or 'rows'; pass attentions (L, H, n, n) "
                "for keep='all'."
            )
        if self.keep == "fused" and (fused is None or fused.shape != (rows.shape[0], n, n)):
            raise AttentionShapeError(
                f"keep='fused' needs fused_attentions of shape ({rows.shape[0]}, {n}, {n})."
            )

    def fused_attention(self, layer: int) -> np.ndarray:
        """float32 (n, n): layer ``layer``'s attention, mean over heads (keep "all" or
        "fused"; with :attr:`ignored_keys`, of :attr:`renormalised_attentions`)."""
        if self.fused_attentions is not None:
            return self.fused_attentions[layer]
        maps = sinks.renormalised(self.require_attentions("fused_attention"), self.ignored_keys)
        return maps[layer].mean(axis=0)

    def require_attentions(self, what: str) -> np.ndarray:
        """The (L, H, n, n) attention, or an InputError saying that ``what`` needs keep='all'."""
        if self.attentions is not None:
            return self.attentions
        raise InputError(
            f"{what} needs every head's attention map, but this explanation was made with "
            f"keep={self.keep!r}, which keeps only "
            f"{'each layer’s head mean and ' if self.keep == 'fused' else ''}the query rows; "
            "explain again with keep='all' (or with keep='fused' and use "
            "AttentionMatrixView, which draws each layer's mean over heads)."
        )

    def _check_image(self) -> None:
        image, grid = self.image, self.patch_grid
        if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3:
            raise ValueError("an image explanation needs image as a uint8 (H, W, 3) array.")
        if grid is None or self.patch_size is None:
            raise ValueError("an image explanation needs patch_grid and patch_size.")
        self.patch_grid = (int(grid[0]), int(grid[1]))
        self.special_tokens = [int(i) for i in self.special_tokens]
        patches = len(self.tokens) - len(self.special_tokens)
        if patches != self.patch_grid[0] * self.patch_grid[1]:
            raise AttentionShapeError(
                f"{len(self.tokens)} tokens with {len(self.special_tokens)} special ones leave "
                f"{patches} patch tokens, but the patch grid {self.patch_grid} has "
                f"{self.patch_grid[0] * self.patch_grid[1]}."
            )

    def _attention_shape(self) -> tuple[int, ...]:
        """(L, H, …) of whatever attention is kept: the full maps, else the query rows."""
        kept = self.attentions if self.attentions is not None else self.attention_rows
        if kept is None:
            raise ValueError(
                "this explanation holds no per-head attention (attentions and attention_rows "
                "are None), so it has no layer and head counts."
            )
        return tuple(kept.shape)

    @property
    def num_layers(self) -> int:
        return int(self._attention_shape()[0])

    @property
    def num_heads(self) -> int:
        return int(self._attention_shape()[1])

    @property
    def methods(self) -> list[str]:
        """Names of the methods whose scores this explanation holds."""
        return list(self.scores)

    @classmethod
    def from_attentions(
        cls,
        attentions: Any,
        tokens: Sequence[str],
        *,
        query_index: int = 0,
        methods: Sequence[str] | None = ("raw", "rollout"),
        sentence_b_start: int | None = None,
        method_options: dict[str, dict[str, Any]] | None = None,
        ignore_keys: Sequence[int] | str | None = None,
    ) -> Explanation:
        """Build an explanation from attention computed elsewhere.

        Args:
            attentions: the Hugging Face / bertviz tuple of per-layer tensors of
                shape (1, H, n, n), or an array of shape (L, H, n, n).
            tokens: the n token strings (special tokens included).
            query_index: the row to explain (default 0, the CLS position).
            methods: attention-only methods to score (any registered method
                that needs nothing but attention, e.g. "raw", "rollout", "flow").
            method_options: per-method options, checked as in
                :func:`attnwidget.explain` (before anything is computed).
            ignore_keys: key positions left out of every row, rows renormalised,
                as in :func:`attnwidget.explain`: a list (negative counts from
                the end) or "first"; "special" needs a tokenizer and is refused.
        """
        # local: the methods package imports this module's dependencies
        from attnwidget.methods import compute_scores, get_method
        from attnwidget.methods.registry import resolve_method_options

        names = list(methods or ())
        options = resolve_method_options([get_method(name) for name in names], method_options)

        array = as_attention_array(attentions)
        # A single string is refused: it would be read as one token per character.
        tokens = as_token_list(tokens, expected=int(array.shape[-1]))
        if array.shape[-1] != len(tokens):
            raise AttentionShapeError(
                f"attention covers {array.shape[-1]} tokens but {len(tokens)} tokens were "
                "given; pass exactly the tokens the attention was computed on."
            )
        _refuse_negative_weights(array)
        ignored = sinks.resolve_ignore_keys(ignore_keys, len(tokens), special=None)
        explanation = cls(
            tokens=tokens,
            attentions=array.astype(np.float32),
            query_index=_query_row(query_index, len(tokens)),
            sentence_b_start=sentence_b_start,
            ignored_keys=ignored,
        )
        if names:
            from attnwidget.methods.registry import ScoreContext

            context = ScoreContext(
                attentions=sinks.renormalise_keys(array, ignored),
                query_index=explanation.query_index,
                options=options,
            )
            explanation.scores, explanation.details = compute_scores(names, context)
            explanation.method_options = options
        return explanation

    def _image_scores(self, method: str) -> np.ndarray:
        if self.kind != "image":
            raise ValueError(
                f"patch_scores and heatmap need an image explanation; this one is {self.kind!r} "
                "(explain an image with attnwidget.explain(model, processor, image))."
            )
        if method not in self.scores:
            raise KeyError(
                f"no scores for method {method!r}; this explanation has: {', '.join(self.scores)}."
            )
        return self.scores[method]

    def _patch_grid(self) -> tuple[int, int]:
        # __post_init__ refuses an image explanation without a grid
        assert self.patch_grid is not None and self.patch_size is not None
        return self.patch_grid

    def patch_scores(self, method: str) -> np.ndarray:
        """float32 (rows, cols): ``method``'s score of each patch (special tokens left out)."""
        from attnwidget._images import patch_map

        scores = self._image_scores(method)
        return patch_map(scores, self.special_tokens, self._patch_grid())

    def heatmap(
        self, method: str, size: str | tuple[int, int] = "image", *, normalize: bool = False
    ) -> np.ndarray:
        """float32 map of ``method``'s patch scores over the image.

        Upsampled bilinearly by the patch size as Chefer et al. (2021) do, so
        ``size="input"`` is the model's input size (rows·patch, cols·patch);
        ``size="image"`` (default) then resizes that to :attr:`image`'s
        (H, W); ``(height, width)`` to any size. ``normalize=True`` min–max
        scales to [0, 1] as their evaluations do.
        """
        from attnwidget._images import min_max, patch_map, upsample

        scores = self._image_scores(method)
        patches = patch_map(scores, self.special_tokens, self._patch_grid())
        target: tuple[int, int] | None
        if size == "input":
            target = None
        elif size == "image":
            if self.image is None:
                raise ValueError("this explanation holds no image; use size='input' or (h, w).")
            target = (int(self.image.shape[0]), int(self.image.shape[1]))
        elif isinstance(size, tuple) and len(size) == 2 and all(int(v) > 0 for v in size):
            target = (int(size[0]), int(size[1]))
        else:
            raise ValueError(f"size={size!r}: use 'image', 'input' or (height, width).")
        assert self.patch_size is not None  # checked by _patch_grid
        out = upsample(patches, int(self.patch_size), target)
        return min_max(out) if normalize else out

    def pair_explanation(self) -> Explanation:
        """The second text of a similarity explanation as an Explanation of its own.

        Its tokens, attention, ``pair_scores`` as ``scores`` and ``pair_details``
        as ``details``, the same ``target_score``: for every view that shows one
        text (HeadView, FlowView, ...). Raises ValueError without a pair.
        """
        if self.pair_tokens is None or self.pair_attentions is None:
            raise ValueError(
                "this explanation has no second text; pair_explanation() is for "
                'explain(encoder, tokenizer, text, text_pair=..., target="similarity").'
            )
        return Explanation(
            tokens=list(self.pair_tokens),
            attentions=self.pair_attentions,
            query_index=self.query_index,
            scores=dict(self.pair_scores),
            target=self.target,
            kind=self.kind,
            details=dict(self.pair_details),
            method_options=dict(self.method_options),
            target_score=self.target_score,
            pooling=self.pooling,
        )

    def top_tokens(self, method: str, k: int = 5) -> list[tuple[str, float]]:
        """The k highest-scored tokens of ``method`` as (token, score) pairs."""
        scores = self.scores[method]
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self.tokens[i], float(scores[i])) for i in order]

    def __repr__(self) -> str:
        methods = ", ".join(self.scores) or "none"
        ignored = f", ignored_keys={self.ignored_keys}" if self.ignored_keys else ""
        return (
            f"Explanation(kind={self.kind!r}, n={len(self.tokens)}, layers={self.num_layers}, "
            f"heads={self.num_heads}, target={self.target!r}, methods=[{methods}]{ignored})"
        )
