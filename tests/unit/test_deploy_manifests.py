"""The Kubernetes manifests (deploy/kubernetes) are valid against Kubernetes' own schemas, strictly (offline:
kubernetes-validate carries them), and run Ballast as the issue asks: every service, a standby beside each leased
one, rolls that never take the working pod away first, restarts on failed health, non-root on a read-only root
filesystem with writable volumes, resources, and the bus topics made by a Job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from services.cli.commands.stack import SERVICES
from services.cli.main import app

KUBERNETES = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
COMPOSE = KUBERNETES.parent / "compose.yaml"
POLICY = KUBERNETES.parent / "policy" / "policy.yaml"
KUBERNETES_VERSION = "1.37.0"


def documents() -> list[dict[str, Any]]:
    return [d for path in sorted(KUBERNETES.glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in documents() if d["kind"] == kind}


def pod(workload: dict[str, Any]) -> dict[str, Any]:
    return workload["spec"]["template"]["spec"]


@pytest.mark.parametrize("document", documents(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_every_manifest_is_valid_against_the_kubernetes_schemas_strictly(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_a_misspelt_field_is_refused_by_the_validation() -> None:
    deployment = by_kind("Deployment")["ballast-rebalancer"]
    pod(deployment)["containers"][0]["livenesProbe"] = pod(deployment)["containers"][0].pop("livenessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="livenesProbe"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_every_service_runs_with_a_standby_or_shards_and_rolls_safely() -> None:
    deployments = by_kind("Deployment")
    services = [s for s in SERVICES if s not in ("cluster-sim", "spark-aggregates")]  # no simulator in production
    for service in services:
        deployment = deployments[f"ballast-{service}"]
        (container,) = pod(deployment)["containers"]
        assert container["args"] == ["run", service]
        assert deployment["spec"]["replicas"] == (3 if service == "topic-reconciler" else 2)
        strategy = deployment["spec"]["strategy"]
        assert strategy["type"] == "RollingUpdate" and strategy["rollingUpdate"]["maxUnavailable"] == 0
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"] == {"path": "/health", "port": "health"}
    spark = deployments["ballast-spark-aggregates"]
    assert pod(spark)["containers"][0]["args"] == ["run", "spark-aggregates"]
    assert spark["spec"]["replicas"] == 1 and spark["spec"]["strategy"] == {"type": "Recreate"}
    assert set(deployments) == {f"ballast-{s}" for s in services} | {"ballast-spark-aggregates", "ballast-dashboard"}
    assert by_kind("Service")["ballast-dashboard"]["spec"]["type"] == "ClusterIP"


def test_a_job_makes_the_bus_topics_with_a_command_the_cli_has() -> None:
    (container,) = pod(by_kind("Job")["ballast-init-bus"])["containers"]
    assert container["args"] == ["init-bus"]
    commands = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands}
    assert {"init-bus", "run", "dashboard"} <= commands


def test_every_pod_is_non_root_read_only_limited_and_writes_only_to_its_volumes() -> None:
    config = by_kind("ConfigMap")["ballast"]["data"]
    writable = [Path(config[key]) for key in ("BALLAST_DATA_DIR", "BALLAST_STATE_DIR", "BALLAST_SPARK__CHECKPOINT_LOCATION")]
    for workload in [*by_kind("Deployment").values(), *by_kind("Job").values()]:
        spec = pod(workload)
        assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0
        assert spec["automountServiceAccountToken"] is False and not spec.get("hostNetwork")
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True and context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]
            assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
            assert container["envFrom"] == [{"configMapRef": {"name": "ballast"}}]
            mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
            volumes = {v["name"]: v for v in spec.get("volumes", [])}
            for path, mount in mounts.items():
                kind = volumes[mount["name"]]
                assert ("emptyDir" in kind) != bool(mount.get("readOnly")), path
            if workload["kind"] == "Deployment" and container["name"] != "dashboard":
                assert "/tmp" in mounts and all(any(p.is_relative_to(m) for m in mounts) for p in writable)


def test_cruise_control_credentials_and_ca_come_from_the_secret_as_files() -> None:
    config = by_kind("ConfigMap")["ballast"]["data"]
    secret = by_kind("Secret")["ballast-cruise-control"]["stringData"]
    mounted = Path(config["BALLAST_CRUISE_CONTROL__CA_FILE"]).parent
    for key, name in (("USERNAME_FILE", "username"), ("PASSWORD_FILE", "password"), ("CA_FILE", "ca.crt")):
        assert config[f"BALLAST_CRUISE_CONTROL__{key}"] == str(mounted / name) and name in secret
    for name, deployment in by_kind("Deployment").items():
        if name in ("ballast-spark-aggregates",):
            continue  # reads only the bus
        (container,) = pod(deployment)["containers"]
        assert {"name": "cruise-control", "mountPath": str(mounted), "readOnly": True} in container["volumeMounts"]


def test_the_compose_stack_and_the_manifests_name_the_images_make_builds() -> None:
    """The tags are written out in deploy/; the Makefile derives them from pyproject.toml's version and the Kafka
    runtime's pom: a version raised in one place alone would leave the stack on an old image, or on none."""
    import re
    import tomllib

    root = KUBERNETES.parents[1]
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    kafka = re.search(r"<kafka.version>(.+)</kafka.version>", (root / "jvm/kafka-runtime/pom.xml").read_text())[1]
    compose = yaml.safe_load((root / "deploy" / "compose.yaml").read_text())
    assert {s["image"] for s in compose["services"].values()} == {
        f"localhost/ballast:{version}", f"localhost/ballast-spark:{version}",
        f"localhost/ballast-prometheus:{version}", f"localhost/ballast-kafka:{kafka}"}
    assert {c["image"] for d in documents() if d["kind"] in ("Deployment", "Job")
            for c in pod(d)["containers"]} == {f"ballast:{version}", f"ballast-spark:{version}"}


def test_the_topic_reconciler_holds_specs_to_the_shipped_policy_in_both_deployments() -> None:
    """Issue 56, defect 7: neither deployment gave the reconciler a policy file, so the server-side policy was off in
    both. Each names the shipped default (deploy/policy) in BALLAST_POLICY_FILE and mounts it read-only, as a directory
    (a file or subPath mount would not see an edit that replaces the file)."""
    from services.domain.policy import Policy, load_policy

    shipped = load_policy(POLICY)
    assert shipped.replicas.min == 2 and "unclean.leader.election.enable" in shipped.forbidden_configs

    deployment = by_kind("Deployment")["ballast-topic-reconciler"]
    (container,) = pod(deployment)["containers"]
    policy_file = Path({e["name"]: e["value"] for e in container["env"]}["BALLAST_POLICY_FILE"])
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == str(policy_file.parent)]
    assert mount["readOnly"] is True and "subPath" not in mount
    volume = {v["name"]: v for v in pod(deployment)["volumes"]}[mount["name"]]
    configmap = by_kind("ConfigMap")[volume["configMap"]["name"]]
    assert Policy.model_validate(yaml.safe_load(configmap["data"][policy_file.name])) == shipped

    reconciler = yaml.safe_load(COMPOSE.read_text())["services"]["topic-reconciler"]
    policy_file = Path(reconciler["environment"]["BALLAST_POLICY_FILE"])
    binds = [v.split(":") for v in reconciler["volumes"] if v.startswith(("./", "/"))]
    assert [(str((COMPOSE.parent / source).resolve()), target, mode) for source, target, mode in binds] == [
        (str(POLICY.parent), str(policy_file.parent), "ro")]
    assert (POLICY.parent / policy_file.name).is_file()


def test_every_compose_container_has_a_read_only_root_filesystem() -> None:
    """Issue 56, defect 7: the Kafka controller and brokers had a writable root filesystem. Each writes only to its
    volume and a tmpfs. (The Kubernetes manifests run no Kafka: every container of theirs is read-only above.)"""
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert {name for name, service in services.items() if service.get("read_only") is not True} == set()
    kafka = {name: s for name, s in services.items() if s["image"].startswith("localhost/ballast-kafka:")}
    assert set(kafka) == {"controller", "kafka-1", "kafka-2", "kafka-3"}
    for name, node in kafka.items():
        assert node["tmpfs"] == ["/tmp"] and node["volumes"] == [f"{name}:/var/lib/kafka"], name
