"""Declared, typed options of the registered methods, and their validation.

Every registered method lists its keyword options as :class:`Option` records
(name, type, default, doc, allowed values). :func:`resolve_method_options`
checks a user's ``method_options`` against them before any model runs:
unknown method names, unknown option names, wrong types and values out of
range are refused with an :class:`~attnwidget.errors.InputError` that names
the valid choices, and the defaults are filled in, so a method always
receives its complete, checked option set and an explanation can report
exactly what was used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attnwidget.errors import InputError
from attnwidget.methods.graph import HEAD_FUSIONS

if TYPE_CHECKING:
    from attnwidget.methods.registry import MethodSpec

_NONE = type(None)


@dataclass(frozen=True)
class Option:
    """One keyword option of a registered method.

    Attributes:
        name: the keyword, as given in ``method_options={"method": {name: value}}``.
        types: accepted Python types, e.g. ``int`` or ``(int, type(None))``.
            ``int`` never accepts a bool; ``float`` also accepts an int (stored
            as float, must be finite); ``tuple`` accepts a list or tuple of
            ``items`` values (stored as a tuple); numpy scalars count as the
            matching Python type.
        default: the value used when the option is not given.
        doc: one line saying what the option does.
        choices: the only values allowed, when the option is an enumeration.
        check: further condition on the (converted) value, e.g. a range.
        requirement: how ``check`` reads in an error message ("≥ 1").
        items: element type of a ``tuple`` option.
    """

    name: str
    types: type | tuple[type, ...]
    default: Any
    doc: str
    choices: tuple[Any, ...] | None = None
    check: Callable[[Any], bool] | None = None
    requirement: str = ""
    items: type | None = None

    @property
    def type_name(self) -> str:
        """The accepted types, readable: ``int | None``, ``tuple[int, ...]``."""
        names = []
        for kind in self._types:
            if kind is _NONE:
                names.append("None")
            elif kind is tuple and self.items is not None:
                names.append(f"tuple[{self.items.__name__}, ...]")
            elif kind is np.ndarray:
                names.append("numpy array")
            else:
                names.append(kind.__name__)
        return " | ".join(names)

    @property
    def _types(self) -> tuple[type, ...]:
        return self.types if isinstance(self.types, tuple) else (self.types,)

    def validate(self, method: str, value: Any) -> Any:
        """Return ``value`` converted to the option's type, or raise InputError."""
        converted = self._convert(value)
        where = f"method_options[{method!r}][{self.name!r}]"
        if isinstance(value, (float, np.floating)) and not math.isfinite(value):
            raise InputError(f"{where}={value!r} must be a finite number ({self.doc}).")
        if converted is _INVALID:
            raise InputError(
                f"{where}={_short(value)} has type {type(value).__name__}; it must be "
                f"{self.type_name} ({self.doc})."
            )
        if self.choices is not None and converted not in self.choices:
            allowed = ", ".join(repr(c) for c in self.choices)
            raise InputError(f"{where}={converted!r} is not allowed; choose one of {allowed}.")
        if converted is not None and self.check is not None and not self.check(converted):
            raise InputError(f"{where}={_short(converted)} must be {self.requirement}.")
        return converted

    def _convert(self, value: Any) -> Any:
        types = self._types
        if value is None:
            return None if _NONE in types else _INVALID
        if isinstance(value, (bool, np.bool_)):
            return bool(value) if bool in types else _INVALID
        if isinstance(value, (int, np.integer)):
            if int in types:
                return int(value)
            return float(value) if float in types else _INVALID
        if isinstance(value, (float, np.floating)):
            return float(value) if float in types and math.isfinite(value) else _INVALID
        if isinstance(value, str):
            return value if str in types else _INVALID
        if isinstance(value, np.ndarray):
            return value if np.ndarray in types else _INVALID
        if tuple in types and isinstance(value, (list, tuple)):
            if self.items is None:  # any elements
                return tuple(value)
            items = [Option("", self.items, None, "")._convert(v) for v in value]
            return _INVALID if any(v is _INVALID for v in items) else tuple(items)
        return _INVALID


_INVALID = object()


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"<array shape {value.shape}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def resolve_options(spec: MethodSpec, given: Any) -> dict[str, Any]:
    """One method's complete options: ``given`` checked, defaults filled in."""
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise InputError(
            f"method_options[{spec.name!r}] must be a dict of option names to values, "
            f"got {type(given).__name__}."
        )
    declared = {option.name: option for option in spec.options}
    unknown = [key for key in given if key not in declared]
    if "ignore_keys" in unknown:  # one setting for every method and view, not per method
        raise InputError(
            f"method_options[{spec.name!r}]['ignore_keys']: ignore_keys is an argument of "
            "explain() (and explain_generation, the Explorer), the same for every attention "
            "method and view; pass explain(..., ignore_keys=...) instead."
        )
    if unknown:
        valid = ", ".join(declared) if declared else "none (it takes no options)"
        raise InputError(
            f"unknown option {unknown[0]!r} for method {spec.name!r}; its options are: "
            f"{valid}. See attnwidget.method_info({spec.name!r})."
        )
    return {
        name: option.validate(spec.name, given[name]) if name in given else option.default
        for name, option in declared.items()
    }


def layer_option(doc: str, default: int = -1) -> Option:
    """The ``layer`` option of the attention-graph methods (negative counts from the end)."""
    return Option("layer", int, default, doc)


def head_fusion_option() -> Option:
    """The ``head_fusion`` option: how heads are fused into one map per layer."""
    return Option("head_fusion", str, "mean", "how heads are fused", choices=HEAD_FUSIONS)


#: ``check``/``requirement`` pair for options that must be at least 1.
AT_LEAST_ONE: dict[str, Any] = {"check": lambda v: v >= 1, "requirement": "≥ 1"}
