"""Seeded mutations of the fixture stacks: every mistake is refused in one-line problems, never a traceback.

Each mutation knows by construction whether it makes the config invalid (a value of the wrong type,
an unknown key, a name two objects would share...) and, if so, a fragment of the line that must
name it. An invalid mutation must raise `ConfigError` with that line; a valid one must load; any
other exception is a traceback a user would have seen. Accepted configs that could collide on a
name are rendered, and the engine refuses duplicate URNs as Pulumi does.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from config import ConfigError
from config.cluster import MAX_STACK_TAGS
from config.namespaces import RESERVED_NAMESPACES
from offline.stack import load_config, stack_config_from_mapping, stack_config_from_text

from .conftest import fixture_document, render

SEED = 1313
MUTATIONS_PER_STACK = 150
STACKS = ("single-pool", "multi-pool")
P = "gpu-platform"
T = f"{P}:tenants"
N = f"{P}:nodePools"
# Maps whose keys the user chooses freely: a new key there is no mistake.
FREE_KEYS = ("tags", "priorities")
Doc = dict[Any, Any]
Path = tuple[Any, ...]


@dataclass(frozen=True)
class Outcome:
    """`refused_with`: a fragment of the problem line the mutation must produce; None: it must load."""

    kind: str
    refused_with: str | None


def leaves(node: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from leaves(value, (*path, index))
    else:
        yield path, node


def mappings(node: Any, path: Path = ()) -> Iterator[tuple[Path, dict]]:
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from mappings(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from mappings(value, (*path, index))


def at(doc: Doc, path: Path) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def set_at(doc: Doc, path: Path, value: Any) -> None:
    at(doc, path[:-1])[path[-1]] = value


def section_leaves(doc: Doc) -> list[tuple[Path, Any]]:
    return [(path, value) for path, value in leaves(doc) if str(path[0]).startswith(f"{P}:")]


# --- invalid by construction ---------------------------------------------------------------------


def wrong_type(rng: random.Random, doc: Doc) -> Outcome:
    """A leaf of another JSON type: a bool for an int (strict: `gpus: true` is not 1), a number for text."""
    path, value = rng.choice(section_leaves(doc))
    if isinstance(value, bool):
        replacement: Any = rng.choice(["yes", 1])
    elif isinstance(value, int):
        replacement = rng.choice([True, "8"])
    elif isinstance(value, float):
        replacement = "x"
    else:
        replacement = rng.choice([7, ["x"], False])
    set_at(doc, path, replacement)
    return Outcome("wrong-type", "")


def unknown_key(rng: random.Random, doc: Doc) -> Outcome:
    candidates = [
        (path, node) for path, node in mappings(doc)
        if path and str(path[0]).startswith(f"{P}:") and path[-1] not in FREE_KEYS
    ]
    _, node = rng.choice(candidates)
    node["colour"] = "blue"
    return Outcome("unknown-key", "colour")


def negative(rng: random.Random, doc: Doc) -> Outcome:
    ints = [(p, v) for p, v in section_leaves(doc) if type(v) is int and "priorities" not in p]
    path, _ = rng.choice(ints)
    set_at(doc, path, -1)
    return Outcome("negative", "-1")


REQUIRED: list[tuple[str, Callable[[Doc], Path]]] = [
    ("cluster name", lambda d: (f"{P}:cluster", "name")),
    ("cluster admins", lambda d: (f"{P}:cluster", "admins")),
    ("pool gpus", lambda d: (N, 0, "gpus")),
    ("pool name", lambda d: (N, 0, "name")),
    ("tenant name", lambda d: (T, 0, "name")),
    ("region", lambda d: ("aws:region",)),
    ("cluster", lambda d: (f"{P}:cluster",)),
]


def delete_required(rng: random.Random, doc: Doc) -> Outcome:
    what, where = rng.choice(REQUIRED)
    path = where(doc)
    del at(doc, path[:-1])[path[-1]]
    return Outcome(f"no {what}", "required but not set")


def duplicate_entry(rng: random.Random, doc: Doc) -> Outcome:
    section = rng.choice([T, N])
    entries = doc[section]
    entries.append(copy.deepcopy(rng.choice(entries)))
    return Outcome("duplicate entry", "already the name of")


def misspelt_namespace(rng: random.Random, doc: Doc) -> Outcome:
    key = rng.choice([k for k in doc if k.startswith(f"{P}:") and k != f"{P}:cluster"])
    typo = rng.choice([key.replace("platform", "platfrom"), key.replace("gpu-", "gpu_"), key[:-1]])
    doc[typo] = doc.pop(key)
    return Outcome("misspelt key", f"{typo}: unknown")


def reserved_tag(rng: random.Random, doc: Doc) -> Outcome:
    key = rng.choice(["karpenter.sh/team", "kubernetes.io/cluster/other", "eks:owner", "aws:team", "karpenter.k8s.aws/x"])
    doc[f"{P}:cluster"].setdefault("tags", {})[key] = "x"
    return Outcome("reserved tag", "sets and owns")


def too_many_tags(rng: random.Random, doc: Doc) -> Outcome:
    doc[f"{P}:cluster"]["tags"] = {f"team-{i}": "x" for i in range(MAX_STACK_TAGS + rng.randint(1, 20))}
    return Outcome("too many tags", f"at most {MAX_STACK_TAGS}")


def first_deployment(doc: Doc) -> dict:
    return next(d for tenant in doc[T] for d in tenant.get("inference", []))


def huge_uid(rng: random.Random, doc: Doc) -> Outcome:
    deployment = first_deployment(doc)
    deployment["serving"] = {"image": "vllm/vllm-openai:v0.11.0", "model": "m", "runAsUser": 2**31 + rng.randint(0, 9)}
    return Outcome("runAsUser", "must be <= 2147483647")


def empty_model(rng: random.Random, doc: Doc) -> Outcome:
    first_deployment(doc)["serving"] = {"image": "vllm/vllm-openai:v0.11.0", "model": ""}
    return Outcome("empty model", "serving.model: '' is empty")


def empty_slack(rng: random.Random, doc: Doc) -> Outcome:
    receiver = {"name": "oncall", "slackWebhookUrl": "", "slackChannel": "#gpu"}
    doc.setdefault(f"{P}:monitoring", {})["receivers"] = [receiver]
    return Outcome("empty webhook", "slackWebhookUrl: '' is empty")


def bad_secure(rng: random.Random, doc: Doc) -> Outcome:
    value = rng.choice([{"secure": ""}, {"secure": 5}, {"secure": "a b"}, {"secure": "AAAB", "x": 1}])
    receiver = {"name": "oncall", "slackWebhookUrl": value, "slackChannel": "#gpu"}
    doc.setdefault(f"{P}:monitoring", {})["receivers"] = [receiver]
    return Outcome("malformed secure", "slackWebhookUrl")


def unknown_cpu_family(rng: random.Random, doc: Doc) -> Outcome:
    doc.setdefault(f"{P}:cpuPool", {})["instanceFamilies"] = [rng.choice(["m7x", "c9z", "m7g", "graviton"])]
    return Outcome("cpu family", "not an x86_64 EC2 family")


def non_string_key(rng: random.Random, doc: Doc) -> Outcome:
    _, node = rng.choice(list(mappings(doc)))
    node[rng.choice([True, False, 123])] = "x"
    return Outcome("non-string key", "keys are strings")


def pool_named_cpu(rng: random.Random, doc: Doc) -> Outcome:
    doc[N][0]["name"] = "cpu"
    return Outcome("pool named cpu", "general CPU pool")


def pool_flavor_collision(rng: random.Random, doc: Doc) -> Outcome:
    """`gpu-h100` and `h100`, one capacity type each: both make flavor `h100-on-demand`."""
    pool = copy.deepcopy(doc[N][0])
    pool["name"] = pool["name"].removeprefix("gpu-")
    pool["capacityTypes"] = ["on-demand"]
    doc[N][0]["capacityTypes"] = ["on-demand"]
    doc[N].append(pool)
    return Outcome("flavor collision", "makes flavor")


def deployment_collision(rng: random.Random, doc: Doc) -> Outcome:
    """Tenant `a` with deployment `b-c` and tenant `a-b` with deployment `c`."""
    owner = next(t for t in doc[T] if t.get("inference"))
    deployment = owner["inference"][0]
    deployment["name"] = "b-c"
    twin = copy.deepcopy(owner)
    twin["name"] = f"{owner['name']}-b"
    twin["inference"] = [{**deployment, "name": "c"}]
    twin["admins"], twin["viewers"] = [], []
    doc[T].append(twin)
    return Outcome("deployment collision", "both name their resources")


def principal_collision(rng: random.Random, doc: Doc) -> Outcome:
    admin = doc[f"{P}:cluster"]["admins"][0]
    account, name = admin.rsplit("/", 1)
    doc[T][0]["viewers"] = [f"{account}/{name.swapcase()}"]
    return Outcome("principal collision", "differ only in case or punctuation")


def reserved_tenant(rng: random.Random, doc: Doc) -> Outcome:
    doc[T][0]["name"] = rng.choice(sorted(RESERVED_NAMESPACES))
    return Outcome("reserved tenant", "a namespace the platform or Kubernetes owns")


INVALID = [
    wrong_type, unknown_key, negative, delete_required, duplicate_entry, misspelt_namespace, reserved_tag,
    too_many_tags, huge_uid, empty_model, empty_slack, bad_secure, unknown_cpu_family, non_string_key,
    pool_named_cpu, pool_flavor_collision, deployment_collision, principal_collision, reserved_tenant,
]
# Generic mutations are drawn more often: they reach every key of the documents.
WEIGHTS = [6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]


# --- valid by construction -------------------------------------------------------------------------


def empty_optional_section(rng: random.Random, doc: Doc) -> Outcome:
    """`gpu-platform:tenants:` with every entry commented out is YAML null: the section is empty."""
    doc[rng.choice([T, f"{P}:monitoring", f"{P}:autoscaling"])] = None
    return Outcome("empty optional section", None)


def rename_tenant(rng: random.Random, doc: Doc) -> Outcome:
    rng.choice(doc[T])["name"] = f"team-{rng.randint(100, 999)}"
    return Outcome("renamed tenant", None)


def reorder_tenants(rng: random.Random, doc: Doc) -> Outcome:
    rng.shuffle(doc[T])
    return Outcome("reordered tenants", None)


def near_collisions(rng: random.Random, doc: Doc) -> Outcome:
    """Names that share prefixes without colliding: tenant `a` + deployment `b-c`, tenant `a-b` + deployment `d`."""
    owner = next(t for t in doc[T] if t.get("inference"))
    owner["inference"][0]["name"] = "b-c"
    twin = copy.deepcopy(owner)
    twin["name"] = f"{owner['name']}-b"
    twin["inference"] = [{**owner["inference"][0], "name": "d"}]
    twin["admins"], twin["viewers"] = [], []
    for quota in twin["gpu"].values():
        quota.update(nominal=0, borrowingLimit=0)
        quota.pop("lendingLimit", None)
    twin["inference"][0]["maxReplicas"] = 1
    twin["gpu"][twin["inference"][0]["flavor"]]["borrowingLimit"] = 1
    doc[T].append(twin)
    return Outcome("near collisions", None)


VALID = [empty_optional_section, rename_tenant, reorder_tenants]


def text_mutation(rng: random.Random, text: str) -> tuple[bytes, str]:
    """A stack file with a tab, a repeated key, or a byte that is not UTF-8."""
    lines = text.splitlines()
    kind = rng.choice(["tab", "repeated key", "not utf-8"])
    if kind == "tab":
        index = rng.choice([i for i, line in enumerate(lines) if line.startswith("    ")])
        lines[index] = "\t" + lines[index].lstrip(" ")
        return "\n".join(lines).encode(), "never tabs"
    if kind == "repeated key":
        index = rng.choice([
            i for i, line in enumerate(lines)
            if ":" in line and not line.lstrip().startswith("- ") and line.rstrip().split(":", 1)[1].strip()
        ])
        lines.insert(index + 1, lines[index])
        return "\n".join(lines).encode(), "appears twice"
    data = bytearray("\n".join(lines).encode())
    data[rng.randrange(len(data))] = 0xFF
    return bytes(data), "is not UTF-8"


# --- the run -------------------------------------------------------------------------------------------


def check(document: Doc, outcome: Outcome, failures: list[str], accepted: list[Doc]) -> None:
    try:
        load_config(stack_config_from_mapping("fuzz", document))
    except ConfigError as err:
        if outcome.refused_with is None:
            failures.append(f"{outcome.kind}: refused a valid config: {err.problems}")
        elif not any(outcome.refused_with in line for line in err.problems):
            failures.append(f"{outcome.kind}: no line says {outcome.refused_with!r}: {err.problems}")
        malformed = [line for line in err.problems if "\n" in line or ": " not in line]
        if malformed:
            failures.append(f"{outcome.kind}: problems that are not one line naming a key: {malformed}")
    except Exception as err:
        failures.append(f"{outcome.kind}: traceback {type(err).__name__}: {err}")
    else:
        if outcome.refused_with is not None:
            failures.append(f"{outcome.kind}: accepted an invalid config")
        else:
            accepted.append(document)


@pytest.fixture(scope="module")
def fuzz_run() -> tuple[list[str], list[Doc], int]:
    rng = random.Random(SEED)
    failures: list[str] = []
    accepted: list[Doc] = []
    runs = 0
    for stack in STACKS:
        base = fixture_document(stack)
        text = yaml.safe_dump({"config": base}, sort_keys=False)
        for _ in range(MUTATIONS_PER_STACK):
            runs += 1
            roll = rng.random()
            if roll < 0.1:
                data, expected = text_mutation(rng, text)
                try:
                    stack_config_from_text("fuzz", data, "Pulumi.fuzz.yaml")
                except ConfigError as err:
                    if not any(expected in line for line in err.problems):
                        failures.append(f"text: no line says {expected!r}: {err.problems}")
                except Exception as err:
                    failures.append(f"text: traceback {type(err).__name__}: {err}")
                else:
                    failures.append(f"text: accepted a file that should say {expected!r}")
                continue
            document = copy.deepcopy(base)
            mutate = rng.choice(VALID) if roll < 0.2 else rng.choices(INVALID, WEIGHTS)[0]
            check(document, mutate(rng, document), failures, accepted)
    return failures, accepted, runs


def test_the_fuzzer_runs_at_least_300_mutations_of_both_fixture_stacks(fuzz_run) -> None:
    _, accepted, runs = fuzz_run
    assert runs >= 300
    assert accepted, "no valid mutation was drawn"


def test_no_mutation_raises_a_traceback_or_is_accepted_though_invalid(fuzz_run) -> None:
    failures, _, _ = fuzz_run
    assert failures == []


def test_names_that_share_prefixes_declare_no_urn_twice() -> None:
    """The engine refuses a duplicate URN (offline/engine.py); this config comes closest to one."""
    document = fixture_document("single-pool")
    assert near_collisions(random.Random(SEED), document).refused_with is None
    recording = render(document, "fuzz")
    urns = [resource.urn for resource in recording.resources]
    assert len(urns) == len(set(urns))
