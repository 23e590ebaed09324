"""`check-manifest` on files nobody vetted (a tenant's CI may run it on any proposed change): each hostile
file is refused with one line and exit 2, before the stack is rendered, within 10 s of CPU and 512 MiB of
address space; and the reader's bounds (offline/manifest_files.py) hold at their edges.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from offline import check_manifest
from offline.check_manifest import unjudgeable
from offline.manifest_files import MAX_DEPTH, MAX_NODES, Unreadable, read_manifest

from .conftest import STAND_IN_CLI
from .test_doc_snippets import stack_crds

PROJECT = Path(__file__).resolve().parent.parent
JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml-research}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources: {requests: {cpu: "1", memory: 1Gi}, limits: {memory: 1Gi}}
"""
LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9) if previous else ', '.join(['lol'] * 9)}]\n"
    for previous, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
) + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata: {x: *i}\n"

# file name -> (content, the one line after "<path>: ")
HOSTILE: dict[str, tuple[str | bytes, str]] = {
    "laughs.yaml": (
        LAUGHS,
        "more than 20000 nodes with its aliases expanded (line 5): a Kubernetes manifest has a few hundred; "
        "write the values out or split the file",
    ),
    "huge-exponent.yaml": (
        JOB.replace('cpu: "1"', "cpu: 1e999999999"),
        "Job/train: spec.template.spec.containers[0].resources.requests.cpu: 1e999999999 is too large: 10^100 or "
        "more, beyond any resource amount",
    ),
    "latin-1.yaml": (
        JOB.replace("name: main", "name: m\xe4in").encode("latin-1"),
        f"not UTF-8 text (byte 0xe4 at offset {JOB.index('name: main') + len('name: m')}): save it as UTF-8",
    ),
    "no-metadata.yaml": (
        "apiVersion: batch/v1\nkind: Job\nspec: {}\n", "document 1: Job has no metadata map: give it metadata.name"
    ),
    "deep.yaml": ("a: " + "[" * 50_000 + "]" * 50_000 + "\n", "line 1: not valid YAML: exceeded maximum nesting depth "
                  "while increasing flow level"),
    "recursive-alias.yaml": (
        "apiVersion: batch/v1\nkind: Job\nmetadata: &m {name: r, labels: *m}\n",
        "line 3: alias *m is inside the node &m it names, so it never ends: write the value out",
    ),
    "parallelism.yaml": (
        JOB.replace("spec:\n  template:", "spec:\n  parallelism: 100000000000000000000\n  template:"),
        "Job/train: spec.parallelism: 100000000000000000000 does not fit int32 (-2147483648 to 2147483647)",
    ),
    "map-for-list.yaml": (
        JOB.replace("      - name: main\n        image: busybox\n        resources", "        name: main\n        image: "
                    "busybox\n        resources"),
        "Job/train: spec.template.spec.containers: must be a list, not a map",
    ),
    "no-pod-template.yaml": (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: empty}\n",  # the schema leaves spec optional
        "Job/empty: spec: required field is missing",
    ),
    "unserved-version.yaml": (
        JOB.replace("batch/v1", "batch/v2"),
        "Job/train: apiVersion: Kubernetes 1.35 does not serve batch/v2 Job; it serves Job as batch/v1",
    ),
    "not-an-object.yaml": ("- a\n- b\n", "document 1: a list, not a Kubernetes object (a map)"),
    "too-big.yaml": (
        "# " + "x" * (3 * 2**20) + "\n",
        "larger than 3 MiB, the most the API server takes in one request: split it into smaller files",
    ),
}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (512 * 2**20, 512 * 2**20))


def test_every_hostile_file_is_refused_with_one_line_and_exit_2_in_bounded_cpu_and_memory(tmp_path, shipped_project):
    paths = []
    for name, (content, _) in HOSTILE.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths.append(path)
    outside = tmp_path / "secret.txt"
    outside.write_text("password: hunter2\n")
    (tmp_path / "link.yaml").symlink_to(outside)
    os.mkfifo(tmp_path / "fifo.yaml")
    paths += [tmp_path / "link.yaml", tmp_path / "fifo.yaml"]

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-c", STAND_IN_CLI, str(shipped_project), "check-manifest", "--stack", "dev", "--tenant",
         "ml-research", *map(str, paths)],
        cwd=PROJECT, capture_output=True, text=True, timeout=60, preexec_fn=_limits, check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    expected = [f"{tmp_path / name}: {line}" for name, (_, line) in HOSTILE.items()]
    expected += [
        f"{tmp_path / 'link.yaml'}: a symlink to {outside}, outside the current directory: name that file itself to check it",
        f"{tmp_path / 'fifo.yaml'}: not a regular file: name a YAML file",
    ]
    assert sorted(run.stderr.splitlines()) == sorted(expected), run.stderr
    assert run.returncode == 2
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    assert cpu < 10, f"{cpu:.1f} s of CPU"
    assert time.monotonic() - started < 60


def test_a_custom_workload_with_a_map_where_a_list_belongs_is_refused_against_its_crd():
    """In process, with the CRDs other tests read too: reading them costs the subprocess above 2 s of CPU."""
    jobset = yaml.safe_load(
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nspec:\n  replicatedJobs: {name: w}\n"
    )
    calls = []
    def crds():
        calls.append(1)
        return stack_crds("dev")
    assert unjudgeable([("js.yaml", jobset)], crds, "1.35") == [
        "js.yaml: JobSet/js: spec.replicatedJobs: must be a list, not a map"
    ]
    assert unjudgeable([("job.yaml", yaml.safe_load(JOB))], crds, "1.35") == []
    jobset["spec"]["replicatedJobs"] = [{"name": "w", "replicas": 2**31, "template": {"spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}]
    assert unjudgeable([("js.yaml", jobset)], crds, "1.35") == [
        "js.yaml: JobSet/js: spec.replicatedJobs[0].replicas: 2147483648 does not fit int32 (-2147483648 to 2147483647)"
    ]
    jobset["spec"]["replicatedJobs"] = [{"name": "w", "template": {"spec": {"template": {"spec": {}}}}},
                                        {"name": "v", "template": {"spec": {}}}]
    assert unjudgeable([("js.yaml", jobset)], crds, "1.35") == [
        "js.yaml: JobSet/js: spec.replicatedJobs[0].template.spec.template.spec.containers: required field is missing",
        "js.yaml: JobSet/js: spec.replicatedJobs[1].template.spec.template: required field is missing",
    ]
    assert len(calls) == 3  # a built-in kind needs no CRDs


def test_a_null_list_item_and_an_amount_the_schema_leaves_unchecked_are_refused():
    job = yaml.safe_load(JOB)
    job["spec"]["template"]["spec"]["containers"][0]["ports"] = [None]
    assert unjudgeable([("job.yaml", job)], lambda: stack_crds("dev"), "1.35") == [
        "job.yaml: Job/train: spec.template.spec.containers[0].ports[0]: a null item; remove it"
    ]
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "ddp"},
                "spec": {"runtimeRef": {"name": "torch-distributed"},
                         "trainer": {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "eight", "cpu": None}}}}}
    assert unjudgeable([("tj.yaml", trainjob)], lambda: stack_crds("dev"), "1.35") == [
        'tj.yaml: TrainJob/ddp: spec.trainer.resourcesPerNode.limits["nvidia.com/gpu"]: "eight" is not a valid quantity'
    ]


# --- the reader's bounds, in process --------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


def nested(depth: int) -> str:
    """A document whose deepest collection is `depth` collections down (block style, as people write)."""
    lines = [f"{'  ' * level}k{level}:" for level in range(depth - 1)]
    return "\n".join([*lines, f"{'  ' * (depth - 1)}leaf: [x]"]) + "\n"


def test_nesting_up_to_the_limit_reads_and_one_deeper_is_refused(tmp_path):
    # depth - 1 nested maps, then the innermost map holding a list: `depth` collections in all, plus the root.
    assert read_manifest(write(tmp_path, nested(MAX_DEPTH - 1)), tmp_path)
    with pytest.raises(Unreadable, match=f"nested more than {MAX_DEPTH} deep"):
        read_manifest(write(tmp_path, nested(MAX_DEPTH)), tmp_path)


def test_aliases_count_as_the_nodes_they_stand_for_up_to_the_limit(tmp_path):
    """An anchored list of 999 scalars is 1,000 nodes; each alias of it counts 1,000 again. The document map, the
    anchor's key, 18 keys with an alias each (18 x 1,001) and a list of 978 under `c` (980) make exactly 20,000."""
    def document(extra: int) -> str:
        aliases = "".join(f"b{i}: *a\n" for i in range(18))
        return f"a: &a [{', '.join(['x'] * 999)}]\n{aliases}c: [{', '.join(['y'] * (978 + extra))}]\n"
    assert MAX_NODES == 1 + 1 + 1000 + 18 * 1001 + 1 + 1 + 978
    [loaded] = read_manifest(write(tmp_path, document(0)), tmp_path)
    assert len(loaded) == 20 and loaded["b17"] == ["x"] * 999
    with pytest.raises(Unreadable, match="more than 20000 nodes"):
        read_manifest(write(tmp_path, document(1)), tmp_path)


def test_an_alias_to_an_earlier_documents_anchor_is_undefined_not_counted(tmp_path):
    """Anchors belong to their document (YAML 1.1, PyYAML's composer): in the second, *big names nothing."""
    text = f"big: &big [{', '.join(['x'] * 999)}]\n---\n" + "".join(f"k{i}: *big\n" for i in range(25))
    with pytest.raises(Unreadable, match=r"line 3: alias \*big names no anchor before it in its document"):
        read_manifest(write(tmp_path, text), tmp_path)


def test_anchors_are_per_document_and_an_alias_after_its_node_is_not_recursive(tmp_path):
    text = "a: &x {k: v}\nb: *x\n---\nc: &x [1]\nd: *x\n"
    assert read_manifest(write(tmp_path, text), tmp_path) == [{"a": {"k": "v"}, "b": {"k": "v"}}, {"c": [1], "d": [1]}]


def test_a_symlink_inside_the_current_directory_is_followed(tmp_path):
    (tmp_path / "jobs").mkdir()
    target = tmp_path / "jobs" / "real.yaml"
    target.write_text("kind: Job\n")
    (tmp_path / "link.yaml").symlink_to(target)
    assert read_manifest(tmp_path / "link.yaml", tmp_path) == [{"kind": "Job"}]
    with pytest.raises(Unreadable, match="outside the current directory"):
        read_manifest(tmp_path / "link.yaml", tmp_path / "jobs" / "elsewhere")


def test_a_byte_order_mark_is_allowed_and_a_file_at_the_size_limit_reads(tmp_path):
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfkind: Job\n")
    assert read_manifest(path, tmp_path) == [{"kind": "Job"}]
    body = "kind: Job\n# "
    path.write_text(body + "x" * (3 * 2**20 - len(body) - 1) + "\n")
    assert path.stat().st_size == 3 * 2**20
    assert read_manifest(path, tmp_path) == [{"kind": "Job"}]
    path.write_text(body + "x" * (3 * 2**20 - len(body)) + "\n")
    with pytest.raises(Unreadable, match="larger than 3 MiB"):
        read_manifest(path, tmp_path)


def test_a_run_reads_files_until_its_node_budget_is_spent(tmp_path, monkeypatch):
    """With a budget of 2,500: two lists of 999 scalars (1,000 nodes each) are read, a third is refused, and a
    list of 399 (400 nodes) still fits what is left."""
    monkeypatch.setattr(check_manifest, "MAX_RUN_NODES", 2500)
    paths = []
    for name, items in (("a", 999), ("b", 999), ("c", 999), ("d", 399)):
        paths.append(tmp_path / f"{name}.yaml")
        paths[-1].write_text("[" + ", ".join(["x"] * items) + "]\n")
    _, problems = check_manifest.documents_and_problems(paths)
    assert problems == [
        f"{paths[0]}: document 1: a list, not a Kubernetes object (a map)",
        f"{paths[1]}: document 1: a list, not a Kubernetes object (a map)",
        f"{paths[2]}: the files before it leave 500 of the nodes one run checks, and it holds more (aliases "
        "expanded): check it in another run",
        f"{paths[3]}: document 1: a list, not a Kubernetes object (a map)",
    ]
