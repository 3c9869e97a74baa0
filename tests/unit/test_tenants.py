"""The tenants file and its rules (issue 53): who owns which names, and what a tenant's spec may ask for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from events import TopicSpec, TopicSpecDeleted
from services.cli.main import app
from services.domain.tenants import (Claim, Tenants, TenantsError, check_adoption, check_owner, check_quota, decide,
                                     load_tenants, may_rebalance, partitions_of, schema)

FILE = """\
admins: [User:platform]
tenants:
  - name: payments
    principal: User:payments
    topics: {prefixes: ["payments.", "pay-"]}
    quota:
      partitionsPerTopic: 24
      partitions: 60
      replicas: {min: 3, max: 4}
      retentionMs: {max: 604800000}
      allowedConfigs: [cleanup.policy, retention.ms, min.insync.replicas]
      forbiddenConfigs: [unclean.leader.election.enable]
  - name: search
    principal: User:search
    topics: {pattern: '^search(-[a-z]+)?\\.'}
    rebalances: true
"""


@pytest.fixture
def tenants(tmp_path: Path) -> Tenants:
    path = tmp_path / "tenants.yaml"
    path.write_text(FILE)
    return load_tenants(path)


def spec(name: str, partitions: int = 6, replicas: int = 3, **config: str) -> TopicSpec:
    """A spec within payments' retention bound unless ``config`` says otherwise (a bounded value is always given)."""
    return TopicSpec(name=name, partitions=partitions, replicas=replicas,
                     config={"retention.ms": "86400000", **config})


def test_a_tenant_owns_the_names_of_its_prefixes_or_pattern(tenants: Tenants) -> None:
    payments, search = tenants.named("payments"), tenants.named("search")
    assert check_owner(payments, "payments.orders", None) is None
    assert check_owner(payments, "pay-refunds", None) is None
    assert check_owner(search, "search-eu.clicks", None) is None
    refused = check_owner(payments, "search.clicks", None)
    assert refused is not None and refused.rule == "owner"
    assert str(refused) == ("policy rule owner: 'search.clicks' is not among the names of tenant 'payments' "
                            "(payments.*, pay-*)")
    assert check_owner(search, "search.clicks", "search") is None


def test_a_name_claimed_first_stays_its_claimants(tenants: Tenants) -> None:
    # Patterns can overlap where prefixes cannot: the tenant whose spec claimed the name first keeps it.
    wide = tenants.model_copy(deep=True)
    wide.tenants[0].topics.pattern = "^search-pay\\."
    refused = check_owner(wide.tenants[0], "search-pay.x", owner="search")
    assert refused is not None and "is owned by tenant 'search', which claimed the name first" in refused.message


def test_quotas_refuse_what_is_beyond_them_each_by_its_rule(tenants: Tenants) -> None:
    payments = tenants.named("payments")
    assert check_quota(payments, spec("payments.orders", 24, 3, **{"retention.ms": "86400000"}), 36) == []
    rules = {v.rule for v in check_quota(payments, spec("payments.orders", 30, 5, **{
        "retention.ms": "-1", "unclean.leader.election.enable": "true", "segment.bytes": "1048576"}), 40)}
    assert rules == {"quota.partitionsPerTopic", "quota.partitions", "quota.replicas.max", "quota.retentionMs.max",
                     "quota.forbiddenConfigs:unclean.leader.election.enable",
                     "quota.allowedConfigs:segment.bytes"}
    low = check_quota(payments, spec("payments.orders", 6, 2), 0)
    assert [str(v) for v in low] == ["policy rule quota.replicas.min: replicas 2 is below the tenant's minimum 3"]
    # A count left to the cluster would go uncounted: a tenant with a partitions quota gives it.
    unsaid = {v.rule: v.message for v in check_quota(payments, TopicSpec(name="payments.x"), 0)}
    assert "the cluster's default is not counted" in unsaid["quota.partitions"]
    # So would a bounded value left to the cluster's default (retention.bytes' is -1, no limit): it is given too.
    assert set(unsaid) == {"quota.partitions", "quota.replicas", "quota.retentionMs"}
    assert unsaid["quota.retentionMs"] == ("tenant 'payments' has bounds on retention.ms: its specs give it (the "
                                           "cluster's default is not checked against them)")
    assert check_quota(tenants.named("search"), TopicSpec(name="search.x"), 0) == []


def test_the_partitions_counted_are_the_tenants_other_topics() -> None:
    tenants = Tenants.model_validate({"tenants": [{"name": "a", "principal": "User:a", "topics": {"prefixes": ["a."]}}]})
    counts = {"a.one": 6, "a.two": 12, "b.other": 50}
    assert partitions_of(tenants.tenants[0], counts, but="a.two") == 6


def test_an_existing_topic_is_adopted_only_by_its_owner_by_name(tenants: Tenants) -> None:
    payments = tenants.named("payments")
    adopting = spec("search.clicks").model_copy(update={"adopt": True})
    assert check_adoption(payments, adopting, existing=True) is not None
    assert check_adoption(payments, adopting.model_copy(update={"name": "payments.old"}), existing=True) is None


def test_rebalances_come_from_admins_and_the_tenants_allowed(tenants: Tenants) -> None:
    assert may_rebalance(tenants, "User:platform")
    assert may_rebalance(tenants, "User:search")
    assert not may_rebalance(tenants, "User:payments")
    assert not may_rebalance(tenants, "User:stranger")


@pytest.mark.parametrize("text, problem", [
    ("tenants: [{name: a, principal: User:a, topics: {prefixes: [x.]}}, "
     "{name: b, principal: User:b, topics: {prefixes: [x.y]}}]", "both own the names that begin with 'x.y'"),
    ("tenants: [{name: a, principal: User:a, topics: {}}]", "by prefixes or by a pattern"),
    ("tenants: [{name: A, principal: User:a, topics: {prefixes: [a.]}}]", "invalid tenant name 'A'"),
    ("tenants: [{name: a, principal: a, topics: {prefixes: [a.]}}]", "Kafka's form is TYPE:NAME"),
    ("tenants: [{name: a, principal: User:a, topics: {prefixes: [a.]}, quota: {partitons: 3}}]", "partitons"),
    ("tenants: [{name: a, principal: User:a, topics: {prefixes: [a.]}}, "
     "{name: a, principal: User:b, topics: {prefixes: [b.]}}]", "two tenants have the name 'a'"),
])
def test_a_file_that_is_not_a_tenants_file_is_refused_with_why(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text(text)
    with pytest.raises(TenantsError, match=problem):
        load_tenants(path)


def test_the_file_has_a_json_schema() -> None:
    document = schema()
    assert document["title"] == "Tenants"
    assert "partitionsPerTopic" in document["$defs"]["Quota"]["properties"]


# -- the tenant gate's decision: the rules together, given the deployment's spec topic ---------------------------

def test_a_tenants_spec_for_its_own_free_name_is_accepted(tenants: Tenants) -> None:
    decision = decide(tenants.named("payments"), spec("payments.orders"), {}, existing=False)
    assert decision.accepted and decision.condition is None and decision.violations == []


def test_a_name_outside_the_tenants_or_claimed_first_by_another_is_not_its(tenants: Tenants) -> None:
    payments = tenants.named("payments")
    outside = decide(payments, spec("search.clicks"), {}, existing=False)
    assert (outside.condition, outside.rule) == ("NotOwner", "owner")
    assert "'search.clicks' is not among the names of tenant 'payments'" in outside.reason
    wide = tenants.model_copy(deep=True)
    wide.tenants[1].topics.pattern = "^(search|payments)\\."
    claimed = decide(wide.named("search"), spec("payments.orders"), {"payments.orders": Claim("payments", 6)},
                     existing=True)
    assert claimed.condition == "NotOwner" and "owned by tenant 'payments', which claimed the name first" in claimed.reason
    # An admin's spec (no owner) for a name of the tenant's is the tenant's to take over.
    assert decide(payments, spec("payments.orders"), {"payments.orders": Claim(None, 6)}, existing=True).accepted


def test_a_withdrawal_is_refused_to_all_but_the_names_owner(tenants: Tenants) -> None:
    wide = tenants.model_copy(deep=True)
    wide.tenants[1].topics.pattern = "^(search|payments)\\."
    claims = {"payments.orders": Claim("payments", 6)}
    withdrawal = TopicSpecDeleted(name="payments.orders")
    assert decide(wide.named("payments"), withdrawal, claims, existing=True).accepted
    refused = decide(wide.named("search"), withdrawal, claims, existing=True)
    assert refused.condition == "NotOwner" and not refused.accepted
    assert decide(wide.named("payments"), TopicSpecDeleted(name="search.x"), {}, existing=True).condition == "NotOwner"


def test_the_quota_counts_the_partitions_of_the_tenants_other_claims(tenants: Tenants) -> None:
    payments = tenants.named("payments")
    claims = {"payments.a": Claim("payments", 24), "payments.b": Claim("payments", 24), "search.c": Claim("search", 99),
              # The spec's own earlier claim is replaced, not added to.
              "payments.c": Claim("payments", 12)}
    assert decide(payments, spec("payments.c", 12), claims, existing=True).accepted
    over = decide(payments, spec("payments.d", 13), claims, existing=False)
    assert (over.condition, over.rule) == ("QuotaExceeded", "quota.partitions")
    assert over.reason == ("tenant rule quota.partitions: 13 partitions with the 60 of the other topics of "
                           "tenant 'payments' is above its 60")
    several = decide(payments, spec("payments.d", 6, 5), {}, existing=False)
    assert several.condition == "QuotaExceeded" and several.rule == "quota.replicas.max"


def test_ballast_schema_gives_the_tenants_files_schema(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["schema", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "ballast.TenantsFile.json").read_text())
    assert document == schema() and "tenants" in document["properties"]
