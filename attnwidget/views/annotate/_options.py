"""The Annotator's options about what the annotator sees and marks, checked at once.

``guidelines`` (markdown shown in a collapsible panel) and its version (a
short hash of the text unless ``guidelines_version`` is given, stored with
each save); ``show_label`` / ``show_prediction`` (the data's own label and
the model's predicted label are hidden unless asked for: both anchor the
annotator); ``granularity`` (what a mark covers: ``"word"``, ``"token"`` or
``"char"``); ``suggest`` / ``suggest_top`` (pre-mark a method's top tokens
as suggestions, recorded as ``suggestion_shown`` with each save);
``assigned_only`` (show only the annotator's queue of an assignment).
Every bad value is refused with an :class:`~attnwidget.errors.InputError`
naming the fix, before any item is added to the store.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from attnwidget.annotations import validate as _validate
from attnwidget.errors import InputError

#: The granularities the Annotator can mark in (the store's).
GRANULARITIES = _validate.GRANULARITIES

#: Characters of the guidelines' sha256 kept as their version.
VERSION_CHARS = 12


@dataclass(frozen=True)
class Options:
    """What the page shows and how marks are saved (see the module docs)."""

    guidelines: str = ""
    guidelines_version: str | None = None
    show_label: bool = False
    show_prediction: bool = False
    granularity: str = "word"
    suggest: str | None = None
    suggest_top: float = 0.2
    assigned_only: bool | None = None

    def as_trait(self, queue: int | None) -> dict[str, Any]:
        """The ``settings`` trait: what the page needs of these options."""
        return {
            "guidelines": self.guidelines,
            "guidelines_version": self.guidelines_version or "",
            "granularity": self.granularity,
            "suggest": self.suggest or "",
            "show_label": self.show_label,
            "show_prediction": self.show_prediction,
            "queue": queue,
        }


def guidelines_hash(text: str) -> str:
    """The default version of guidelines: the first characters of their sha256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:VERSION_CHARS]


def check_options(
    *,
    guidelines: Any = None,
    guidelines_version: Any = None,
    show_label: Any = False,
    show_prediction: Any = False,
    granularity: Any = "word",
    suggest: Any = None,
    suggest_top: Any = 0.2,
    assigned_only: Any = None,
    model: Any = None,
    tokenizer: Any = None,
) -> Options:
    """The checked :class:`Options` (refusals name the fix)."""
    where = "Annotator"
    if guidelines is not None and not isinstance(guidelines, str):
        raise InputError(
            f"guidelines= is a {type(guidelines).__name__}: pass the guidelines as a markdown "
            "string, e.g. guidelines=Path('guidelines.md').read_text()"
        )
    text = _validate.encodable(guidelines or "", "guidelines", where)
    version = _validate.optional_name(guidelines_version, "guidelines_version", where)
    if version is None and text.strip():
        version = guidelines_hash(text)
    for name, value in (("show_label", show_label), ("show_prediction", show_prediction)):
        _validate.flag(value, name)
    if assigned_only is not None:
        _validate.flag(assigned_only, "assigned_only")
    if granularity not in GRANULARITIES:
        raise InputError(
            f"granularity={granularity!r}: pass one of {list(GRANULARITIES)} (what one mark "
            "covers: whole words, the model's tokens, or characters for text without spaces)"
        )
    if granularity == "token" and tokenizer is None:
        raise InputError(
            "granularity='token' marks the model's tokens: pass tokenizer= (a fast tokenizer, "
            "e.g. AutoTokenizer.from_pretrained(name)), or use granularity='word' or 'char'"
        )
    if show_prediction and model is None:
        raise InputError("show_prediction=True shows the model's prediction: pass model= too")
    top = _suggest_top(suggest_top)
    if suggest is not None:
        if not isinstance(suggest, str) or not suggest:
            raise InputError(
                f"suggest={suggest!r}: pass a method name, e.g. suggest='rollout', or None"
            )
        if model is None or tokenizer is None:
            raise InputError(
                f"suggest={suggest!r} pre-marks the top tokens of that method: pass model= and "
                "tokenizer= (a sequence classifier and its tokenizer), or leave suggest out"
            )
        from attnwidget.methods import get_method
        from attnwidget.methods.registry import available_methods

        try:
            get_method(suggest)
        except Exception:
            raise InputError(
                f"suggest={suggest!r} is not a method; pass one of {available_methods()}"
            ) from None
    elif suggest_top != 0.2:
        raise InputError("suggest_top= is the share of suggested tokens: add suggest='rollout'")
    return Options(
        guidelines=text,
        guidelines_version=version,
        show_label=show_label,
        show_prediction=show_prediction,
        granularity=granularity,
        suggest=suggest,
        suggest_top=top,
        assigned_only=assigned_only,
    )


def _suggest_top(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(
            f"suggest_top={value!r}: pass the share of each item's tokens to suggest, "
            "a number in (0, 1], e.g. 0.2"
        )
    number = float(value)
    if not (0.0 < number <= 1.0) or math.isnan(number):
        raise InputError(
            f"suggest_top={value!r} is outside (0, 1]: pass the share of each item's tokens "
            "to suggest, e.g. 0.2 for the top fifth"
        )
    return number
