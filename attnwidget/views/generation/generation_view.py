"""GenerationView: every generated token's scores over the tokens before it.

The view of :func:`attnwidget.explain_generation`, after Inseq's per-step
attribution heat maps (Sarti et al. 2023, ACL demo): rows are the generated
tokens, columns the context (causal LMs: the prompt, then the tokens
generated before; encoder–decoders: the source tokens). Cells a step never
saw (its future) are blank. Click a generated token (or a cell of its row) to
select the step: below the map, that step's saliency over the context and a
flow diagram, lines from each context token to the generated token as wide
and opaque as its share of the row's largest score. ``aggregate="words"``
sums subword scores to words (columns only; rows stay tokens).

Message schema (traits synced with ``js/src/generation/generation_types.ts``
``GenerationTraits``). M methods, T steps, N columns:

=====================  ===========  ==========================================
trait                  type         meaning
=====================  ===========  ==========================================
``_view``              str          ``"generation"``
``columns``            list[str]    N context tokens (text, never HTML)
``prompt_length``      int          the first ``prompt_length`` columns are the
                                    prompt (source); the rest were generated
``generated_tokens``   list[str]    T generated tokens (text, never HTML)
``prefix_lengths``     list[int]    T: columns step t sees (the rest is NaN)
``words``              list[int]    N: the word of each column (0, 1, …)
``word_labels``        list[str]    the text of each word
``methods``            list[str]    M method names, rows of ``scores``
``signed``             list[bool]   M: scores may be negative (diverging map)
``scores``             bytes        (M, T, N) float32 little-endian, C order;
                                    NaN beyond a step's prefix
``shape``              list[int]    ``[M, T, N]``
``caption``            str          one line above the map (text)
``selected_method``    str          the method shown (synced)
``selected_step``      int          the selected step, -1 for none (synced)
``aggregate``          str          ``"tokens"`` or ``"words"`` (synced)
=====================  ===========  ==========================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import traitlets

from attnwidget.errors import InputError
from attnwidget.methods import get_method
from attnwidget.views.core.base import _AttnWidget
from attnwidget.views.core.selection import renamed_keyword, renamed_trait

if TYPE_CHECKING:
    from attnwidget.results.generation import GenerationExplanation

_SPACE_MARKERS = ("Ġ", "▁")


def word_groups(raw_tokens: list[str], special: list[bool]) -> list[int]:
    """The word index of each token, read from the tokenizer's markers.

    Byte-level BPE and SentencePiece vocabularies mark a token that starts a
    word (``Ġ``, ``▁``); WordPiece marks one that continues a word (``##``);
    other vocabularies (word-level) are one word per token. Special tokens
    are words of their own.
    """
    starts_marked = any(t.startswith(_SPACE_MARKERS) for t in raw_tokens)
    words, index = [], -1
    for i, (raw, is_special) in enumerate(zip(raw_tokens, special, strict=True)):
        previous_special = i > 0 and special[i - 1]
        if starts_marked:
            continues = not raw.startswith(_SPACE_MARKERS)
        else:
            continues = raw.startswith("##")
        if i == 0 or is_special or previous_special or not continues:
            index += 1
        words.append(index)
    return words


class GenerationView(_AttnWidget):
    """Generated tokens (rows) × context tokens (columns), one method at a time.

    Args:
        gexp: a :class:`~attnwidget.GenerationExplanation` (from
            :func:`attnwidget.explain_generation`).
        selected_method: the method shown first (default: the first one). Named
            ``method`` before (still accepted for one release, with a
            DeprecationWarning, as is the attribute ``view.method``).
        selected_step: the step selected first (-1: none).
        aggregate: ``"tokens"`` (default) or ``"words"`` (subword scores summed).
        caption: a line above the map (default: the model's kind).

    Click a generated token or a cell to select its step
    (:attr:`selected_step`); the method menu sets :attr:`selected_method`; both are
    synced, so setting them from Python redraws the page.

    Example::

        gexp = attnwidget.explain_generation(model, tokenizer, "The keys to the", max_new_tokens=5)
        view = attnwidget.GenerationView(gexp, selected_method="grad_attention")
        view.selected_step = 2
    """

    _renamed_keywords: ClassVar[dict[str, str]] = {"method": "selected_method"}

    _view = traitlets.Unicode("generation").tag(sync=True)

    columns = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    prompt_length = traitlets.Int(0, read_only=True).tag(sync=True)
    generated_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    prefix_lengths = traitlets.List(traitlets.Int(), read_only=True).tag(sync=True)
    words = traitlets.List(traitlets.Int(), read_only=True).tag(sync=True)
    word_labels = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    methods = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    signed = traitlets.List(traitlets.Bool(), read_only=True).tag(sync=True)
    scores = traitlets.Bytes(b"", read_only=True).tag(sync=True)
    shape = traitlets.List(traitlets.Int(), read_only=True).tag(sync=True)
    caption = traitlets.Unicode("").tag(sync=True)

    #: The method shown (one of :attr:`methods`).
    selected_method = traitlets.Unicode("").tag(sync=True)
    method = renamed_trait("method", "selected_method")
    #: The selected step (row), -1 for none.
    selected_step = traitlets.Int(-1).tag(sync=True)
    #: ``"tokens"`` or ``"words"``: subword columns summed to words.
    aggregate = traitlets.Unicode("tokens").tag(sync=True)

    def __init__(
        self,
        gexp: GenerationExplanation,
        *,
        selected_method: str | None = None,
        selected_step: int = -1,
        aggregate: str = "tokens",
        caption: str | None = None,
        **kwargs: Any,
    ) -> None:
        selected_method = renamed_keyword(
            kwargs, "method", "selected_method", "GenerationView", selected_method
        )
        try:
            names, tokens = list(gexp.methods), list(gexp.tokens)
            generated = list(gexp.generated_tokens)
            matrices = [np.asarray(gexp.scores[name], dtype=np.float32) for name in names]
        except AttributeError as err:
            raise InputError(
                "GenerationView needs a GenerationExplanation: pass "
                "attnwidget.explain_generation(model, tokenizer, prompt)."
            ) from err
        if not names:
            raise InputError("the generation explanation holds no method's scores.")
        for name, matrix in zip(names, matrices, strict=True):
            if matrix.shape != (len(generated), len(tokens)):
                raise InputError(
                    f"scores[{name!r}] has shape {matrix.shape}, expected (steps, columns) = "
                    f"({len(generated)}, {len(tokens)})."
                )
        self._names = names
        self._steps = len(generated)
        causal = gexp.kind != "encoder-decoder"
        raw = list(getattr(gexp, "raw_tokens", None) or tokens)
        special = getattr(gexp, "special_mask", None)
        special = [False] * len(tokens) if special is None else [bool(v) for v in special]
        if len(raw) != len(tokens) or len(special) != len(tokens):
            raise InputError(
                f"raw_tokens and special_mask must have one entry per column ({len(tokens)})."
            )
        words = word_groups(raw, special)
        labels = [""] * (max(words) + 1)
        for token, word in zip(tokens, words, strict=True):
            labels[word] += token
        lengths = gexp.prefix_lengths if causal else [len(tokens)] * len(generated)
        if caption is None:
            caption = f"{gexp.kind}: {len(generated)} generated tokens"
        super().__init__(caption=caption, **kwargs)
        self.set_trait("columns", tokens)
        self.set_trait("prompt_length", len(gexp.prompt_tokens))
        self.set_trait("generated_tokens", generated)
        self.set_trait("prefix_lengths", [int(v) for v in lengths])
        self.set_trait("words", words)
        self.set_trait("word_labels", labels)
        self.set_trait("methods", names)
        self.set_trait("signed", [get_method(name).signed for name in names])
        stacked = np.stack(matrices).astype("<f4")
        self.set_trait("scores", np.ascontiguousarray(stacked).tobytes())
        self.set_trait("shape", [len(names), len(generated), len(tokens)])
        self.selected_method = names[0] if selected_method is None else selected_method
        self.selected_step = selected_step
        self.aggregate = aggregate

    @traitlets.validate("selected_method")
    def _valid_method(self, proposal: Any) -> str:
        value = proposal["value"]
        if value not in self._names:
            raise traitlets.TraitError(
                f"selected_method={value!r} is not in this explanation; "
                f"it has: {', '.join(self._names)}."
            )
        return value

    @traitlets.validate("selected_step")
    def _valid_step(self, proposal: Any) -> int:
        value = proposal["value"]
        if not -1 <= value < self._steps:
            raise traitlets.TraitError(
                f"selected_step={value} is out of range: -1 (none) or 0..{self._steps - 1}."
            )
        return value

    @traitlets.validate("aggregate")
    def _valid_aggregate(self, proposal: Any) -> str:
        if proposal["value"] not in ("tokens", "words"):
            raise traitlets.TraitError(f"aggregate={proposal['value']!r}: use 'tokens' or 'words'.")
        return proposal["value"]
