"""A DRA device selector (`exactly.selectors[].cel.expression`, a DeviceClass's `selectors`) against one
device, as the scheduler's allocator and Kueue evaluate it, with cel-python.

kubernetes/kubernetes v1.35.0 staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go
(`CompilationResult.DeviceMatches`; read at kubernetes/dynamic-resource-allocation f166b00) binds one
variable, `device`:
- `device.driver`: the ResourceSlice's driver;
- `device.attributes[<domain>][<id>]`: each attribute under its domain; a name without a domain
  (`productName`) takes the driver's (`parseQualifiedName`), so the NVIDIA driver's attributes read
  `device.attributes["gpu.nvidia.com"].productName`. Version attributes are semvers;
- `device.capacity[<domain>][<id>]`: each capacity as a resource.Quantity;
- `device.allowMultipleAllocations`: false unless the device says so.
The outer maps answer an unknown domain with an empty map (`newStringInterfaceMapWithDefault`), while an
id the device lacks is a runtime error ("no such key"), which fails the evaluation for that device.
The expression must yield a boolean.

Of the Kubernetes CEL libraries (staging/src/k8s.io/apiserver/pkg/cel/library/quantity.go and
semver.go) this module adds what selectors over GPUs call: `quantity()`, `isQuantity()`, and on a
quantity `compareTo`, `isGreaterThan`, `isLessThan`, `asInteger`, `isInteger`, `sign`; `semver()`,
`isSemver()`, and on a semver `compareTo`, `isGreaterThan`, `isLessThan`, `major`, `minor`, `patch`.
An expression that calls anything else (`cel.bind`, optional fields) is NOT_EVALUATED, never a verdict.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from .cel import Outcome, Verdict
from .quantity import parse_quantity

_MISSING = re.compile(r"no such (member|key)")
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


@dataclass(frozen=True, order=True)
class Quantity:
    """A resource.Quantity's exact value in base units (bytes for memory)."""

    value: Fraction


@dataclass(frozen=True, order=True)
class Semver:
    """A semantic version as blang/semver reads it (major.minor.patch; pre-release tags are not used here)."""

    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> Semver:
        match = _SEMVER.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not a semantic version major.minor.patch")
        return cls(*(int(part) for part in match.groups()))


@dataclass(frozen=True)
class Device:
    """One device of a ResourceSlice: its driver, attributes and capacities by (possibly unqualified) name.

    Attribute values are str, int, bool or Semver (a VersionValue); capacities are Quantity strings or bytes.
    """

    driver: str
    attributes: Mapping[str, str | int | bool | Semver]
    capacity: Mapping[str, int | str]


def qualified(name: str, driver: str) -> tuple[str, str]:
    """`productName` -> (driver, productName); `resource.kubernetes.io/pcieRoot` -> (domain, id) (parseQualifiedName)."""
    domain, _, identifier = name.rpartition("/")
    return (domain or driver, identifier)


class _DomainMap(celtypes.MapType):
    """The outer attributes/capacity map: an unknown domain reads as an empty map, as in compile.go."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType({})


def _cel_value(value: Any) -> Any:
    if isinstance(value, (Semver, Quantity)):
        return value
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    return celtypes.StringType(str(value))


def _by_domain(values: Mapping[str, Any], driver: str, convert: Any) -> _DomainMap:
    domains: dict[str, dict[Any, Any]] = {}
    for name, value in values.items():
        domain, identifier = qualified(name, driver)
        domains.setdefault(domain, {})[celtypes.StringType(identifier)] = convert(value)
    return _DomainMap({celtypes.StringType(d): celtypes.MapType(ids) for d, ids in domains.items()})


def device_variable(device: Device) -> celtypes.MapType:
    """The `device` variable DeviceMatches binds for this device."""
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(device.driver),
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(False),
            celtypes.StringType("attributes"): _by_domain(device.attributes, device.driver, _cel_value),
            celtypes.StringType("capacity"): _by_domain(
                device.capacity, device.driver, lambda value: Quantity(parse_quantity(value))
            ),
        }
    )


def _order(left: Any, right: Any) -> int:
    if type(left) is not type(right) or not isinstance(left, (Quantity, Semver)):
        raise TypeError(f"no such overload: compareTo({type(left).__name__}, {type(right).__name__})")
    return (left > right) - (left < right)


def _quantity(text: Any) -> Quantity:
    return Quantity(parse_quantity(str(text)))


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        parse_quantity(str(text))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _is_semver(text: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_SEMVER.match(str(text)) is not None)


def _as_integer(quantity: Quantity) -> celtypes.IntType:
    if quantity.value.denominator != 1:
        raise ValueError("cannot convert value to integer")
    return celtypes.IntType(int(quantity.value))


_LIBRARY: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": lambda text: Semver.parse(str(text)),
    "isSemver": _is_semver,
    "compareTo": lambda a, b: celtypes.IntType(_order(a, b)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_order(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_order(a, b) < 0),
    "asInteger": _as_integer,
    "isInteger": lambda q: celtypes.BoolType(q.value.denominator == 1),
    "sign": lambda q: celtypes.IntType((q.value > 0) - (q.value < 0)),
    "major": lambda v: celtypes.IntType(v.major),
    "minor": lambda v: celtypes.IntType(v.minor),
    "patch": lambda v: celtypes.IntType(v.patch),
}
_ENVIRONMENT = celpy.Environment()


@functools.cache
def _program(expression: str) -> Any:
    try:
        return _ENVIRONMENT.program(_ENVIRONMENT.compile(expression), functions=_LIBRARY)
    except Exception:  # a grammar cel-python lacks (optional fields): not evaluated
        return None


def device_matches(expression: str, device: Device) -> Outcome:
    """PASSED or FAILED as DeviceMatches answers; ERRORED where it returns an error (the device lacks an id
    the expression reads, a type mismatch); NOT_EVALUATED where cel-python cannot run the expression."""
    program = _program(expression)
    if program is None:
        return Outcome(Verdict.NOT_EVALUATED, "cel-python cannot compile it")
    try:
        value = program.evaluate({"device": device_variable(device)})
    except Exception as err:  # cel-python raises evaluation errors as often as it returns them
        value = err
    if isinstance(value, celtypes.BoolType):
        return Outcome(Verdict.PASSED if int(value) else Verdict.FAILED)
    if isinstance(value, (CELEvalError, Exception)):
        detail = str(value.args[0] if value.args else value).split(" (in activation")[0]
        if _MISSING.search(detail) or "no such overload" in detail or "cannot convert" in detail:
            return Outcome(Verdict.ERRORED, detail)
        return Outcome(Verdict.NOT_EVALUATED, detail)
    return Outcome(Verdict.ERRORED, f"evaluates to {type(value).__name__}, not a boolean")
