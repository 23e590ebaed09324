"""resource.Quantity as the API server reads it, exactly (a Fraction), and the forms the platform writes.

Mirrors kubernetes/apimachinery pkg/api/resource (quantity.go ParseQuantity and parseQuantityString,
suffix.go interpret) at v0.35.0, the release the cluster runs:
- a number: an optional sign, digits, an optional `.` and digits (`5.`, `.5` and `-` alone are
  accepted; `-` and `+` alone read as 0);
- then one suffix: decimal SI `n u m "" k M G T P E`, binary SI `Ki Mi Gi Ti Pi Ei`, or a decimal
  exponent `e<int>` / `E<int>` (`E` alone is exa); anything else is refused. The exponent is read as
  an int64 (`strconv.ParseInt(.., 10, 64)`: beyond it the suffix is refused) and then kept as an
  int32 (`int32(parsed)`, which wraps: `1e4294967296` is 1);
- a non-zero value is rounded away from zero to a multiple of 1n (10^-9); a binary SI value is
  capped at 2^63-1 (`8Ei` reads as 2^63-1), a decimal one is not (`99E` keeps its value).

Where upstream has no bound, the model sets one: a value of 10^MAX_DECIMAL_DIGITS base units or more
is refused (QuantityTooLarge). The API server accepts `1e999999999`, but ParseQuantity rounds it to
nano scale (gopkg.in/inf.v0 dec.go Round -> quoRem, which multiplies by exp10(shift), here 10^1000000008),
a power of ten of a billion digits: minutes and gigabytes of work, and every consumer reads quantities
as int64 (Value, MilliValue), which 10^19 already overflows. A value below 1n reads as 1n, as upstream
rounds it, without that power of ten being built. Not followed: the int32 scale arithmetic of the slow
path (`amount.Scale() + Scale(exponent).infScale()`) overflows for an exponent near -2^31 (`1e-2147483648`
reads as 10^2147483648 upstream); the model reads such a value as 1n.

`MilliValue()` and the scheduler's byte counts round up, as `cpu_millicores` and `memory_mib` do.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARACTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_NANO = Fraction(1, 10**9)
_MAX = Fraction(2**63 - 1)
MAX_DECIMAL_DIGITS = 100
MEBIBYTE = 2**20
GIBIBYTE = 2**30


def parse_quantity(value: str | int | float) -> Fraction:
    """The value of a quantity in base units (cores, bytes, devices); ValueError when the API server refuses it.

    A number is read as the JSON number kubectl sends for it (`1.5`, `1e+22`); infinity and NaN are none.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{value!r} is not a quantity (a string or a number)")
    return _parse(repr(value) if isinstance(value, float) else str(value))


class QuantityTooLarge(ValueError):
    """A quantity of 10^MAX_DECIMAL_DIGITS base units or more: beyond what any consumer reads."""


@lru_cache(maxsize=4096)
def _parse(text: str) -> Fraction:
    number, suffix = _split(text)
    binary = suffix in _BINARY_SUFFIXES
    if suffix in _DECIMAL_SUFFIXES:
        exponent = _DECIMAL_SUFFIXES[suffix]
    elif binary:
        exponent = 0
    elif len(suffix) > 1 and suffix[0] in "eE" and _is_int64(suffix[1:]):
        exponent = _int32(int(suffix[1:]))
    else:
        raise ValueError(f"{text!r} is not a quantity: unknown suffix {suffix!r}")
    integer, fraction = number.lstrip("+-").split(".")
    digits = (integer + fraction).lstrip("0")
    significant = digits.rstrip("0")
    if not significant:
        return Fraction(0)
    # The value (before a binary suffix) lies in [10^(order-1), 10^order).
    order = len(integer) - (len(integer) + len(fraction) - len(digits)) + exponent
    if binary and order - 1 >= 19:
        amount = _MAX  # at least 10^19 x 2^10, over the cap
    elif order - 1 >= MAX_DECIMAL_DIGITS:
        raise QuantityTooLarge(f"{text} is too large: 10^{MAX_DECIMAL_DIGITS} or more, beyond any resource amount")
    elif order <= -9:
        amount = _NANO  # below 1n, rounded up to it
    else:
        # Digits below the 1n place (after a binary suffix's 2^60 at most) only round up: one stands for them all.
        keep = order + 9 + (19 if binary else 0)
        if len(significant) > keep:
            significant = significant[:keep] + "1"
        amount = Fraction(int(significant)) * Fraction(10) ** (order - len(significant))
        if binary:
            amount *= 2 ** _BINARY_SUFFIXES[suffix]
        amount = math.ceil(amount / _NANO) * _NANO
        if binary:
            amount = min(amount, _MAX)
    return -amount if number.startswith("-") else amount


def _int32(value: int) -> int:
    """Go's int32(int64): the low 32 bits, signed."""
    return (value + 2**31) % 2**32 - 2**31


def _split(text: str) -> tuple[str, str]:
    """parseQuantityString: the signed number and the suffix, or ValueError."""
    if not text:
        raise ValueError("'' is not a quantity")
    end, pos = len(text), 0
    sign = ""
    if text[0] in "+-":
        sign, pos = text[0].replace("+", ""), 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    integer = text[start:pos] or "0"
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        begin = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[begin:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARACTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ValueError(f"{text!r} is not a quantity: unexpected {text[pos]!r}")
    return f"{sign}{integer}.{fraction or '0'}", text[suffix_start:]


def _is_int64(text: str) -> bool:
    """strconv.ParseInt(text, 10, 64) succeeds: a sign, decimal digits, within int64."""
    digits = text[1:] if text[:1] in "+-" else text
    return digits.isascii() and digits.isdigit() and len(digits) <= 19 and -(2**63) <= int(text) < 2**63


def is_quantity(text: str) -> bool:
    """The API server accepts `text` as a quantity."""
    try:
        _parse(text)
    except ValueError:
        return False
    return True


def _round_up(value: Fraction) -> int:
    """Away from zero, as Quantity.ScaledValue rounds."""
    return math.ceil(value) if value >= 0 else -math.ceil(-value)


def cpu_millicores(value: str | int) -> int:
    """A CPU quantity in millicores, rounded up (Quantity.MilliValue): "500m" -> 500, "1" -> 1000."""
    return _round_up(parse_quantity(value) * 1000)


def memory_mib(value: str | int) -> int:
    """A memory quantity in MiB, rounded up: "512Mi" -> 512, "100M" -> 96."""
    return _round_up(parse_quantity(value) / MEBIBYTE)


def plain_decimal(value: float | int | Fraction) -> str:
    """A decimal quantity without exponent or trailing zeros: 2.0 -> "2", 0.5 -> "0.5", 1.1 -> "1.1".

    A float is read by its shortest repr, so 1.1 stays "1.1" rather than its binary expansion.
    """
    text = format(_decimal(value).normalize(), "f")
    parse_quantity(text)  # the API server must read back what we write
    return text


def _decimal(value: float | int | Fraction) -> Decimal:
    if isinstance(value, Fraction):
        return Decimal(value.numerator) / Decimal(value.denominator)
    return Decimal(repr(value))


def gibibytes(value: int) -> str:
    """A whole number of GiB: 96 -> "96Gi"."""
    return f"{value}Gi"
