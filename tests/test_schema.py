"""The JSON Schema editors check `Pulumi.<stack>.yaml` with: generated from the models, named by every stack file."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from config.schema import SCHEMA_PATH, schema_json, stack_schema
from offline.stack import stack_names

from .conftest import FIXTURE_STACKS_DIR, FIXTURES, project_path

MODELINE = f"# yaml-language-server: $schema={SCHEMA_PATH}"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = stack_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schema_is_what_the_models_generate() -> None:
    assert project_path(SCHEMA_PATH).read_text() == schema_json(), "run `make schema`"


@pytest.mark.stack_files
@pytest.mark.parametrize("stack", stack_names())
def test_every_stack_file_names_the_schema_in_its_first_line(stack: str) -> None:
    first = project_path(f"Pulumi.{stack}.yaml").read_text().splitlines()[0]
    assert first == MODELINE


SHIPPED = sorted(p.name for p in project_path("tests", "fixtures", "shipped").glob("*.yaml"))


@pytest.mark.parametrize(
    "path",
    [
        *(f"Pulumi.{s}.yaml" for s in stack_names()),
        *(f"fixture:{f}" for f in FIXTURES),
        *(f"tests/fixtures/shipped/{n}" for n in SHIPPED),
    ],
)
@pytest.mark.stack_files
def test_every_stack_and_fixture_satisfies_the_schema(validator, path: str) -> None:
    file = FIXTURE_STACKS_DIR / f"{path.removeprefix('fixture:')}.yaml" if path.startswith("fixture:") else project_path(path)
    document = yaml.safe_load(file.read_text())
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]
    assert errors == []


EDITOR_CATCHES = [
    ({"gpu-platfrom:tenants": []}, "gpu-platfrom:tenants"),
    ({"gpu-platform:cluster": {"nmae": "x"}}, "nmae"),
    ({"gpu-platform:nodePools": [{"name": "gpu-a", "gpus": True}]}, "True"),
    ({"gpu-platform:tenants": [{"name": "a", "gpu": {"l4": {"nominal": "2"}}}]}, "'2'"),
]


@pytest.mark.parametrize(("config", "named"), EDITOR_CATCHES, ids=[row[1] for row in EDITOR_CATCHES])
def test_the_schema_flags_misspelt_keys_and_wrong_types(validator, config: dict, named: str) -> None:
    document = {"config": {"aws:region": "us-west-2", "gpu-platform:cluster": {"name": "x", "admins": ["a"]}, **config}}
    messages = [error.message for error in validator.iter_errors(document)]
    assert any(named in message for message in messages), messages


def test_a_secure_value_and_an_empty_optional_section_are_allowed(validator) -> None:
    document = {
        "config": {
            "aws:region": "us-west-2",
            "aws:profile": "ops",
            "gpu-platform:cluster": {"name": "gpu-dev", "admins": ["arn:aws:iam::111122223333:role/A"]},
            "gpu-platform:tenants": None,
            "gpu-platform:monitoring": {
                "receivers": [{"name": "oncall", "slackWebhookUrl": {"secure": "v1:abc:def"}, "slackChannel": "#a"}]
            },
        }
    }
    assert [error.message for error in validator.iter_errors(document)] == []
