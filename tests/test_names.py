"""Names two modules must agree on come from one table: no tenant can take a controller's namespace."""

from __future__ import annotations

import pytest

from config import ConfigError
from config.namespaces import CONTROLLER_NAMESPACES, RESERVED_NAMESPACES

from .conftest import fixture_document, load, render_fixture

NAMESPACE = "kubernetes:core/v1:Namespace"


@pytest.mark.parametrize("namespace", sorted(RESERVED_NAMESPACES))
def test_no_tenant_may_take_a_namespace_the_platform_or_kubernetes_owns(namespace):
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][0]["name"] = namespace
    with pytest.raises(ConfigError) as raised:
        load(document)
    assert f"'{namespace}' is a namespace the platform or Kubernetes owns" in str(raised.value)


def test_every_namespace_the_platform_creates_for_a_controller_is_reserved(fixture_stack):
    tenants = {tenant.name for tenant in load(fixture_document(fixture_stack)).tenants}
    created = {r.inputs["metadata"]["name"] for r in render_fixture(fixture_stack).by_type(NAMESPACE)}
    assert created - tenants
    assert created - tenants <= CONTROLLER_NAMESPACES.keys()
