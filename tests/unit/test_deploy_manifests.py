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
# Where the compose stack's secrets are mounted from (`make compose-up` sets it; the default for a bare podman-compose).
COMPOSE_SECRETS = "${BALLAST_COMPOSE_SECRETS:-../.ballast/compose/ballast}"
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
            assert container["envFrom"] == [{"configMapRef": {"name": "ballast"}},
                                            {"configMapRef": {"name": "ballast-kafka-security", "optional": True}}]
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
    policy_file = Path({e["name"]: e.get("value") for e in container["env"]}["BALLAST_POLICY_FILE"])
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
        assert node["tmpfs"] == ["/tmp"] and node["volumes"] == [
            f"{name}:/var/lib/kafka", f"{COMPOSE_SECRETS}/kafka:/etc/ballast/kafka:ro"], name


def test_the_compose_stack_is_secured_with_its_secrets_as_mounted_files_only() -> None:
    """Issue 53: the compose stack runs SASL_SSL with SCRAM-SHA-512 and the StandardAuthorizer. Every container that
    talks to Kafka mounts its secrets read-only (the nodes the kafka directory, Ballast's the clients one), and every
    secret setting names a file there: no password, JAAS line or key is written in the file or its environment."""
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    for name, service in services.items():
        env = service.get("environment", {})
        assert not any(key.endswith(("PASSWORD", "JAAS_CONFIG")) or "password=" in str(value).lower()
                       for key, value in env.items()), name
        if name == "prometheus":
            continue
        kind = "kafka" if service["image"].startswith("localhost/ballast-kafka:") else "clients"
        assert f"{COMPOSE_SECRETS}/{kind}:/etc/ballast/kafka:ro" in service["volumes"], name
        if kind == "kafka":
            assert env["KAFKA_PROPERTIES_FILE"] == "/etc/ballast/kafka/node.properties"
            assert env["KAFKA_CFG_AUTHORIZER_CLASS_NAME"].endswith("StandardAuthorizer")
            assert "PLAINTEXT" not in env["KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP"].replace("SASL_PLAINTEXT", "")
        else:
            for section in ("BUS", "CLUSTER_ADMIN"):
                assert env[f"BALLAST_{section}__SECURITY_PROTOCOL"] == "SASL_SSL"
                assert env[f"BALLAST_{section}__SASL_MECHANISM"] == "SCRAM-SHA-512"
                assert env[f"BALLAST_{section}__SASL_PASSWORD_FILE"] == "/etc/ballast/kafka/ballast.password"
                assert env[f"BALLAST_{section}__SSL_CAFILE"] == "/etc/ballast/kafka/ca.crt"


def workloads() -> list[dict[str, Any]]:
    return [*by_kind("Deployment").values(), *by_kind("Job").values()]


def mounted_secret(workload: dict[str, Any], container: dict[str, Any], path: Path) -> tuple[str, str] | None:
    """The Secret and its key that ``path`` is in the container, where a Secret volume mounted there holds it."""
    volumes = {v["name"]: v for v in pod(workload).get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        if path.parent == Path(mount["mountPath"]) and "secret" in volumes[mount["name"]]:
            return volumes[mount["name"]]["secret"]["secretName"], path.name
    return None


def test_a_secured_kafkas_credentials_and_ca_come_from_a_secret_mounted_in_every_pod_and_are_optional() -> None:
    """Issue 53: the services take the bus's and the managed cluster's SASL credentials and CA from a Secret,
    mounted as files, never as literals; without kafka-security.yaml applied (its ConfigMap and Secret are optional
    in every pod), the settings stay ballast.yaml's, PLAINTEXT."""
    security = by_kind("ConfigMap")["ballast-kafka-security"]["data"]
    secrets = by_kind("Secret")
    files = {key: Path(value) for key, value in security.items() if key.endswith(("_FILE", "_CAFILE"))}
    assert set(files) == {f"BALLAST_{section}__{key}" for section in ("BUS", "CLUSTER_ADMIN")
                          for key in ("SASL_PASSWORD_FILE", "SSL_CAFILE")}
    for workload in workloads():
        (container,) = pod(workload)["containers"]
        assert {"configMapRef": {"name": "ballast-kafka-security", "optional": True}} in container["envFrom"]
        volumes = {v["name"]: v for v in pod(workload)["volumes"]}
        for key, path in files.items():
            secret, item = mounted_secret(workload, container, path) or (None, None)
            assert secret is not None, (workload["metadata"]["name"], key)
            assert item in secrets[secret]["stringData"], (secret, item)
            (volume,) = [v for v in volumes.values() if v.get("secret", {}).get("secretName") == secret]
            assert volume["secret"]["optional"] is True

    base = by_kind("ConfigMap")["ballast"]["data"]
    assert not any("SECURITY_PROTOCOL" in key or "SASL" in key for key in base)
    secured = settings_from({**base, **security})
    assert secured.bus.security_protocol == secured.cluster_admin.security_protocol == "SASL_SSL"
    assert secured.bus.sasl_password is None
    assert secured.bus.sasl_password_file == files["BALLAST_BUS__SASL_PASSWORD_FILE"]
    assert settings_from(base).bus.security_protocol == "PLAINTEXT"


def settings_from(environment: dict[str, str]) -> Any:
    """Ballast's settings as a pod with exactly this environment reads them (but Cruise Control's, whose files
    are read as the settings are)."""
    import os
    from unittest import mock

    from services.common.settings import Settings

    clean = {k: v for k, v in os.environ.items() if not k.startswith("BALLAST_")}
    ours = {k: v for k, v in environment.items() if not k.startswith("BALLAST_CRUISE_CONTROL__")}
    with mock.patch.dict(os.environ, {**clean, **ours}, clear=True):
        return Settings()


def test_no_password_is_written_in_a_setting_and_none_outside_the_secrets() -> None:
    """A password is a Secret's, mounted as a file: no ConfigMap or container sets a *PASSWORD setting itself, and no
    Secret's value is written anywhere else in the manifests."""
    passwords = {value.strip() for secret in by_kind("Secret").values()
                 for key, value in secret["stringData"].items() if "password" in key.lower()}
    assert passwords
    settings = [*(item for d in by_kind("ConfigMap").values() for item in d["data"].items()),
                *((e["name"], e.get("value", "")) for w in workloads() for c in pod(w)["containers"]
                  for e in c.get("env", []))]
    for key, value in settings:
        assert not key.upper().endswith(("PASSWORD", "JAAS_CONFIG")), key
        assert not any(password in value for password in passwords), key
    for document in documents():
        if document["kind"] != "Secret":
            dumped = yaml.safe_dump(document)
            assert not any(password in dumped for password in passwords), document["metadata"]["name"]


def test_the_tenants_file_comes_from_its_configmap_where_it_is_read_and_is_optional(tmp_path: Path) -> None:
    """Issue 53: the tenants file (BALLAST_TENANTS_FILE) reaches the topic reconciler (the tenant gate) and the Job
    that makes every tenant's topics from the ConfigMap ballast-tenants, mounted as a directory; without it applied,
    the setting is unset and there are no tenants."""
    from services.domain.tenants import load_tenants

    configmap = by_kind("ConfigMap")["ballast-tenants"]["data"]
    path = Path(configmap["BALLAST_TENANTS_FILE"])
    readers = {"ballast-topic-reconciler": by_kind("Deployment")["ballast-topic-reconciler"],
               "ballast-init-bus": by_kind("Job")["ballast-init-bus"]}
    for name, workload in readers.items():
        (container,) = pod(workload)["containers"]
        (setting,) = [e for e in container["env"] if e["name"] == "BALLAST_TENANTS_FILE"]
        assert setting["valueFrom"]["configMapKeyRef"] == {
            "name": "ballast-tenants", "key": "BALLAST_TENANTS_FILE", "optional": True}, name
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == str(path.parent)]
        assert mount["readOnly"] is True and "subPath" not in mount
        volume = {v["name"]: v for v in pod(workload)["volumes"]}[mount["name"]]["configMap"]
        assert volume["name"] == "ballast-tenants" and volume["optional"] is True
        assert volume["items"] == [{"key": path.name, "path": path.name}]

    written = tmp_path / path.name
    written.write_text(configmap[path.name])
    assert [t.name for t in load_tenants(written).tenants] == ["payments"]
