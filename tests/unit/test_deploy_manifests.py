"""The Kubernetes manifests run a standby beside each service (one works at a time: the lease), roll without ever
taking the running one away first, and restart a pod whose agent is down."""

from pathlib import Path

import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "ballast.yaml"


def test_deployments_keep_a_standby_roll_safely_and_restart_on_failed_health() -> None:
    deployments = [d for d in yaml.safe_load_all(MANIFESTS.read_text()) if d and d["kind"] == "Deployment"]
    assert len(deployments) == 3
    for deployment in deployments:
        assert deployment["spec"]["replicas"] == 2
        strategy = deployment["spec"]["strategy"]
        assert strategy["type"] == "RollingUpdate" and strategy["rollingUpdate"]["maxUnavailable"] == 0
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["livenessProbe"]["httpGet"]["path"] == "/health"
