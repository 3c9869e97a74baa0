"""The Kubernetes manifests never run two instances of a service at once, and restart one whose agent is down."""

from pathlib import Path

import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "ballast.yaml"


def test_deployments_recreate_and_restart_on_failed_health() -> None:
    deployments = [d for d in yaml.safe_load_all(MANIFESTS.read_text()) if d and d["kind"] == "Deployment"]
    assert len(deployments) == 3
    for deployment in deployments:
        assert deployment["spec"]["replicas"] == 1
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}, deployment["metadata"]["name"]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["livenessProbe"]["httpGet"]["path"] == "/health"
