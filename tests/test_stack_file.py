"""Reading `Pulumi.<stack>.yaml`: every way the file itself can be wrong is one line, exit 2, no traceback."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from config import ConfigError
from offline.__main__ import main
from offline.stack import SECURE_PLACEHOLDER, load_config, stack_config_from_mapping, stack_config_from_text

from .conftest import FIXTURE_STACKS_DIR, fixture_document

FILE = "Pulumi.x.yaml"

# (what the file holds, a fragment of the one line it gets)
UNREADABLE = [
    ("config:\n\taws:region: us-west-2\n", "Pulumi.x.yaml:2:1: not valid YAML"),
    ("config:\n  aws:region: us-west-2\n\t\n", "never tabs"),
    ("config: !!python/object:os.system {}\n", "Pulumi.x.yaml:1:9: not valid YAML"),
    ("config:\n  a: [1, 2\n", "Pulumi.x.yaml:3:1: not valid YAML"),
    ("- config\n- x\n", "the file is a list; a stack file is a mapping with a `config:` key"),
    ("just some text\n", "the file is plain text"),
    ("config: [a, b]\n", "config: is a list"),
    ("config: gpu-platform\n", "config: is plain text"),
    ("config:\n  gpu-platform:tenants: []\n  gpu-platform:tenants: [{}]\n", "Pulumi.x.yaml:3:3: not valid YAML"),
    ("config:\n  x:\n    a: 1\n    a: 2\n", "key 'a' appears twice in one mapping (first on line 3)"),
]


@pytest.mark.parametrize(("text", "expected"), UNREADABLE, ids=[row[1][:40] for row in UNREADABLE])
def test_an_unreadable_stack_file_is_one_line_naming_file_and_position(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        stack_config_from_text("x", text.encode(), FILE)
    [line] = err.value.problems
    assert expected in line
    assert line.startswith(FILE)


def test_bytes_that_are_not_utf8_are_one_line_with_their_line_number() -> None:
    with pytest.raises(ConfigError) as err:
        stack_config_from_text("x", b"config:\n  aws:region: \xff\n", FILE)
    assert err.value.problems == [f"{FILE}:2: byte 0xff is not UTF-8; save the file as UTF-8"]


def test_an_empty_file_is_an_empty_config() -> None:
    assert stack_config_from_text("x", b"", FILE).values == {}


def test_a_date_stays_the_text_it_was_written_as_and_fails_the_keys_own_check() -> None:
    stack = stack_config_from_text("x", b"config:\n  gpu-platform:cluster:\n    logging: {retentionDays: 2026-01-01}\n", FILE)
    assert '"2026-01-01"' in stack.values["gpu-platform:cluster"]


NON_STRING_KEYS = [
    ({True: 1}, "config: key true is a YAML boolean"),
    ({123: "x"}, "config: key 123 is a number; keys are strings: quote it"),
    (
        {"gpu-platform:cluster": {"tags": {False: "x"}}},
        "gpu-platform:cluster.tags: key false is a YAML boolean (YAML reads on, off, yes and no as booleans); "
        'keys are strings: quote it: "off":',
    ),
    ({"gpu-platform:tenants": [{"gpu": {1: {}}}]}, "gpu-platform:tenants[0].gpu: key 1 is a number"),
]


@pytest.mark.parametrize(("config", "expected"), NON_STRING_KEYS, ids=[row[1][:30] for row in NON_STRING_KEYS])
def test_a_key_that_is_not_a_string_is_a_problem_and_is_left_out(config: dict, expected: str) -> None:
    stack = stack_config_from_mapping("x", config)
    assert [expected in line for line in stack.problems] == [True]


MALFORMED_SECURE = [
    ({"secure": ""}, "gpu-platform:monitoring.receivers[oncall].slackWebhookUrl.secure: '' is not ciphertext from "
     "`pulumi config set --secret`; set it again with `pulumi config set --secret --path "
     "gpu-platform:monitoring.receivers[0].slackWebhookUrl <value>`"),
    ({"secure": 12}, ".slackWebhookUrl.secure: 12 is not ciphertext"),
    ({"secure": "has spaces in it"}, ".slackWebhookUrl.secure: 'has spaces in it' is not ciphertext"),
    ({"secure": "AAABAx", "plain": "x"}, ".slackWebhookUrl: a secure value is a mapping with the one key `secure`, found also"),
]


@pytest.mark.parametrize(("value", "expected"), MALFORMED_SECURE, ids=[row[1][-40:] for row in MALFORMED_SECURE])
def test_a_malformed_secure_value_is_a_problem(value: dict, expected: str) -> None:
    config = {"gpu-platform:monitoring": {"receivers": [{"name": "oncall", "slackWebhookUrl": value}]}}
    stack = stack_config_from_mapping("x", config)
    assert len(stack.problems) == 1 and expected in stack.problems[0]
    assert SECURE_PLACEHOLDER in stack.values["gpu-platform:monitoring"]


def test_the_files_problems_and_the_configs_are_reported_in_one_run() -> None:
    document: dict[Any, Any] = fixture_document("single-pool")
    document[True] = "x"
    document["gpu-platform:cluster"]["systemNodes"]["minSize"] = 0
    with pytest.raises(ConfigError) as err:
        load_config(stack_config_from_mapping("x", document))
    assert len(err.value.problems) == 2
    assert err.value.problems[0].startswith("config: key true")
    assert err.value.problems[1].startswith("gpu-platform:cluster.systemNodes.minSize")


def test_check_prints_an_unreadable_file_as_one_line_and_exits_2(tmp_path, monkeypatch, capsys) -> None:
    import functools

    from offline import stack as stack_module

    (tmp_path / "Pulumi.broken.yaml").write_text("config:\n\tgpu-platform:cluster: {}\n")
    monkeypatch.setattr("offline.__main__.load_stack", functools.partial(stack_module.load_stack, project_dir=tmp_path))
    assert main(["check", "--stack", "broken"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "Pulumi.broken.yaml:2:1: not valid YAML" in err


def test_every_fixture_reads_the_same_through_the_strict_loader() -> None:
    for path in FIXTURE_STACKS_DIR.glob("*.yaml"):
        strict = stack_config_from_text(path.stem, path.read_bytes(), path.name)
        plain = stack_config_from_mapping(path.stem, yaml.safe_load(path.read_text())["config"])
        assert strict == plain
