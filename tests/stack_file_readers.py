"""Which tests read the `Pulumi.<stack>.yaml` files at the project root, found by reading the source.

The root stack files are the operators' to edit. A test that reads one must pass whatever an operator
adds to it, so such tests carry the `stack_files` marker and the README walk-through
(tests/test_readme_steps.py) runs exactly them, in a copy of the project where the README's steps have
onboarded a tenant and added a stack. Running only the marked tests there, not the whole suite again,
keeps the walk-through's cost to the few tests that can notice the edit; this module keeps the marker
honest: `reading_tests()` finds every test that reads a root stack file, and a test compares it with
`marked_tests()`.

What counts as reading a root stack file, in any module of the project (tests and the code they call):

- a call of `offline.stack.load_stack` or `stack_names` that names no project directory of its own
  (`load_stack(stack, tmp_path)` and `stack_names(copy)` read somewhere else);
- a path `Pulumi.<x>.yaml` (a literal, an f-string or a glob) joined to `PROJECT_DIR` or `project_path(...)`,
  or opened as it is (`open("Pulumi.dev.yaml")`, `Path(...)`: relative to the root, where tests run);
- in a test, a command line with `--stack` (the CLI reads the stack file by that name; the CLI's own
  `main` counts only so, since most of its commands read no stack);
- a reference to a function, fixture or module-level name that does any of these, followed through
  imports across the project (`check_manifest.main`, `warnings` in `offline/diff.py`).

A function that passes `project_dir=` anything but the project itself (a stand-in project under
`tmp_path`, usually through `monkeypatch` and `functools.partial(load_stack, project_dir=...)`), or
takes a fixture that does, reads that stand-in, not the root files. A test reads what its decorators (`parametrize` over
`stack_names()`), its fixtures (by parameter name, in its module or tests/conftest.py) and the names it
calls read.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from offline.project import PROJECT_DIR

MARKER = "stack_files"
PACKAGES = ("config", "components", "models", "offline", "sim", "tests")
# The primitives: they read the root stack files only when called without a directory of their own.
PRIMITIVES = {"offline.stack.load_stack": 1, "offline.stack.stack_names": 0}  # positional index of the directory
PROJECT_ROOT_NAMES = {"PROJECT_DIR", "project_path"}
_STACK_FILE = re.compile(r"^Pulumi\.[^/]*\.yaml$")
# This module's own walk-through reads a copy of the project, never the root files.
NOT_SCANNED = {"tests.test_readme_steps", "tests.stack_file_readers", "offline.stack"}
# The command line: it reads a stack file only for `--stack`, which the rule for command lines catches.
COMMAND_LINE = "offline.__main__.main"


@dataclass
class Definition:
    """A top-level function, method or module-level name, and what its code reads and refers to."""

    module: str
    qualname: str
    node: ast.AST
    reads: bool = False
    refers_to: set[str] = field(default_factory=set)
    stand_in: bool = False

    @property
    def words(self) -> tuple[str, str]:
        """What another module's text holds when it refers to this: the module's last part and the name."""
        return self.module.rsplit(".", 1)[-1], self.qualname[len(self.module) + 1 :].split(".")[0]


def _names_defined(statement: ast.stmt) -> list[str]:
    """The module-level names a statement binds: a function's or class's, or an assignment's targets."""
    if isinstance(statement, ast.FunctionDef | ast.ClassDef):
        return [statement.name]
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)]
    if isinstance(statement, ast.AnnAssign | ast.AugAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    return []


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PROJECT_DIR).with_suffix("").parts).removesuffix(".__init__")


def _sources() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((PROJECT_DIR / package).rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield _module_name(path), path


def _imports(module: str, tree: ast.Module, is_package: bool) -> dict[str, str]:
    """Local name -> the qualified name it stands for."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
    return names


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "x" for v in node.values)
    return None


def _mentions_project_root(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id in PROJECT_ROOT_NAMES for n in ast.walk(node))


class _Scanner:
    def __init__(self) -> None:
        self.definitions: dict[str, Definition] = {}
        self.fixtures: dict[str, dict[str, str]] = {}  # module -> fixture name -> qualname
        self.trees: dict[str, ast.Module] = {}
        # Parsing every module costs seconds; a module can matter only if its text names a primitive, a
        # stack file, the marker or something already found to read, so those are parsed, until no more do.
        sources = {module: (path, path.read_text()) for module, path in _sources() if module not in NOT_SCANNED}
        # A reader elsewhere is named with its module's (`check_manifest.main`, `from .diff import warnings`).
        words: set[tuple[str, ...]] = {(w,) for w in ("load_stack", "stack_names", "Pulumi.", "--stack", MARKER)}
        while True:
            wanted = [
                m for m, (_, text) in sources.items() if m not in self.trees and any(all(w in text for w in ws) for ws in words)
            ]
            if not wanted:
                break
            for module in wanted:
                path, text = sources[module]
                self.trees[module] = ast.parse(text, str(path))
                self._scan_module(module, self.trees[module], path.name == "__init__.py")
            self.__dict__.pop("readers", None)
            words |= {self.definitions[q].words for q in self.readers if q != COMMAND_LINE}

    def _scan_module(self, module: str, tree: ast.Module, is_package: bool) -> None:
        imports = _imports(module, tree, is_package)
        local = {name for statement in tree.body for name in _names_defined(statement)}

        def resolve(parts: list[str]) -> str | None:
            head, *rest = parts
            if head in local:
                return ".".join([module, head, *rest[:1]]) if rest else f"{module}.{head}"
            if head in imports:
                return ".".join([imports[head], *rest[:1]])
            return None

        fixtures: dict[str, str] = {}
        for statement in tree.body:
            if isinstance(statement, ast.FunctionDef):
                self._define(module, f"{module}.{statement.name}", statement, resolve)
                if any("fixture" in ast.unparse(d) for d in statement.decorator_list):
                    fixtures[statement.name] = f"{module}.{statement.name}"
            elif isinstance(statement, ast.ClassDef):
                for item in statement.body:
                    if isinstance(item, ast.FunctionDef):
                        self._define(module, f"{module}.{statement.name}.{item.name}", item, resolve)
                self._define(module, f"{module}.{statement.name}", statement, resolve)
            else:
                for name in _names_defined(statement):
                    self._define(module, f"{module}.{name}", statement, resolve, merge=True)
        self.fixtures[module] = fixtures

    def _define(self, module: str, qualname: str, node: ast.AST, resolve, merge: bool = False) -> None:
        definition = self.definitions.get(qualname) if merge else None
        if definition is None:
            definition = self.definitions[qualname] = Definition(module, qualname, node)
        for sub in ast.walk(node):
            if isinstance(sub, ast.keyword) and sub.arg == "project_dir" and not _mentions_project_root(sub.value):
                definition.stand_in = True
            if isinstance(sub, ast.Call):
                parts = _dotted(sub.func)
                target = resolve(parts) if parts else None
                if target in PRIMITIVES:
                    own_dir = len(sub.args) > PRIMITIVES[target] or any(k.arg == "project_dir" for k in sub.keywords)
                    definition.reads |= not own_dir
                if parts and parts[-1] in ("project_path", "glob") and _stack_path_among(sub.args):
                    definition.reads |= _mentions_project_root(sub)
                if parts and parts[-1] in ("open", "Path") and _stack_path_among(sub.args[:1]):
                    definition.reads = True  # relative to the working directory, which tests run in: the root
            elif isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Div):
                if _stack_path_among([sub.right]) and _mentions_project_root(sub.left):
                    definition.reads = True
            elif isinstance(sub, ast.List | ast.Tuple) and qualname.startswith("tests."):
                if any(_literal_text(e) == "--stack" for e in sub.elts):
                    definition.reads = True
            elif isinstance(sub, ast.Name | ast.Attribute):
                parts = _dotted(sub)
                target = resolve(parts) if parts else None
                if target and target not in PRIMITIVES and target not in (qualname, COMMAND_LINE):
                    definition.refers_to.add(target)
        if isinstance(node, ast.FunctionDef):
            definition.refers_to |= {f"fixture:{module}:{a.arg}" for a in node.args.args}

    @functools.cached_property
    def readers(self) -> set[str]:
        """Every definition that reads a root stack file itself or through what it refers to."""
        def targets(definition: Definition) -> set[str]:
            found = set()
            for ref in definition.refers_to:
                if ref.startswith("fixture:"):
                    _, module, name = ref.split(":")
                    fixture = self.fixtures.get(module, {}).get(name) or self.fixtures.get("tests.conftest", {}).get(name)
                    if fixture:
                        found.add(fixture)
                else:
                    found.add(ref)
            return found

        edges = {q: targets(d) for q, d in self.definitions.items()}
        fixtures = {f for module in self.fixtures.values() for f in module.values()}
        stand_ins = _closure({q for q, d in self.definitions.items() if d.stand_in}, {q: e & fixtures for q, e in edges.items()})
        readers = {q for q, d in self.definitions.items() if d.reads}
        return _closure(readers - stand_ins, {q: e for q, e in edges.items() if q not in stand_ins})


def _closure(seeds: set[str], edges: dict[str, set[str]]) -> set[str]:
    """`seeds` and everything whose edges lead to one of them."""
    found = set(seeds)
    grown = True
    while grown:
        added = {q for q, refs in edges.items() if q not in found and refs & found}
        grown = bool(added)
        found |= added
    return found


def _stack_path_among(nodes: list[ast.expr]) -> bool:
    return any((text := _literal_text(n)) is not None and _STACK_FILE.match(text) for n in nodes)


@functools.cache
def _scanner() -> _Scanner:
    return _Scanner()


def _tests(module: str, tree: ast.Module) -> Iterator[tuple[str, str, list[ast.expr]]]:
    """(test id, qualified name, the decorators of the test, its class and its module's pytestmark)."""
    path = module.replace(".", "/") + ".py"
    module_marks = [
        s.value for s in tree.body
        if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)
    ]
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef) and statement.name.startswith("test"):
            yield f"{path}::{statement.name}", f"{module}.{statement.name}", [*module_marks, *statement.decorator_list]
        elif isinstance(statement, ast.ClassDef) and statement.name.startswith("Test"):
            for item in statement.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                    yield (
                        f"{path}::{statement.name}::{item.name}",
                        f"{module}.{statement.name}.{item.name}",
                        [*module_marks, *statement.decorator_list, *item.decorator_list],
                    )


def _test_modules() -> Iterator[tuple[str, ast.Module]]:
    for module, tree in _scanner().trees.items():
        if module.startswith("tests.test_") and module not in NOT_SCANNED:
            yield module, tree


def reading_tests() -> set[str]:
    """Test ids (`tests/test_x.py::test_y`) of every test that reads a root stack file."""
    readers = _scanner().readers
    return {test for module, tree in _test_modules() for test, qualname, _ in _tests(module, tree) if qualname in readers}


def marked_tests() -> set[str]:
    """Test ids of every test carrying the `stack_files` marker (on itself, its class or its module)."""
    return {
        test
        for module, tree in _test_modules()
        for test, _, marks in _tests(module, tree)
        if any(MARKER in ast.unparse(mark).split(".") or f"mark.{MARKER}" in ast.unparse(mark) for mark in marks)
    }
