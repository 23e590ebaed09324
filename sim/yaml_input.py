"""A workload file read without trusting it, with the line of every key.

A workload file either reads as one YAML document within fixed bounds, with a map from each key path to
its line, or is refused with one line (`Unreadable`: the line and the reason), within seconds and a few
megabytes whatever it holds:

- The path: a regular file (a FIFO or a device would block or never end), at most MAX_FILE_BYTES.
- Text: UTF-8 (a leading byte-order mark is allowed).
- Structure, counted from the parser's events before anything is built: nesting at most MAX_DEPTH deep,
  at most MAX_NODES nodes with every alias counted as the nodes it stands for (a "billion laughs" file
  is a few hundred bytes that expand to 10^9 nodes); an alias inside the node it names is refused.
- Values: a key written twice, a key that is not a string, and a number too long to read are refused
  by line; a date stays the text it was written as, so `start:` says what it expects.

Key paths are tuples as pydantic writes an error's location: `("jobs", 0, "arrivals", "perHour")`. A
key's line is the line of the key itself; a list entry's is the line of its first key or value.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from config import yaml_bounds

# A workload file is hand-written: a few hundred lines, or a long list of arrival offsets.
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 50
MAX_NODES = 200_000
_Parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KeyPath = tuple[str | int, ...]
_SEQ, _MAP = "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"


class Unreadable(Exception):
    """Why the file cannot be read: the line (0 when no line applies) and the reason in one line."""

    def __init__(self, line: int, reason: str):
        super().__init__(reason)
        self.line = line
        self.reason = reason


class _Loader(_Parser):  # type: ignore[misc, valid-type]
    """The safe loader with dates left as text."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_yaml(path: Path) -> tuple[Any, dict[KeyPath, int]]:
    """The file's one YAML document and the line (1-based) of each key path; `Unreadable` otherwise."""
    text = _text(path)
    try:
        _check_structure(text)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise Unreadable(*_yaml_reason(err)) from None
    if node is None:
        return None, {}
    lines: dict[KeyPath, int] = {(): _line(node)}
    return _build(loader, node, (), lines), lines


def _text(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise Unreadable(0, f"cannot open it: {err.strerror or err}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Unreadable(0, "not a regular file: name a YAML file")
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise Unreadable(0, f"larger than {MAX_FILE_BYTES // 2**20} MiB: a workload file is a few hundred lines; "
                            "replay long recordings as a trace (traces:)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise Unreadable(line, f"byte 0x{data[err.start]:02x} is not UTF-8: save the file as UTF-8") from None


def _check_structure(text: str) -> None:
    """Depth, expanded size and recursive aliases, from the parser's events (nothing is built)."""
    try:
        yaml_bounds.expanded_nodes(yaml.parse(text, Loader=_Parser), MAX_DEPTH, MAX_NODES)
    except yaml_bounds.Exceeded as refused:
        line, anchor = refused.line, refused.anchor
        if refused.kind == yaml_bounds.DEPTH:
            raise Unreadable(line, f"nested more than {MAX_DEPTH} deep; a workload file is a few levels deep") from None
        if refused.kind == yaml_bounds.RECURSIVE:
            raise Unreadable(line, f"alias *{anchor} is inside the node &{anchor} it names, "
                                   "so it never ends: write the value out") from None
        if refused.kind == yaml_bounds.UNKNOWN_ANCHOR:
            raise Unreadable(line, f"alias *{anchor} names no anchor before it") from None
        raise Unreadable(line, f"more than {MAX_NODES:,} values with its aliases expanded: "
                               "write the values out, or replay a recording as a trace (traces:)") from None


def _build(loader: Any, node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> Any:
    """The node as plain Python, recording each key's line under its path."""
    if not isinstance(node, yaml.ScalarNode) and node.tag not in (_SEQ, _MAP):
        raise Unreadable(_line(node), f"the tag {node.tag} has no meaning in a workload file: remove it")
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, child in enumerate(node.value):
            lines[(*path, index)] = _line(child)
            items.append(_build(loader, child, (*path, index), lines))
        return items
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # `<<: *defaults` merges, as the safe loader does
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(loader, key_node) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else "a list or mapping"
                raise Unreadable(_line(key_node), f"key {shown!r} is not a string: quote it")
            if key in mapping:
                raise Unreadable(_line(key_node), f"key {key!r} appears twice in one mapping (first on line "
                                                  f"{lines[(*path, key)]}); YAML keeps only the last: merge the two")
            lines[(*path, key)] = _line(key_node)
            mapping[key] = _build(loader, value_node, (*path, key), lines)
        return mapping
    return _scalar(loader, node)


def _scalar(loader: Any, node: yaml.Node) -> Hashable:
    try:
        return loader.construct_object(node, deep=True)
    except ValueError:  # an integer of thousands of digits: Python refuses to read it
        raise Unreadable(_line(node), f"{str(node.value)[:20]}...: a number too long to read; "
                                      "write a number of a few digits") from None
    except yaml.YAMLError as err:
        raise Unreadable(*_yaml_reason(err)) from None


def _line(item: Any) -> int:
    return item.start_mark.line + 1 if item.start_mark is not None else 0


def _yaml_reason(err: yaml.YAMLError) -> tuple[int, str]:
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        problem = f"{err.context}, {err.problem}" if err.context else str(err.problem)
        if "'\\t'" in problem or "tab character" in problem:
            problem += " (YAML indents with spaces, never tabs)"
        return err.problem_mark.line + 1, f"not valid YAML: {problem}"
    return 0, f"not valid YAML: {str(err).splitlines()[0]}"
