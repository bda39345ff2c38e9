"""Keyword arguments checked alike everywhere: "did you mean", and renamed keywords.

One helper for every public entry point (``explain``, ``explain_generation``,
``evaluate``, the views): a misspelt keyword raises :class:`TypeError` naming
the closest valid one (``method=`` → "did you mean 'methods'?") and listing
what the function takes; a keyword that was renamed still works for one
release, with a :class:`DeprecationWarning` naming the new one.

Only the standard library and :mod:`attnwidget.errors` below it, so any layer
may use it.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def unknown_keywords_message(
    owner: str,
    unknown: Sequence[str],
    valid: Sequence[str],
    renamed: Mapping[str, str] | None = None,
) -> str:
    """``owner() got unexpected keyword argument 'method' (did you mean 'methods'?); …``.

    ``renamed`` maps deprecated keyword names to their new ones: a typo of an old
    name (``methd`` for ``method``) is pointed to the new name.
    """
    renamed = dict(renamed or {})
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, [*valid, *renamed], n=1)
        meant = [renamed.get(close[0], close[0])] if close else []
        hints.append(f"{name!r}" + (f" (did you mean {meant[0]!r}?)" if meant else ""))
    word = "argument" if len(unknown) == 1 else "arguments"
    return (
        f"{owner}() got unexpected keyword {word} {', '.join(hints)}; it takes: {', '.join(valid)}."
    )


def warn_renamed(owner: str, old: str, new: str, *, stacklevel: int = 3) -> None:
    """The :class:`DeprecationWarning` of a renamed keyword (or value)."""
    warnings.warn(
        f"{owner}({old}) is deprecated: use {new} instead; the old name is removed in the "
        "next release.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def rename_keywords(
    owner: str, kwargs: dict[str, Any], renamed: Mapping[str, str], *, stacklevel: int = 4
) -> dict[str, Any]:
    """``kwargs`` with each old name in ``renamed`` moved to its new name, warning once each.

    Both names at once raise :class:`TypeError`.
    """
    if not renamed.keys() & kwargs.keys():
        return kwargs
    moved = dict(kwargs)
    for old, new in renamed.items():
        if old not in moved:
            continue
        if new in moved:
            raise TypeError(f"{owner}() got both {new}= and its old name {old}=; pass {new}= only.")
        warn_renamed(owner, f"{old}=", f"{new}=", stacklevel=stacklevel)
        moved[new] = moved.pop(old)
    return moved


def check_keywords(renamed: Mapping[str, str] | None = None) -> Callable[[F], F]:
    """Decorator: refuse unknown keywords with a "did you mean", accept ``renamed`` old names.

    ``renamed`` maps an old keyword to its new name (a parameter of the
    function). A function that takes ``**kwargs`` is not checked for unknown
    names (it passes them on, and the callee checks them).
    """
    old_names = dict(renamed or {})

    def decorate(function: F) -> F:
        parameters = inspect.signature(function).parameters
        valid = [name for name, p in parameters.items() if p.kind in _NAMED]
        accepted = set(valid)
        open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        missing = sorted(set(old_names.values()) - set(valid))
        if missing:
            raise ValueError(f"{function.__name__} takes no parameter {missing} to rename to.")
        owner = function.__name__

        @functools.wraps(function)
        def checked(*args: Any, **kwargs: Any) -> Any:
            if old_names:
                kwargs = rename_keywords(owner, kwargs, old_names)
            if not open_ended:
                unknown = [name for name in kwargs if name not in accepted]
                if unknown:
                    raise TypeError(unknown_keywords_message(owner, unknown, valid))
            return function(*args, **kwargs)

        return cast(F, checked)

    return decorate
