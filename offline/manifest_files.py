"""A tenant's manifest files read without trusting them: `check-manifest` may run in a tenant's CI on files
anyone can propose, so a file either reads as YAML documents within fixed bounds or is refused with one
line (`Unreadable`), within seconds and a few megabytes whatever it holds.

- The path: a regular file (a FIFO or a device would block or never end). A symlink is followed only when
  it resolves inside the current directory (the checkout CI runs in), so a proposed symlink cannot make
  CI print parts of a file elsewhere on the runner; a path named directly is read wherever it is.
- Size: at most MAX_FILE_BYTES, the most the API server takes in one request (k8s.io/apiserver
  pkg/server/config.go NewConfig, MaxRequestBodyBytes 3 MiB), so nothing refused here could be applied.
- Text: UTF-8 (a leading byte-order mark is allowed), as YAML 1.1 and kubectl read it.
- Structure, counted from the parser's events before anything is built: nesting at most MAX_DEPTH deep,
  and at most MAX_NODES nodes per file (MAX_RUN_NODES a run) with every alias counted as the nodes it
  stands for (a "billion laughs" file is a few hundred bytes that expand to 10^9 nodes); an alias inside
  the node it names (a recursive alias) is refused, since no Kubernetes object is infinite.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from config import yaml_bounds

MAX_FILE_BYTES = 3 * 1024 * 1024
# A JobSet's container port is 12 levels deep; 100 leaves room for any CRD and stops a file built to
# exhaust the stack.
MAX_DEPTH = 100
# A Job is about 100 nodes; 20,000 is 200 of them in one file. The checks' cost grows with the nodes (a Job
# of 6,600 environment variables, 20,000 nodes, takes 2 s of CPU to judge), so the bound keeps the slowest
# file within seconds.
MAX_NODES = 20_000
# And at most five such files a run: a run's checks take about 8 ms of CPU per 100 nodes.
MAX_RUN_NODES = 100_000
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Unreadable(Exception):
    """Why a file cannot be read, in one line without the file's name."""


class Manifest(list[Any]):
    """A file's documents, and its nodes with aliases expanded (what counts against MAX_RUN_NODES)."""

    nodes: int = 0


def read_manifest(path: Path, cwd: Path | None = None, max_nodes: int = MAX_NODES) -> Manifest:
    """The YAML documents of the file at `path` (empty ones left out); Unreadable with the reason.
    `max_nodes`: what the file may hold, MAX_NODES or what is left of the run's MAX_RUN_NODES."""
    text = _text(path, Path.cwd() if cwd is None else cwd)
    try:
        nodes = _check_structure(text, max_nodes)
        manifest = Manifest(document for document in yaml.load_all(text, Loader=_Loader) if document is not None)
    except yaml.YAMLError as err:
        raise Unreadable(_yaml_reason(err)) from None
    manifest.nodes = nodes
    return manifest


def _text(path: Path, cwd: Path) -> str:
    real = Path(os.path.realpath(path))
    if real != Path(os.path.abspath(path)) and not real.is_relative_to(os.path.realpath(cwd)):
        raise Unreadable(f"a symlink to {real}, outside the current directory: name that file itself to check it")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise Unreadable(err.strerror or str(err)) from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable("not a regular file: name a YAML file")
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise Unreadable(f"larger than {MAX_FILE_BYTES // 2**20} MiB, the most the API server takes in one request: "
                         "split it into smaller files")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise Unreadable(f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}): save it as UTF-8") from None


def _check_structure(text: str, max_nodes: int) -> int:
    """Depth, expanded size and recursive aliases, from the parser's events (nothing is built)."""
    try:
        return yaml_bounds.expanded_nodes(_events(text), MAX_DEPTH, max_nodes)
    except yaml_bounds.Exceeded as refused:
        line, anchor = refused.line, refused.anchor
        if refused.kind == yaml_bounds.DEPTH:
            raise Unreadable(f"line {line}: nested more than {MAX_DEPTH} deep; no Kubernetes object is") from None
        if refused.kind == yaml_bounds.RECURSIVE:
            raise Unreadable(f"line {line}: alias *{anchor} is inside the node "
                             f"&{anchor} it names, so it never ends: write the value out") from None
        if refused.kind == yaml_bounds.UNKNOWN_ANCHOR:
            raise Unreadable(f"line {line}: alias *{anchor} names no anchor before it in its document") from None
        if max_nodes < MAX_NODES:
            raise Unreadable(f"the files before it leave {max_nodes} of the nodes one run checks, and it holds "
                             "more (aliases expanded): check it in another run") from None
        raise Unreadable(f"more than {MAX_NODES} nodes with its aliases expanded (line {line}): "
                         "a Kubernetes manifest has a few hundred; write the values out or split the file") from None


def _line(event: Any) -> int:
    return event.start_mark.line + 1 if event.start_mark is not None else 0


def _events(text: str) -> Iterator[Any]:
    return yaml.parse(text, Loader=_Loader)


def _yaml_reason(err: yaml.YAMLError) -> str:
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        context = f" {err.context}" if err.context else ""
        return f"line {err.problem_mark.line + 1}: not valid YAML: {err.problem}{context}"
    return f"not valid YAML: {str(err).splitlines()[0]}"
