"""How each Helm release is installed and upgraded: an explicit timeout, atomic, cleanup on failure.

pulumi-kubernetes' provider/pkg/provider/helm_release.go (v4.32.0; SDK 4.34.2's Release args match):
without `timeout` every install, upgrade and uninstall gets `defaultTimeoutSeconds` (300 s); `atomic`
uninstalls a failed install (and rolls a failed upgrade back) instead of leaving a release with a
failed status for the next `up` to upgrade; `cleanupOnFail` deletes what a failed upgrade created.
`skipAwait` would make Helm not wait at all, so no timeout or atomic rollback could ever trigger.
"""

from __future__ import annotations

from config.versions import CHARTS, HELM_INSTALL
from offline.helm_values import chart_key

from .recorded import releases

# pulumi-kubernetes' default, which no release may fall back to silently.
PROVIDER_DEFAULT_TIMEOUT_SECONDS = 300


def test_every_pinned_chart_has_install_options():
    assert set(HELM_INSTALL) == set(CHARTS)


def test_every_release_sets_its_charts_timeout_atomic_and_cleanup_on_fail(recorded):
    for name, release in releases(recorded).items():
        key = chart_key(release.inputs["chart"])
        assert key is not None, name
        install = HELM_INSTALL[key]
        inputs = release.inputs
        assert (inputs.get("timeout"), inputs.get("atomic"), inputs.get("cleanupOnFail")) == (
            install.timeout_seconds, install.atomic, install.cleanup_on_fail
        ), name


def test_every_release_is_awaited_so_its_timeout_and_atomic_take_effect(recorded):
    for name, release in releases(recorded).items():
        assert not release.inputs.get("skipAwait"), name


def test_releases_that_start_pods_allow_more_than_the_providers_default():
    # Each pulls images onto fresh system nodes and waits for readiness (webhooks, API services).
    for key, install in HELM_INSTALL.items():
        if key in ("karpenter-crd", "prometheus-operator-crds"):
            assert install.timeout_seconds >= PROVIDER_DEFAULT_TIMEOUT_SECONDS, key
        else:
            assert install.timeout_seconds > PROVIDER_DEFAULT_TIMEOUT_SECONDS, key
