"""Platform namespaces' NetworkPolicies: who may connect to what, evaluated on the multi-pool render."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from components.platform_network import ACCESS
from config import namespaces
from models.kubernetes.networkpolicy import Endpoint, connection_allowed

from .conftest import render_fixture
from .recorded import kubernetes_objects

# multi-pool's VPC is 10.30.0.0/16; pods and the EKS control plane's ENIs take addresses from it.
TENANT_POD = Endpoint("data-science", "10.30.64.10", {"app": "notebook"}, {"gpu-platform/tenant": "data-science"})
OTHER_ADD_ON = Endpoint("default", "10.30.64.11", {"app": "anything"})
API_SERVER_ENI = "10.30.96.5"
PROMETHEUS, ALERTMANAGER, GRAFANA = 9090, 9093, 3000


@functools.cache
def objects() -> tuple[dict[str, Any], ...]:
    return tuple(r.inputs for r in kubernetes_objects(render_fixture("multi-pool")))


def pod_in(namespace: str, labels: dict[str, str] | None = None) -> Endpoint:
    return Endpoint(namespace, "10.30.32.20", labels or {"app.kubernetes.io/name": "component"})


def test_every_platform_namespace_of_the_stack_has_its_ingress_policy():
    protected = {
        o["metadata"]["namespace"]
        for o in objects()
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "platform-ingress"
    }
    # multi-pool allocates no GPU through DRA, so the DRA driver's namespace does not exist there.
    assert protected == set(ACCESS) - {namespaces.DRA_DRIVER}


@pytest.mark.parametrize("port", [PROMETHEUS, ALERTMANAGER, GRAFANA])
def test_no_pod_outside_the_platform_reaches_prometheus_alertmanager_or_grafana(port):
    monitoring = pod_in(namespaces.MONITORING)
    for source in (TENANT_POD, OTHER_ADD_ON):
        assert not connection_allowed(objects(), source, monitoring, port)


def test_grafana_and_alertmanager_reach_prometheus_and_keda_and_opencost_query_it():
    prometheus = pod_in(namespaces.MONITORING, {"app.kubernetes.io/name": "prometheus"})
    assert connection_allowed(
        objects(), pod_in(namespaces.MONITORING, {"app.kubernetes.io/name": "grafana"}), prometheus, PROMETHEUS
    )
    assert connection_allowed(objects(), pod_in(namespaces.KEDA), prometheus, PROMETHEUS)
    assert connection_allowed(objects(), pod_in(namespaces.OPENCOST), prometheus, PROMETHEUS)
    assert not connection_allowed(objects(), pod_in(namespaces.KEDA), prometheus, ALERTMANAGER)


@pytest.mark.parametrize("namespace", sorted(set(ACCESS) - {namespaces.DRA_DRIVER, namespaces.MONITORING}))
def test_prometheus_scrapes_every_platform_namespace(namespace):
    assert connection_allowed(objects(), pod_in(namespaces.MONITORING), pod_in(namespace), 8080)


@pytest.mark.parametrize("namespace", sorted(set(ACCESS) - {namespaces.DRA_DRIVER}))
def test_the_api_server_reaches_webhooks_and_aggregated_apis_and_nothing_else(namespace):
    api_server = Endpoint("", API_SERVER_ENI)
    for port in ACCESS[namespace].api_server_ports:
        assert connection_allowed(objects(), api_server, pod_in(namespace), port)
    assert not connection_allowed(objects(), api_server, pod_in(namespace), 8080)


def test_a_platform_namespace_talks_to_itself():
    for namespace in sorted(set(ACCESS) - {namespaces.DRA_DRIVER}):
        assert connection_allowed(objects(), pod_in(namespace), pod_in(namespace), 12345)
