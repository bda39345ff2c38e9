"""Tokens as every view shows them: the readable text, the tokenizer's own on hover.

Views show a token without its tokenizer markup (``##ing`` -> ``ing``,
``Ġdog`` -> ``dog``; :func:`attnwidget.capture.tokens.readable_token`) and
send the tokenizer's strings beside them as ``raw_tokens``: the page puts
the raw form in the token's tooltip, so the marker stays one hover away.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnwidget.capture.tokens import readable_token


def raw_tokens_of(explanation: Any, n: int) -> list[str]:
    """The explanation's raw token strings, ``[]`` when it has none for its n tokens."""
    raw = getattr(explanation, "raw_tokens", None)
    return [str(t) for t in raw] if raw is not None and len(raw) == n else []


def readable_tokens(raw: Sequence[str], tokenizer: Any) -> list[str]:
    """``raw`` tokenizer strings as the views show them (special tokens kept as they are)."""
    special = set(getattr(tokenizer, "all_special_tokens", None) or [])
    return [readable_token(t, tokenizer, special=t in special) for t in raw]
