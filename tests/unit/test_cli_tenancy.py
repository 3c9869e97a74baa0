"""The CLI as a tenant (issue 53): BALLAST_TENANT picks the tenant's own spec and status topics, in one place."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from events import TOPICS
from events.topics import tenant_topics
from services.cli.tenancy import spec_topics
from services.common.settings import Settings


def test_without_a_tenant_the_cli_uses_the_deployments_own_topics() -> None:
    chosen = spec_topics(Settings())
    assert (chosen.specs, chosen.status) == (TOPICS.specs, TOPICS.status)


def test_a_tenant_writes_its_spec_topic_and_reads_its_status_topic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BALLAST_TENANT", "payments")
    chosen = spec_topics(Settings())
    assert chosen.specs.name == "ballast.tenant.payments.topic.specs" == tenant_topics("payments").specs.name
    assert chosen.status.name == "ballast.tenant.payments.topic.status"
    # The topics still carry specs and statuses: the CLI's reading and publishing are the same.
    assert chosen.specs.events == TOPICS.specs.events and chosen.status.events == TOPICS.status.events


def test_a_tenants_readers_use_consumer_groups_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().bus.reader_groups == "ballast-reader-"
    monkeypatch.setenv("BALLAST_TENANT", "payments")
    assert Settings().bus.reader_groups == "ballast-tenant-payments."
    monkeypatch.setenv("BALLAST_BUS__READER_GROUPS", "team-payments-")
    assert Settings().bus.reader_groups == "team-payments-"


def test_a_tenant_name_that_cannot_name_topics_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BALLAST_TENANT", "Pay ments")
    with pytest.raises(ValidationError, match="invalid tenant name 'Pay ments'"):
        Settings()
    monkeypatch.setenv("BALLAST_TENANT", "")
    assert Settings().tenant is None


def test_produce_knows_the_tenants_topics_as_it_knows_the_deployments() -> None:
    from services.cli.tenancy import bus_topic_named

    assert bus_topic_named("ballast.tenant.payments.topic.specs") == tenant_topics("payments").specs
    assert bus_topic_named("ballast.tenant.payments.dead-letters") == tenant_topics("payments").dead_letters
    assert bus_topic_named(TOPICS.specs.name) == TOPICS.specs
    assert bus_topic_named("payments.orders") is None


def test_a_tenants_spec_is_unchanged_only_while_ballast_acts_on_its_last_record() -> None:
    """Otherwise the same spec is sent again: refused before (quota freed since), or an admin's spec took its place."""
    from events import Condition, TopicStatus
    from events.conditions import NOT_OWNER, QUOTA_EXCEEDED, READY
    from services.cli.tenancy import answered

    ready = TopicStatus(topic="payments.orders", ready=True, owner="payments", generation=8, observed_generation=8)
    assert answered("payments", 7, ready)
    assert not answered("payments", 9, ready)  # a later record, not decided yet
    assert not answered("payments", None, ready) and not answered("payments", 7, None)
    assert not answered("payments", 7, ready.model_copy(update={"owner": None, "generation": 0}))  # an admin's
    for refusal in (NOT_OWNER, QUOTA_EXCEEDED):
        refused = ready.model_copy(update={"ready": False, "conditions": [
            Condition(type=READY, status="False", reason=refusal, message="refused")]})
        assert not answered("payments", 7, refused)


def test_a_tenant_that_may_describe_none_of_its_topics_still_sends_a_refused_spec_again(monkeypatch) -> None:
    """A tenant named by a pattern gets no DESCRIBE on the cluster (Kafka's ACLs have no patterns): the comparison
    with the cluster is refused, and a refused spec identical to its last record was "unchanged" for good (a
    walkthrough)."""
    from events import Condition, TopicSpec, TopicStatus, decode, encode
    from events.conditions import QUOTA_EXCEEDED, READY
    from services.adapters.admin import OperationRefused
    from services.cli import applying
    from services.common import busio

    monkeypatch.setenv("BALLAST_TENANT", "search")
    settings = Settings()
    doors = tenant_topics("search")
    spec = TopicSpec(name="search.q3", partitions=24, replicas=3)
    stored = busio.Stored(decode(encode(spec), topic=doors.specs), 0, 6)
    refused = TopicStatus(topic="search.q3", ready=False, owner="search", generation=7, observed_generation=7,
                          conditions=[Condition(type=READY, status="False", reason=QUOTA_EXCEEDED, message="full")])

    def refuse(settings, question):  # noqa: ANN001, ANN202
        raise OperationRefused("not authorized to describe the topic(s) search.q3 (Kafka's ACLs)")

    monkeypatch.setattr(applying, "ask_cluster", refuse)
    monkeypatch.setattr(busio, "read_compacted", lambda bus, topic, **kw: {"search.q3": stored})
    monkeypatch.setattr(busio, "latest", lambda bus, topic, **kw: {"search.q3": refused})  # the status topic
    diffs, note = applying.compare(settings, [spec], need_cluster=False)
    assert note is not None and "the cluster refused" in note
    assert diffs["search.q3"].publish  # sent again, to be decided again
    answered = refused.model_copy(update={"ready": True, "conditions": []})
    monkeypatch.setattr(busio, "latest", lambda bus, topic, **kw: {"search.q3": answered})
    assert not applying.compare(settings, [spec], need_cluster=False)[0]["search.q3"].publish
