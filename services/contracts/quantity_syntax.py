"""The syntax of a Kubernetes quantity, read exactly as the API server reads it.

Layer: contracts. Pure; never does I/O.

Source: k8s.io/apimachinery v0.36.3, `pkg/api/resource`: `Quantity.UnmarshalJSON` (the text is
trimmed by `strings.TrimSpace`, then parsed), `ParseQuantity`, `parseQuantityString` and
`suffixer.interpret` (suffix.go). A quantity is an optional sign, digits with at most one `.`,
and one suffix: a binary SI suffix (`Ki` ... `Ei`), a decimal SI suffix (`n` `u` `m` `k` `M` `G`
`T` `P` `E`, or none) or a decimal exponent (`e`/`E` and a signed 64-bit integer), never two
(`1e3Ki` is refused). The number may have no digit at all: `.`, `+`, `e3`, `Ki` and `m` are
zero, as Go reads them, except where `ParseQuantity` leaves its int64 fast path for `inf.Dec`,
which needs a digit (`e-10`, `Pi`, `Ei` are refused: `ErrNumeric`).

Not mirrored, as Go has no sensible answer: where Go's int32 scale arithmetic overflows after
the exponent is wrapped (`1e-2147483648`, `1.5e-2147483647`, `1e2147483648`, which wraps to
-2147483648), `ParseQuantity` computes with numbers of billions of digits (it had not returned
after minutes); gangsched reads the number times ten to the wrapped exponent, a tiny amount
that rounds up to one unit. And `1e2147483647` overflows Go's int64 arithmetic after parsing
(`Value()` 0, `MilliValue()` 1); gangsched reads it as beyond range.
"""

from __future__ import annotations

import re
from decimal import Decimal

BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
"""A binary SI suffix → its power of two (`newSuffixer`)."""
DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12,
                    "P": 15, "E": 18}
"""A decimal SI suffix → its power of ten (`newSuffixer`)."""

FORMAT_WRONG = ("quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
"""`ErrFormatWrong`'s message."""
NUMERIC = "unable to parse numeric part of quantity"
"""`ErrNumeric`'s message."""
SUFFIX = "unable to parse quantity's suffix"
"""`ErrSuffix`'s message."""

GO_SPACE = ("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
            "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
"""What Go's `strings.TrimSpace` trims (`unicode.IsSpace`: the White_Space property), which is
not Python's `str.strip()` (that also strips U+001C to U+001F)."""

_PARTS = re.compile(r"([+-]?+)(0*+)([0-9]*+)(?:\.([0-9]*+))?+([eEinumkKMGTP]*+[-+]?+[0-9]*+)")
"""`parseQuantityString`: sign, leading zeros, the rest of the integer part, the fraction and
the suffix (its letters, then an optional sign, then digits, up to the end). Possessive, as
Go's scan never gives back what it took (and a long refused text costs linear time)."""
_INT64 = re.compile(r"([+-]?+)([0-9]++)")
_INT64_MAX = 2**63 - 1
_INT64_DIGITS = len(str(_INT64_MAX))
_INT32 = 2**32
_NANO_SCALE = -9
"""`Nano`: the smallest scale `ParseQuantity`'s int64 fast path takes."""
_INT64_PRECISION = 18
"""`maxInt64Factors`: the most decimal digits the fast path takes."""


class QuantitySyntaxError(ValueError):
    """Text `ParseQuantity` refuses; the message is its error's (`FORMAT_WRONG`, `NUMERIC`,
    `SUFFIX`)."""


def trim_space(text: str) -> str:
    """`text` as `Quantity.UnmarshalJSON` passes it to `ParseQuantity`: `strings.TrimSpace`d."""
    return text.strip(GO_SPACE)


def split(text: str) -> tuple[Decimal, int, int]:
    """Read a quantity as `ParseQuantity` does (no trimming: see `trim_space`): its number, its
    base (10 or 2) and the power of that base its suffix stands for, the value being
    `number * base ** power`. A decimal exponent is in the number (`1.5e3` → `(1.5E+3, 10, 0)`,
    its exponent wrapped to an int32 as Go's `int32(parsed)` does: `1e4294967296` is 1), as
    it is in Go's `inf.Dec`; an SI suffix is not (`2Gi` → `(2, 2, 30)`). Cost: linear in the
    text, whatever its exponent (the number is never expanded).

    Raises:
        QuantitySyntaxError: text `ParseQuantity` refuses, with its error (`ErrFormatWrong`:
            empty, or not number-then-suffix; `ErrSuffix`: an unknown suffix, or an exponent
            beyond 64 bits; `ErrNumeric`: no digit where Go needs one, module docstring).
    """
    match = _PARTS.fullmatch(text)
    if not text or match is None:
        raise QuantitySyntaxError(FORMAT_WRONG)
    sign, zeros, digits, fraction, suffix = match.groups()
    fraction = fraction or ""
    base, power, exponent = _interpret(suffix)
    has_digit = bool(zeros or digits or fraction)
    if not has_digit and _leaves_fast_path(len(digits or "0"), len(fraction), base, power,
                                           exponent):
        raise QuantitySyntaxError(NUMERIC)
    return Decimal(f"{sign}{digits or '0'}.{fraction or '0'}E{exponent}"), base, power


def _interpret(suffix: str) -> tuple[int, int, int]:
    """`suffixer.interpret`: the base, the power of it of an SI suffix, and the (int32) decimal
    exponent of an exponent suffix (one of the two powers is 0).

    Raises:
        QuantitySyntaxError: `ErrSuffix`, an unknown suffix or an exponent `strconv.ParseInt`
            refuses (not a signed integer, or beyond int64).
    """
    if suffix in DECIMAL_SUFFIXES:
        return 10, DECIMAL_SUFFIXES[suffix], 0
    if suffix in BINARY_SUFFIXES:
        return 2, BINARY_SUFFIXES[suffix], 0
    exponent = _int64(suffix[1:]) if len(suffix) > 1 and suffix[0] in "eE" else None
    if exponent is None:
        raise QuantitySyntaxError(SUFFIX)
    return 10, 0, (exponent + 2**31) % _INT32 - 2**31


def _int64(text: str) -> int | None:
    """`strconv.ParseInt(text, 10, 64)`, or None where it errs (never converting more than
    19 significant digits: Python refuses to convert a very long digit string)."""
    match = _INT64.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.group(1), match.group(2).lstrip("0") or "0"
    if len(digits) > _INT64_DIGITS:
        return None
    value = int(sign + digits)
    return value if -_INT64_MAX - 1 <= value <= _INT64_MAX else None


def _leaves_fast_path(num_digits: int, fraction_digits: int, base: int, power: int,
                      exponent: int) -> bool:
    """Whether `ParseQuantity` leaves its int64 fast path (`precision < 0`, or a scale below
    `Nano`) for `inf.Dec.SetString`, which refuses a number without a digit: the number has
    `num_digits` after its leading zeros (Go's `num`, "0" when none) and `fraction_digits`
    (`denom`), its suffix `base ** power`, or the decimal `exponent`. (A fast-path int64
    overflow of a binary suffix also leaves it, but only a non-zero number overflows.)"""
    if base == 2:
        if fraction_digits:
            return True
        precision = 15 - num_digits - power * 3 // 10 - 1
        scale = 0
    else:
        precision = _INT64_PRECISION - (num_digits + fraction_digits)
        scale = power + exponent
    return precision < 0 or scale - fraction_digits < _NANO_SCALE
