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
