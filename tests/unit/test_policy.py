"""The policy file (issue 30, feature 4): its rules called directly, and the topic reconciler's plan and status for a
spec that breaks one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from events import TopicSpec, conditions
from services.cli.changes import Outcome, Verdict, diff_topic, outcome, prune
from services.adapters.admin import PartitionInfo, TopicDescription
from services.domain.policy import Policy, PolicyError, check_spec, check_withdrawal, load_policy, refusals
from services.topic_reconciler import logic

POLICY = """
replicas: {min: 2, max: 5}
partitions: {max: 100}
minInsyncMargin: refuse
requiredConfigs: {cleanup.policy: null, compression.type: zstd}
forbiddenConfigs: [unclean.leader.election.enable]
namePattern: '^[a-z][a-z0-9.-]*$'
deletionProtection: ['^prod\\.']
"""


@pytest.fixture
def policy(tmp_path: Path) -> Policy:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return load_policy(path)


def spec(name: str = "orders", replicas: int = 3, partitions: int = 6, **config: str) -> TopicSpec:
    return TopicSpec(name=name, partitions=partitions, replicas=replicas,
                     config={"cleanup.policy": "delete", "compression.type": "zstd",
                             **{k.replace("_", "."): v for k, v in config.items()}})


def test_each_rule_is_named_in_what_it_refuses(policy: Policy) -> None:
    assert check_spec(policy, spec()) == []
    assert [v.rule for v in check_spec(policy, spec(replicas=1))] == ["replicas.min"]
    assert [v.rule for v in check_spec(policy, spec(replicas=6, partitions=101))] == ["replicas.max",
                                                                                      "partitions.max"]
    bare = TopicSpec(name="Orders", partitions=1, replicas=2, config={"unclean.leader.election.enable": "true"})
    assert [str(v) for v in check_spec(policy, bare)] == [
        "policy rule required-config:cleanup.policy: the spec must set cleanup.policy",
        "policy rule required-config:compression.type: the spec must set compression.type (to zstd)",
        "policy rule forbidden-config:unclean.leader.election.enable: the spec may not set "
        "unclean.leader.election.enable",
        "policy rule name-pattern: the name does not match ^[a-z][a-z0-9.-]*$"]
    assert [v.rule for v in check_spec(policy, spec(compression_type="lz4"))] == ["required-config:compression.type"]
    margin = check_spec(policy, spec(replicas=2, min_insync_replicas="2"))
    assert [(v.rule, v.refused) for v in margin] == [("min-insync-margin", True)]
    # Without a policy file: the margin only warns.
    assert [(v.rule, v.refused) for v in check_spec(load_policy(None), spec(replicas=2, min_insync_replicas="2"))] \
        == [("min-insync-margin", False)]
    assert check_withdrawal(policy, "prod.payments").rule == "deletion-protection"
    assert check_withdrawal(policy, "dev.payments") is None


def test_a_file_that_is_not_a_policy_says_why(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("replicas: {minimum: 2}\n")
    with pytest.raises(PolicyError, match="not a policy"):
        load_policy(path)
    path.write_text("namePattern: '(['\n")
    with pytest.raises(PolicyError, match="not a policy"):
        load_policy(path)
    with pytest.raises(PolicyError, match="cannot read the policy file"):
        load_policy(tmp_path / "missing.yaml")


def test_the_reconciler_refuses_a_spec_that_breaks_the_policy_and_says_which_rule(policy: Policy) -> None:
    actual = TopicDescription("orders", tuple(PartitionInfo(i, (1, 2, 3)) for i in range(6)))
    plan = logic.plan(spec(replicas=1), actual, None, policy=policy)
    assert plan.actions == [] and [c.type for c in plan.warnings] == [conditions.POLICY_VIOLATION]
    status = logic.build_status(name="orders", spec=spec(replicas=1), generation=2, actual=actual, change=None,
                                error=None, warnings=plan.warnings, previous=None, now=datetime.now(UTC))
    assert not status.ready and status.condition(conditions.READY).reason == "PolicyViolation"
    assert "policy rule replicas.min: replicas 1 is below the minimum 2" in status.condition(
        conditions.POLICY_VIOLATION).message
    assert outcome(spec(replicas=1), 2, status) == (
        Outcome.FAILED, "policy rule replicas.min: replicas 1 is below the minimum 2")
    assert logic.plan(None, actual, None, policy=policy).actions == [logic.DeleteTopic("orders")]
    protected = TopicDescription("prod.orders", actual.partitions)
    plan = logic.plan(None, protected, None, policy=policy)
    assert plan.actions == [] and "deletion-protection" in plan.warnings[0].message
    status = logic.build_status(name="prod.orders", spec=None, generation=3, actual=protected, change=None,
                                error=None, warnings=plan.warnings, previous=None, now=datetime.now(UTC))
    assert status.condition(conditions.READY).message.startswith("spec deleted; the topic is retained: policy rule "
                                                                 "deletion-protection")


def test_diff_and_prune_refuse_what_the_reconciler_would(policy: Policy) -> None:
    diff = diff_topic(spec(replicas=1), None, None, 3, check_spec(policy, spec(replicas=1)))
    assert diff.verdict is Verdict.REFUSED and not diff.publish
    assert diff.warnings == ["policy rule replicas.min: replicas 1 is below the minimum 2"]
    warned = diff_topic(spec(replicas=2, min_insync_replicas="2"), None, None, 3,
                        check_spec(load_policy(None), spec(replicas=2, min_insync_replicas="2")))
    assert warned.verdict is Verdict.CREATE and warned.warnings[-1].startswith("policy rule min-insync-margin")
    pruned = prune(["prod.orders", "dev.orders"], [], {}, policy)
    assert [(d.name, d.verdict) for d in pruned] == [("dev.orders", Verdict.WITHDRAW),
                                                     ("prod.orders", Verdict.REFUSED)]
    assert refusals(check_spec(policy, spec())) == []


def test_an_edited_policy_file_applies_without_a_restart_and_a_bad_edit_keeps_the_last_good_one(
        tmp_path: Path) -> None:
    from services.domain.policy import PolicyFile

    path = tmp_path / "policy.yaml"
    path.write_text("")
    errors: list[str] = []
    policy = PolicyFile(path, errors.append)
    assert policy.current() == Policy()
    path.write_text("replicas: {min: 2}\n")
    assert policy.current().replicas.min == 2
    path.write_text("replicas: {min: two}\n")
    assert policy.current().replicas.min == 2
    assert len(errors) == 1 and errors[0].endswith("the previous policy stays in force")
    path.write_text("replicas: {min: 3}\n")
    assert policy.current().replicas.min == 3
    path.write_text("replicas: [\n")
    with pytest.raises(PolicyError):
        PolicyFile(path, errors.append)  # at start: the service stops, saying why
