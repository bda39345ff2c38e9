"""Numbers as a person reads them in the views: ``0.419``, not ``0.41894618``.

The same rules as the front end's ``js/src/core/format.ts`` (the golden fixture
``js/test/fixtures/format.json``, written by tests/test_fixtures_js.py, holds
both to the same text); full precision stays in the Python values.

- ``digits`` significant digits (default 3), trailing zeros trimmed.
- Numbers that round to ``10**digits`` or more keep every integer digit.
- Thousands separators (",") from 1,000 up.
- Scientific notation only for |x| < 1e-3 or |x| >= 1e6 after rounding:
  ``1.89e-9``, ``2.5e6``.
- 0 (and -0) is ``0``; negative numbers start with U+2212 (``−0.5``), the
  exponent keeps ASCII ``-``.
- NaN is ``NaN``, ±inf ``∞`` / ``−∞``.

Rounding is half away from zero on the exact binary value, as JavaScript's
``toPrecision``/``toFixed`` do (Python's ``format`` rounds half to even, so
``Decimal`` does the rounding here).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

#: U+2212 MINUS SIGN.
MINUS = "\u2212"


def format_number(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, as the views show it."""
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 15:
        raise ValueError(f"format_number: digits must be an int 1..15, got {digits!r}.")
    x = float(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞" if x > 0 else f"{MINUS}∞"
    if x == 0:
        return "0"
    sign = MINUS if x < 0 else ""
    exact = Decimal(abs(x))  # the exact binary value
    exponent = exact.adjusted()
    rounded = exact.quantize(Decimal(1).scaleb(exponent - digits + 1), rounding=ROUND_HALF_UP)
    exponent = rounded.adjusted()  # 9.996 -> 10.0: one more integer digit
    if exponent < -3 or exponent >= 6:
        mantissa = rounded.scaleb(-exponent).quantize(
            Decimal(1).scaleb(-(digits - 1)), rounding=ROUND_HALF_UP
        )
        return f"{sign}{_trim(format(mantissa, 'f'))}e{exponent}"
    decimals = max(0, digits - 1 - exponent)
    fixed = exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    text = _trim(format(fixed, "f"))
    whole, dot, rest = text.partition(".")
    return f"{sign}{int(whole):,}{dot}{rest}"


def format_range(lo: float, hi: float, *, middle: float | None = None, digits: int = 3) -> str:
    """A legend's range: ``0 … 0.419`` or, with a middle value, ``−0.3 … 0 … 0.3``."""
    parts = [lo, hi] if middle is None else [lo, middle, hi]
    return " … ".join(format_number(x, digits) for x in parts)


def format_percent(share: float, digits: int = 3) -> str:
    """A share in [0, 1] as a percentage: 0.1234 -> ``12.3%``."""
    return f"{format_number(float(share) * 100, digits)}%"


def _trim(text: str) -> str:
    """``2.500`` -> ``2.5``, ``3.000`` -> ``3`` (integers untouched)."""
    return text.rstrip("0").rstrip(".") if "." in text else text
