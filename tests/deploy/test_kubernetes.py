"""The Kubernetes example (docker/k8s/) against the Kubernetes API's own JSON schemas, offline,
and held to the same health checks and security settings as the compose stack."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from tests.deploy.helpers import REPO

K8S = REPO / "docker" / "k8s"
MANIFESTS = sorted(K8S.glob("*.yaml"))


def documents() -> list[tuple[str, dict]]:
    return [
        (f"{path.name}#{i}", doc)
        for path in MANIFESTS
        for i, doc in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        if doc
    ]


def by_kind_and_name() -> dict[tuple[str, str], dict]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in documents()}


def containers(kind: str, name: str) -> list[dict]:
    return by_kind_and_name()[(kind, name)]["spec"]["template"]["spec"]["containers"]


def test_there_are_manifests():
    assert {path.name for path in MANIFESTS} >= {"config.yaml", "migrate-job.yaml", "web.yaml", "worker.yaml"}


@pytest.mark.parametrize("name, doc", documents(), ids=[name for name, _ in documents()])
def test_each_document_matches_the_api_schema_strictly(name, doc):
    # strict: unknown fields (a misspelt probe, a misplaced key) are errors too
    kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def test_a_broken_manifest_is_caught():
    broken = by_kind_and_name()[("Deployment", "playground-web")]
    broken = {**broken, "spec": {**broken["spec"], "replicas": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, kubernetes_validate.latest_version(), strict=True)


def test_web_probes_are_the_apps_health_and_readiness_endpoints():
    web = containers("Deployment", "playground-web")[0]
    assert web["livenessProbe"]["httpGet"]["path"] == "/health"
    assert web["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert web["args"] == ["web"]


def test_workers_use_the_images_health_check():
    worker = containers("Deployment", "playground-worker")[0]
    assert worker["args"] == ["worker"]
    assert worker["livenessProbe"]["exec"]["command"] == ["python", "/usr/local/bin/playground-healthcheck"]
    assert "playground-healthcheck" in (REPO / "docker" / "Dockerfile").read_text()


@pytest.mark.parametrize(
    "kind, name", [("Deployment", "playground-web"), ("Deployment", "playground-worker"), ("Job", "playground-migrate")]
)
def test_pods_run_unprivileged_on_a_read_only_root(kind, name):
    spec = by_kind_and_name()[(kind, name)]["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] and spec["securityContext"]["runAsUser"] == 10001
    for container in spec["containers"]:
        assert container["securityContext"]["readOnlyRootFilesystem"]
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert {m["mountPath"] for m in container["volumeMounts"]} == {"/tmp", "/var/lib/playground"}
        sources = {next(iter(s.values()))["name"] for s in container["envFrom"]}
        assert sources == {"playground-config", "playground-secrets"}


def test_no_secret_values_in_the_folder():
    assert not any(doc["kind"] == "Secret" for _, doc in documents())
    for path in MANIFESTS:
        text = path.read_text(encoding="utf-8")
        assert "DJANGO_SECRET_KEY:" not in text and "postgresql://" not in text
