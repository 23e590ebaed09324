"""resource.Quantity as the API server parses it (kubernetes/apimachinery pkg/api/resource/quantity.go)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from models.kubernetes.quantity import (
    QuantityTooLarge,
    cpu_millicores,
    is_quantity,
    memory_mib,
    parse_quantity,
    plain_decimal,
)
from models.kueue.resources import resource_value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", Fraction(1)),
        ("500m", Fraction(1, 2)),
        ("2.5", Fraction(5, 2)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("3T", Fraction(3 * 10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),  # `E` alone is exa, not an exponent
        ("1Ki", Fraction(1024)),
        ("1.5Mi", Fraction(1572864)),
        ("2Ti", Fraction(2 * 2**40)),
        ("1Ei", Fraction(2**60)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("2e-3", Fraction(2, 1000)),
        ("12n", Fraction(12, 10**9)),
        ("5n", Fraction(5, 10**9)),
        ("1.5n", Fraction(2, 10**9)),  # rounded up to a whole 1n
        ("9.99e99", Fraction(999 * 10**97)),  # just below the 10^100 the model refuses
        ("3u", Fraction(3, 10**6)),
        ("-1.5m", Fraction(-3, 2000)),
        ("+7", Fraction(7)),
        ("0.0000000001", Fraction(1, 10**9)),  # rounded up to 1n, never to zero
        ("1.0000000001", Fraction(1000000001, 10**9)),
        (4, Fraction(4)),
        ("99E", Fraction(99 * 10**18)),  # a decimal value is not capped
        ("8Ei", Fraction(2**63 - 1)),  # a binary one is, at int64's max
        ("9223372036854775807000Ki", Fraction(2**63 - 1)),
        ("1e-999999999", Fraction(1, 10**9)),  # far below 1n: rounded up to it, in no time
        ("-3e-20", Fraction(-1, 10**9)),
        ("0.00000000000000000000000000000000000000000000000000000000001e50", Fraction(1, 10**9)),
        ("1e4294967296", Fraction(1)),  # the exponent kept as an int32 wraps to 0
        ("2e4294967299", Fraction(2000)),
        ("1e99", Fraction(10**99)),
        ("0.00012e3", Fraction(12, 100)),
    ],
)
def test_quantities_read_as_the_api_server_reads_them(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1.2.3", "1e", "1x", "1K", "1ki", "1e3.5", " 1", "1 ", "1i", "--1", "1e+", "1Mi2"])
def test_what_the_api_server_refuses_is_refused(text):
    assert not is_quantity(text)
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["1e100", "1e999999999", "9" * 101, "0.1e101", "1e2147483647"])
def test_a_value_of_ten_to_the_hundred_or_more_is_refused_at_once(text):
    with pytest.raises(QuantityTooLarge, match="too large"):
        parse_quantity(text)
    assert not is_quantity(text)


def test_an_exponent_beyond_int64_is_a_suffix_the_api_server_refuses():
    with pytest.raises(ValueError, match="unknown suffix"):
        parse_quantity("1e9223372036854775808")
    assert parse_quantity("1e-9223372036854775808") == 1  # int64 min: its low 32 bits are 0


@pytest.mark.parametrize(
    "quantity, millicores", [("500m", 500), ("1", 1000), (2, 2000), ("0.5", 500), ("100m", 100), ("0.1m", 1), ("1k", 10**6)]
)
def test_cpu_quantities_read_as_millicores_rounded_up(quantity, millicores):
    assert cpu_millicores(quantity) == millicores


@pytest.mark.parametrize(
    "quantity, mib", [("512Mi", 512), ("1Gi", 1024), ("100M", 96), ("1000Ki", 1), ("104857600", 100), ("1.5Gi", 1536)]
)
def test_memory_quantities_read_as_mebibytes_rounded_up(quantity, mib):
    assert memory_mib(quantity) == mib


@pytest.mark.parametrize(
    ("resource", "quantity", "value"),
    [("cpu", "1500m", 1500), ("cpu", "2", 2000), ("memory", "1Ki", 1024), ("memory", "0.5", 1), ("nvidia.com/gpu", "8", 8)],
)
def test_kueue_counts_cpu_in_millicores_and_everything_else_in_whole_units(resource, quantity, value):
    assert resource_value(resource, quantity) == value


@pytest.mark.parametrize(
    ("value", "text"), [(2.0, "2"), (0.5, "0.5"), (1.1, "1.1"), (100.0, "100"), (3, "3"), (Fraction(3, 4), "0.75")]
)
def test_plain_decimals_have_no_exponent_and_no_trailing_zeros(value, text):
    assert plain_decimal(value) == text
