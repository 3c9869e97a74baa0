"""What the job's Spark session is given (spark.session_conf): the master, the driver's addresses, the executors'
Python, the jars, and whose word wins among a Ballast setting, spark-submit and Ballast's defaults."""

from __future__ import annotations

import pytest

from services.common.settings import SparkSettings
from spark.session_conf import is_local, plan_session

CLUSTER = "spark://10.0.0.1:7077"


def test_ballast_run_defaults_to_a_local_master_kept_on_the_loopback_address() -> None:
    plan = plan_session(SparkSettings(), None, local_python="/tmp/spark-python")
    assert (plan.master, plan.set_master, plan.local, plan.ship_project) == ("local[2]", True, True, False)
    assert plan.conf["spark.driver.host"] == plan.conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert plan.conf["spark.ui.enabled"] == "false"
    assert plan.worker_python == "/tmp/spark-python"
    assert plan.warnings == []


def test_a_local_master_stays_on_the_loopback_address_whatever_the_settings_say() -> None:
    settings = SparkSettings(driver_host="10.0.0.2", driver_bind_address="0.0.0.0")
    conf = plan_session(settings, None).conf
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"


def test_a_cluster_master_leaves_the_driver_addresses_to_spark_unless_they_are_set() -> None:
    plan = plan_session(SparkSettings(master=CLUSTER), None, local_python="/tmp/spark-python")
    assert "spark.driver.host" not in plan.conf and "spark.driver.bindAddress" not in plan.conf
    assert "spark.ui.enabled" not in plan.conf  # a cluster's job keeps its UI
    assert plan.worker_python is None  # Spark's own default on the workers, not this host's interpreter
    assert plan.ship_project

    conf = plan_session(SparkSettings(master=CLUSTER, driver_host="10.0.0.2", driver_bind_address="0.0.0.0"),
                        None).conf
    assert (conf["spark.driver.host"], conf["spark.driver.bindAddress"]) == ("10.0.0.2", "0.0.0.0")


def test_spark_submits_master_wins_over_the_default_and_a_setting_wins_over_spark_submit() -> None:
    submitted = {"spark.master": CLUSTER, "spark.submit.pyFiles": "/work/ballast-0.1.0-abc.zip"}
    plan = plan_session(SparkSettings(), submitted)
    assert (plan.master, plan.set_master, plan.ship_project) == (CLUSTER, False, False)
    assert "spark.driver.host" not in plan.conf

    plan = plan_session(SparkSettings(master="local[1]"), submitted)
    assert (plan.master, plan.set_master) == ("local[1]", True)


def test_spark_submits_own_properties_are_not_overridden_by_ballasts_defaults() -> None:
    submitted = {"spark.master": CLUSTER, "spark.sql.shuffle.partitions": "8", "spark.jars": "/opt/kafka.jar",
                 "spark.submit.pyFiles": "ballast-0.1.0-abc.zip"}
    conf = plan_session(SparkSettings(java_options="-Xmx1g"), submitted, jars=["/x/spark-sql-kafka.jar"],
                        driver_java_options="-Xss16m").conf
    assert "spark.sql.shuffle.partitions" not in conf  # spark-submit's 8 stays
    # Its JVM is running: the jars and the driver's options are spark-submit's to give.
    assert "spark.jars" not in conf and "spark.driver.extraJavaOptions" not in conf
    assert conf["spark.sql.session.timeZone"] == "UTC"  # the job's windows are UTC, always


def test_ballast_run_puts_its_jars_and_driver_options_on_the_jvm_it_starts() -> None:
    conf = plan_session(SparkSettings(), None, jars=["/a.jar", "/b.jar"], driver_java_options="-Xss16m").conf
    assert conf["spark.jars"] == "/a.jar,/b.jar"
    assert conf["spark.driver.extraJavaOptions"] == "-Xss16m"
    assert conf["spark.sql.shuffle.partitions"] == "2"


def test_the_conf_setting_wins_over_everything_else() -> None:
    settings = SparkSettings(master=CLUSTER, conf={"spark.sql.shuffle.partitions": "16", "spark.driver.host": "h"})
    conf = plan_session(settings, {"spark.sql.shuffle.partitions": "8"}).conf
    assert (conf["spark.sql.shuffle.partitions"], conf["spark.driver.host"]) == ("16", "h")


def test_the_executors_python_is_the_setting_then_pyspark_python_then_the_local_default() -> None:
    assert plan_session(SparkSettings(worker_python="/opt/py/bin/python"), None,
                        local_python="/tmp/x").worker_python == "/opt/py/bin/python"
    # A user's PYSPARK_PYTHON stays as it is.
    assert plan_session(SparkSettings(), None, local_python="/tmp/x",
                        environ={"PYSPARK_PYTHON": "/usr/bin/python3"}).worker_python is None


@pytest.mark.parametrize("location, warned", [(".ballast/spark/checkpoint", True), ("/var/lib/ballast/cp", True),
                                              ("file:///mnt/shared/cp", False), ("hdfs://nn:8020/ballast/cp", False),
                                              ("s3a://bucket/ballast/cp", False)])
def test_a_cluster_job_is_warned_when_its_checkpoint_is_on_the_drivers_own_file_system(location: str,
                                                                                        warned: bool) -> None:
    plan = plan_session(SparkSettings(master=CLUSTER, checkpoint_location=location), None)
    assert any("checkpoint" in w for w in plan.warnings) is warned
    assert plan_session(SparkSettings(checkpoint_location=location), None).warnings == []  # local: its own disk


def test_spark_submit_without_ballasts_archive_is_warned_that_executors_need_ballast_installed() -> None:
    plan = plan_session(SparkSettings(checkpoint_location="file:///shared/cp"), {"spark.master": CLUSTER})
    assert ["ballast spark package" in w for w in plan.warnings] == [True]
    assert plan_session(SparkSettings(), {"spark.master": "local[*]"}).warnings == []


@pytest.mark.parametrize("master, local", [("local", True), ("local[2]", True), ("local[*]", True),
                                           ("local-cluster[2,1,1024]", False), (CLUSTER, False),
                                           ("yarn", False), ("k8s://https://api:6443", False)])
def test_which_masters_are_local(master: str, local: bool) -> None:
    assert is_local(master) is local


def test_empty_settings_from_the_environment_mean_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.common.settings import Settings

    monkeypatch.setenv("BALLAST_SPARK__MASTER", "")
    monkeypatch.setenv("BALLAST_SPARK__CONF", '{"spark.executor.memory": "2g"}')
    settings = Settings().spark
    assert settings.master is None and settings.conf == {"spark.executor.memory": "2g"}


def test_the_kafka_source_without_its_jars_under_spark_submit_says_which_flag_brings_them() -> None:
    from types import SimpleNamespace

    from spark.aggregates import KAFKA_SOURCE_CLASS, kafka_source_missing

    def session(loadable: set[str]) -> SimpleNamespace:
        utils = SimpleNamespace(classIsLoadable=lambda name: name in loadable)
        jvm = SimpleNamespace(org=SimpleNamespace(apache=SimpleNamespace(spark=SimpleNamespace(
            util=SimpleNamespace(Utils=utils)))))
        return SimpleNamespace(sparkContext=SimpleNamespace(_jvm=jvm))

    assert kafka_source_missing(session({KAFKA_SOURCE_CLASS})) is None
    assert '--jars "$(ballast spark jars)"' in kafka_source_missing(session(set()))
