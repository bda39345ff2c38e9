"""AlignmentView: the alignment matrix of one translation by an RNN encoder–decoder.

The heat maps of Bahdanau et al. (2015) and Luong et al. (2015): row t is the
attention of output step t over the input tokens. It takes the
:class:`~attnwidget.demo.seq2seq.Translation` of
:func:`attnwidget.demo.seq2seq.translate` (or any object with
``input_tokens``, ``output_tokens`` and an ``alignment`` matrix of shape
(len(output_tokens), len(input_tokens))). Hover a cell or a token to
highlight its row and column (both ways: an output token lights its row, an
input token its column); click one to select it.

Message schema (traits synced with ``js/src/annotate/alignment_types.ts``
``AlignmentTraits``). m output steps, n input tokens:

===================  ===========  ============================================
trait                type         meaning
===================  ===========  ============================================
``_view``            str          ``"alignment"``: the JS view that renders it
``input_tokens``     list[str]    n input tokens (text, never HTML)
``output_tokens``    list[str]    m output tokens (text, never HTML)
``caption``          str          one line above the matrix (text)
``shape``            list[int]    ``[m, n]``
``alignment``        bytes        (m, n) float32 little-endian, C order
``selected_output``  int          the selected output step, -1 for none
                                  (synced; click a row token or a cell)
``selected_input``   int          the selected input token, -1 for none
                                  (synced; click a column token or a cell)
===================  ===========  ============================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import traitlets

from attnwidget.errors import InputError
from attnwidget.views.core.base import _AttnWidget


class AlignmentResult(Protocol):
    """What AlignmentView reads (e.g. :class:`attnwidget.demo.seq2seq.Translation`)."""

    @property
    def input_tokens(self) -> Sequence[str]: ...
    @property
    def output_tokens(self) -> Sequence[str]: ...
    @property
    def alignment(self) -> np.ndarray: ...  # (outputs, inputs)


def _tokens(value: Any, what: str) -> list[str]:
    if isinstance(value, str) or not all(isinstance(t, str) for t in value):
        raise InputError(f"{what} must be a list of strings.")
    return list(value)


class AlignmentView(_AttnWidget):
    """The alignment matrix of a translation: output tokens (rows) × input tokens (columns).

    Args:
        result: a :class:`~attnwidget.demo.seq2seq.Translation` (from
            :func:`attnwidget.demo.seq2seq.translate`).
        selected_output, selected_input: the cell selected first (-1: none).
        caption: a line shown above the matrix (default: the model's kind).

    Click a cell to select its output step and input token
    (:attr:`selected_output`, :attr:`selected_input`), an output token to
    select its row only, an input token its column only; setting them from
    Python redraws the highlight.

    Example::

        model, vocab = attnwidget.demo.load("seq2seq-additive")
        view = attnwidget.AlignmentView(translate(model, vocab, "abcdef"))
        view.selected_output = 2
    """

    _view = traitlets.Unicode("alignment").tag(sync=True)

    input_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    output_tokens = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    caption = traitlets.Unicode("").tag(sync=True)
    shape = traitlets.List(traitlets.Int(), read_only=True).tag(sync=True)
    alignment = traitlets.Bytes(b"", read_only=True).tag(sync=True)

    #: The selected output step (row), -1 for none.
    selected_output = traitlets.Int(-1).tag(sync=True)
    #: The selected input token (column), -1 for none.
    selected_input = traitlets.Int(-1).tag(sync=True)

    def __init__(
        self,
        result: AlignmentResult,
        *,
        selected_output: int = -1,
        selected_input: int = -1,
        caption: str | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            inputs = _tokens(result.input_tokens, "input_tokens")
            outputs = _tokens(result.output_tokens, "output_tokens")
            matrix = np.asarray(result.alignment, dtype=np.float32)
        except AttributeError as err:
            raise InputError(
                "AlignmentView needs a translation with input_tokens, output_tokens and "
                "alignment: pass attnwidget.demo.seq2seq.translate(model, vocab, text)."
            ) from err
        if matrix.shape != (len(outputs), len(inputs)):
            raise InputError(
                f"alignment has shape {matrix.shape}, expected (output steps, input tokens) = "
                f"({len(outputs)}, {len(inputs)})."
            )
        if not np.isfinite(matrix).all():
            raise InputError("alignment holds NaN or infinite values.")
        self._matrix = matrix
        if caption is None:
            kind = getattr(result, "kind", None)
            caption = f"{kind} attention" if kind else ""
        super().__init__(caption=caption, **kwargs)
        self.set_trait("input_tokens", inputs)
        self.set_trait("output_tokens", outputs)
        self.set_trait("shape", [len(outputs), len(inputs)])
        self.set_trait("alignment", np.ascontiguousarray(matrix, dtype="<f4").tobytes())
        self.selected_output = selected_output
        self.selected_input = selected_input

    @property
    def matrix(self) -> np.ndarray:
        """The alignment as float32 (output steps, input tokens)."""
        return self._matrix.copy()

    def _check(self, proposal: Any, size: int, what: str) -> int:
        value = proposal["value"]
        if not -1 <= value < size:
            raise traitlets.TraitError(
                f"{what}={value} is out of range: -1 (none) or 0..{size - 1}."
            )
        return value

    @traitlets.validate("selected_output")
    def _valid_output(self, proposal: Any) -> int:
        return self._check(proposal, self._matrix.shape[0], "selected_output")

    @traitlets.validate("selected_input")
    def _valid_input(self, proposal: Any) -> int:
        return self._check(proposal, self._matrix.shape[1], "selected_input")
