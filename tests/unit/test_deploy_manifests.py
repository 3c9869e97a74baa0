"""The Kubernetes manifests run a standby beside each service (one works at a time: the lease; the topic
reconciler's pods share its shards), roll without ever taking the running one away first, and restart a pod whose
agent is down."""

from pathlib import Path

import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "ballast.yaml"


def test_deployments_keep_a_standby_roll_safely_and_restart_on_failed_health() -> None:
    deployments = [d for d in yaml.safe_load_all(MANIFESTS.read_text()) if d and d["kind"] == "Deployment"]
    assert len(deployments) == 3
    for deployment in deployments:
        sharded = deployment["metadata"]["name"] == "ballast-topic-reconciler"
        assert deployment["spec"]["replicas"] == (3 if sharded else 2)
        strategy = deployment["spec"]["strategy"]
        assert strategy["type"] == "RollingUpdate" and strategy["rollingUpdate"]["maxUnavailable"] == 0
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["livenessProbe"]["httpGet"]["path"] == "/health"
