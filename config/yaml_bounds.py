"""How large a YAML text is once its aliases are expanded, read from the parser's events before anything is built.

A YAML alias stands for the whole node its anchor names, so a few lines of aliases of aliases expand to
billions of nodes ("billion laughs") and an alias inside the node it names never ends. PyYAML builds that
expansion in memory; walking the parser's events counts it instead, holding only the anchors' sizes. The
stack's readers of untrusted YAML (a tenant's manifests in offline/manifest_files.py, a workload file in
sim/yaml_input.py) walk their texts here, each with its own bounds and its own words for the reader.
Anchors belong to their document, as PyYAML's composer keeps them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

DEPTH, RECURSIVE, UNKNOWN_ANCHOR, NODES = "depth", "recursive", "unknown-anchor", "nodes"


@dataclass
class Exceeded(Exception):
    """Why a text is refused: `kind` one of DEPTH, RECURSIVE, UNKNOWN_ANCHOR, NODES, at `line` (1-based, 0 unknown)."""

    kind: str
    line: int
    anchor: str | None = None


def expanded_nodes(events: Iterable[Any], max_depth: int, max_nodes: int) -> int:
    """The nodes (collections and scalars) the events stand for with every alias expanded; raises Exceeded past
    `max_depth` nested collections or `max_nodes` nodes, or at an alias that names no earlier anchor of its
    document or the collection it is inside."""
    nodes = 0
    anchors: dict[str, int] = {}  # anchor -> the nodes it stands for, in the current document
    open_collections: list[tuple[str | None, int]] = []  # (anchor, nodes counted before it began)
    for event in events:
        if isinstance(event, yaml.DocumentStartEvent):
            anchors = {}
            continue
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            open_collections.append((event.anchor, nodes))
            nodes += 1
            if len(open_collections) > max_depth:
                raise Exceeded(DEPTH, line_of(event))
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, before = open_collections.pop()
            if anchor is not None:
                anchors[anchor] = nodes - before
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor is not None:
                anchors[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in open_collections):
                raise Exceeded(RECURSIVE, line_of(event), event.anchor)
            if event.anchor not in anchors:
                raise Exceeded(UNKNOWN_ANCHOR, line_of(event), event.anchor)
            nodes += anchors[event.anchor]
        if nodes > max_nodes:
            raise Exceeded(NODES, line_of(event))
    return nodes


def line_of(mark_holder: Any) -> int:
    """The 1-based line an event or node starts on; 0 when the parser gave none."""
    return mark_holder.start_mark.line + 1 if mark_holder.start_mark is not None else 0
