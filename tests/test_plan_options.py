"""plan.json carries each resource's deploy options, as the SDK registered them.

`customTimeouts`, `deleteBeforeReplace`, `ignoreChanges`, `retainOnDelete` and `replaceOnChanges`
change what `pulumi up` and `pulumi destroy` do without changing a single input, so a review of the
plan must see them. The SDK sends them on `RegisterResourceRequest` (pulumi/proto/resource.proto);
the recording monitor keeps them, and a key is written only where the option is set.
"""

from __future__ import annotations

import functools
import json

import pulumi
import pulumi_kubernetes as k8s

from offline.engine import Recording, run_program
from offline.render import write_render

from .conftest import fixture_document, load, render_fixture

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def _program() -> None:
    k8s.core.v1.ConfigMap(
        "tuned",
        metadata={"name": "tuned"},
        data={"a": "b"},
        opts=pulumi.ResourceOptions(
            custom_timeouts=pulumi.CustomTimeouts(create="20m", delete="2h15m"),
            delete_before_replace=True,
            ignore_changes=["data"],
            retain_on_delete=True,
            replace_on_changes=["metadata.name"],
        ),
    )
    k8s.core.v1.ConfigMap("plain", metadata={"name": "plain"}, data={"a": "b"})
    k8s.core.v1.ConfigMap(
        "kept-in-place",
        metadata={"name": "kept-in-place"},
        opts=pulumi.ResourceOptions(delete_before_replace=False),
    )


@functools.cache
def recording() -> Recording:
    return run_program("test", {}, program=_program)


def plan_entry(name: str) -> dict:
    return recording().named(CONFIG_MAP, name).as_plan_entry()


def test_the_recording_keeps_every_deploy_option_as_registered():
    tuned = recording().named(CONFIG_MAP, "tuned")
    assert tuned.custom_timeouts == {"create": "20m", "delete": "2h15m"}
    assert tuned.delete_before_replace is True
    assert tuned.ignore_changes == ("data",)
    assert tuned.retain_on_delete is True
    assert tuned.replace_on_changes == ("metadata.name",)


def test_plan_entry_writes_each_option_that_is_set_beside_protect():
    entry = plan_entry("tuned")
    assert entry["protect"] is False
    assert entry["customTimeouts"] == {"create": "20m", "delete": "2h15m"}
    assert entry["deleteBeforeReplace"] is True
    assert entry["ignoreChanges"] == ["data"]
    assert entry["retainOnDelete"] is True
    assert entry["replaceOnChanges"] == ["metadata.name"]


def test_plan_entry_leaves_out_the_options_left_at_the_engines_default():
    entry = plan_entry("plain")
    assert "protect" in entry
    assert not {"customTimeouts", "deleteBeforeReplace", "ignoreChanges", "retainOnDelete", "replaceOnChanges"} & set(entry)


def test_an_explicit_delete_before_replace_false_is_written_because_it_overrides_the_providers_choice():
    # deleteBeforeReplaceDefined: false set on purpose keeps a replacement create-before-delete even
    # where the provider's diff asks for delete-first (pulumi/sdk/python/lib/pulumi/runtime/resource.py).
    assert plan_entry("kept-in-place")["deleteBeforeReplace"] is False


def test_the_written_plan_json_holds_the_same_entries_as_the_recording(tmp_path):
    rendered = render_fixture("single-pool")
    write_render(rendered, load(fixture_document("single-pool")), tmp_path)
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan == json.loads(json.dumps([r.as_plan_entry() for r in rendered.resources], sort_keys=True))
