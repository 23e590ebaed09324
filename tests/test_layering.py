"""The layers, read from the imports of every module (ast, nothing is imported):

    models/  <-  config/  <-  components/  <-  offline/ (and the program, __main__.py)
       ^            ^
       +---- sim/ --+

- `models/` imports nothing of ours; `config/` only `models/` and `config/`; neither, nor `sim/`, loads Pulumi.
- A component (`components/<name>.py` or `components/<name>/`) imports `config/`, `models/`,
  `components/lib/` and itself, never another component; `components/platform.py` wires them all.
- `sim/` imports only `models/` and `config/` (and itself); `offline/` and tests may import anything.
- A helper module of `tests/` (not a `test_*.py`) holds no behaviour of a controller: it defines no
  function or class named like one of the models' (a top-level name of `models/`, or one of
  BEHAVIOURS), unless the function only hands its arguments to `models/`
  (its body, docstring aside, is one `return` of a call to something imported from `models/`).

Each rule is checked on the project, and on a small tree built to break it, so it is known to fail.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import project_path

OURS = ("models", "config", "components", "offline", "sim", "tests")
# Third-party packages the lower layers must not load: the Pulumi SDK and its providers.
PULUMI = ("pulumi", "pulumi_aws", "pulumi_kubernetes")
# What the controllers do, by the names tests once gave it. A test helper with one of these names is
# a second copy of a model (or a delegate to models/, which is allowed).
BEHAVIOURS = frozenset({"admit", "quantity", "pod_sets", "pod_requests", "rbac_allows", "trust_allows", "fits"})


@dataclass(frozen=True)
class Module:
    name: str  # dotted: components.queueing, components.autoscaling (its __init__.py)
    path: Path
    tree: ast.Module

    @property
    def package(self) -> str:
        return self.name if self.path.name == "__init__.py" else self.name.rpartition(".")[0]


@functools.cache
def modules(root: Path) -> dict[str, Module]:
    """Every module of our packages under `root`, and the program (`__main__.py`) as `__main__`."""
    found = {}
    paths = [path for top in OURS for path in sorted((root / top).rglob("*.py"))]
    for path in [*paths, root / "__main__.py"]:
        if not path.is_file():
            continue
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = Module(name, path, ast.parse(path.read_text(), str(path)))
    return found


def imports(module: Module, known: frozenset[str]) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of everything `module` imports, relative imports resolved; `from a import b`
    is `a.b` when that is one of ours (`known`), else `a`."""
    for node in _statements(module.tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.package.split(".")
                anchor = ".".join(package[: len(package) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield node.lineno, candidate if _is_ours_module(candidate, known) else base


def _statements(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every statement in `body` and the blocks nested in it; an import is a statement, so expressions are skipped."""
    for node in body:
        yield node
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, block, None)
            if isinstance(inner, list):
                for child in inner:
                    # an except clause or a match case is no statement, but holds a block of them
                    yield from _statements([child]) if isinstance(child, ast.stmt) else _statements(child.body)


def _is_ours_module(name: str, known: frozenset[str]) -> bool:
    return name in known or name in _packages(frozenset(known))


@functools.cache
def _packages(known: frozenset[str]) -> frozenset[str]:
    """Every dotted prefix of a known module's name: the packages above it."""
    return frozenset(".".join(parts[:i]) for parts in (name.split(".") for name in known) for i in range(1, len(parts)))


def layer(name: str) -> str:
    """models, config, components.lib, components.platform, component:<name>, offline, sim, tests, program."""
    parts = name.split(".")
    if parts[0] == "components":
        if len(parts) == 1:
            return "components"
        if parts[1] in ("lib", "platform"):
            return f"components.{parts[1]}"
        return f"component:{parts[1]}"
    return "program" if name == "__main__" else parts[0]


def allowed(importer: str, imported: str) -> bool:
    """Whether a module of layer `importer` may import a module of layer `imported` (both ours)."""
    if importer in ("offline", "tests", "program", "components.platform"):
        return True
    if importer == "models":
        return imported == "models"
    if importer == "config":
        return imported in ("models", "config")
    if importer == "sim":
        return imported in ("models", "config", "sim")
    if importer == "components.lib":
        return imported in ("models", "config", "components.lib")
    if importer.startswith("component:"):
        return imported in ("models", "config", "components.lib", importer)
    return False


def layering_violations(root: Path) -> list[str]:
    found = modules(root)
    known = frozenset(found)
    violations = []
    for module in found.values():
        importer = layer(module.name)
        for line, name in imports(module, known):
            top = name.split(".")[0]
            where = f"{module.path.relative_to(root)}:{line}"
            if top in OURS and not allowed(importer, layer(name)):
                violations.append(f"{where}: {importer} imports {name}")
            if top in PULUMI and importer in ("models", "config", "sim"):
                violations.append(f"{where}: {importer} imports {name}")
    return sorted(violations)


def behaviour_names(root: Path) -> set[str]:
    """BEHAVIOURS, and every public top-level function and class of `models/`."""
    names = set(BEHAVIOURS)
    for module in modules(root).values():
        if layer(module.name) == "models":
            names |= {
                node.name for node in module.tree.body
                if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_")
            }
    return names


def helper_violations(root: Path) -> list[str]:
    """Behaviour defined in a helper module of tests/ (its function or class named like a model's)."""
    if not (root / "models").is_dir():
        return []  # without models/ there is no model to name behaviour after, nor to delegate to
    names = behaviour_names(root)
    found = modules(root)
    known = frozenset(found)
    violations = []
    for module in found.values():
        if layer(module.name) != "tests" or module.path.name.startswith("test_"):
            continue
        from_models = _names_imported_from_models(module, known)
        defined = [node for node in module.tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)]
        for node in defined:
            if node.name in names and not (isinstance(node, ast.FunctionDef) and _delegates(node, from_models)):
                violations.append(f"{module.path.relative_to(root)}:{node.lineno}: {node.name} is a model's behaviour")
    return sorted(violations)


def shared_helper_copies(root: Path) -> list[str]:
    """Functions and classes a test module defines that a shared helper module of tests/ defines already.

    A pytest fixture may override a conftest fixture of its name for one module, so fixtures are left out.
    """
    found = modules(root)
    helpers: dict[str, str] = {}
    for module in found.values():
        if layer(module.name) == "tests" and not module.path.name.startswith("test_"):
            for node in module.tree.body:
                if isinstance(node, ast.FunctionDef | ast.ClassDef) and not _is_fixture(node):
                    helpers.setdefault(node.name, module.path.name)
    copies = []
    for module in found.values():
        if layer(module.name) != "tests" or not module.path.name.startswith("test_"):
            continue
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in helpers and not _is_fixture(node):
                copies.append(
                    f"{module.path.relative_to(root)}:{node.lineno}: {node.name} is defined in tests/{helpers[node.name]}"
                )
    return sorted(copies)


def _is_fixture(node: ast.FunctionDef | ast.ClassDef) -> bool:
    """Whether `node` is decorated `@pytest.fixture` or `@pytest.fixture(...)`."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
    return False


def _names_imported_from_models(module: Module, known: frozenset[str]) -> set[str]:
    """The local names `module` binds to something of models/."""
    names = set()
    for node in _statements(module.tree.body):
        if isinstance(node, ast.ImportFrom):
            resolved = dict(zip((alias.name for alias in node.names), imports(_only(module, node), known), strict=True))
            for alias in node.names:
                if layer(resolved[alias.name][1]) == "models":
                    names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names if layer(alias.name) == "models"}
    return names


def _only(module: Module, node: ast.ImportFrom) -> Module:
    return Module(module.name, module.path, ast.Module(body=[node], type_ignores=[]))


def _delegates(function: ast.FunctionDef, from_models: set[str]) -> bool:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return False
    callee = body[0].value.func
    while isinstance(callee, ast.Attribute):
        callee = callee.value
    return isinstance(callee, ast.Name) and callee.id in from_models


# --- the project -------------------------------------------------------------------------------------------

def test_every_import_follows_the_layers():
    assert layering_violations(project_path()) == []


def test_test_helpers_hold_no_behaviour_of_a_controller():
    assert helper_violations(project_path()) == []


def test_no_test_module_redefines_a_shared_test_helper():
    assert shared_helper_copies(project_path()) == []


def test_the_check_reads_the_project():
    # The checks above pass because they read the modules, not because they read none.
    found = modules(project_path())
    assert {"config.platform", "components.platform", "components.queueing", "offline.stack", "tests.conftest"} <= set(found)
    assert layer("components.karpenter.policies") == "component:karpenter"


# --- the rules on a tree made to break them -----------------------------------------------------------------

BROKEN = {
    "models/kueue/__init__.py": "",
    "models/kueue/fit.py": "from config.labels import X\n\ndef assign(job): ...\n\nclass Workload: ...\n",
    "models/kubernetes/quantity.py": "from ..kueue import fit\n\ndef parse_quantity(text): ...\n",
    "config/__init__.py": "",
    "config/labels.py": "import pulumi\nfrom models.kueue.fit import assign\nX = 1\n",
    "config/derive.py": "from components.lib import helm\n",
    "components/lib/helm.py": "from components.queueing import Q\n",
    "components/queueing.py": "from .lib.helm import h\nfrom .tenants import T\nfrom config.labels import X\n",
    "components/tenants.py": "from components import queueing\nfrom models.kueue import fit\n",
    "components/karpenter/__init__.py": "from . import policies\nfrom ..lib import helm\nfrom ..network import N\n",
    "components/karpenter/policies.py": "from ..karpenter import names\n",
    "components/network.py": "",
    "components/platform.py": "from . import karpenter, queueing, tenants\n",
    "offline/engine.py": "import pulumi\nfrom components.platform import P\n",
    "sim/clock.py": "from offline.engine import run\nfrom models.kueue.fit import assign\n",
    "tests/guards.py": (
        "from models.kubernetes import quantity as q\n"
        "def parse_quantity(text):\n    '''A delegate.'''\n    return q.parse_quantity(text)\n"
        "def admit(job):\n    return job['spec'] is not None\n"
        "class Workload: ...\n"
        "def tenant_plan(config, name):\n    return config[name]\n"
        "def pod_sets(job):\n    return count(job)\n"
    ),
    "tests/test_x.py": "def admit(job): ...\n",
    "tests/conftest.py": (
        "import pytest\n"
        "def problems_of(document):\n    return []\n"
        "@pytest.fixture\ndef stack():\n    return {}\n"
    ),
    "tests/test_y.py": (
        "import pytest\n"
        "def problems_of(document):\n    return []\n"
        "def tenant_plan(config, name): ...\n"
        "@pytest.fixture\ndef stack():\n    return {'x': 1}\n"
    ),
}


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    for relative, text in BROKEN.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    return tmp_path


def test_each_broken_arrow_is_reported_and_nothing_else(broken):
    assert layering_violations(broken) == [
        "components/karpenter/__init__.py:3: component:karpenter imports components.network",
        "components/lib/helm.py:1: components.lib imports components.queueing",
        "components/queueing.py:2: component:queueing imports components.tenants",
        "components/tenants.py:1: component:tenants imports components.queueing",
        "config/derive.py:1: config imports components.lib.helm",
        "config/labels.py:1: config imports pulumi",
        "models/kueue/fit.py:1: models imports config.labels",
        "sim/clock.py:1: sim imports offline.engine",
    ]


def test_a_test_helper_may_delegate_to_a_model_but_not_copy_one(broken):
    assert helper_violations(broken) == [
        "tests/guards.py:10: pod_sets is a model's behaviour",
        "tests/guards.py:5: admit is a model's behaviour",
        "tests/guards.py:7: Workload is a model's behaviour",
    ]


def test_a_test_module_may_override_a_fixture_but_not_copy_a_shared_helper(broken):
    assert shared_helper_copies(broken) == [
        "tests/test_x.py:1: admit is defined in tests/guards.py",
        "tests/test_y.py:2: problems_of is defined in tests/conftest.py",
        "tests/test_y.py:4: tenant_plan is defined in tests/guards.py",
    ]
