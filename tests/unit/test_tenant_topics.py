"""Each tenant's front door on the bus (events.topics.tenant_topics): its names, and the tenant read back from them."""

from events.topics import reserved_topic, tenant_of, tenant_topics, tenants_topics


def test_a_tenant_has_a_spec_status_and_dead_letter_topic_of_its_own():
    doors = tenant_topics("payments", cluster="")
    assert [t.name for t in doors.all()] == ["ballast.tenant.payments.topic.specs",
                                             "ballast.tenant.payments.topic.status",
                                             "ballast.tenant.payments.dead-letters"]
    assert doors.specs.compacted and doors.status.compacted and not doors.dead_letters.compacted


def test_a_named_deployment_s_tenants_have_its_name_in_theirs():
    assert tenant_topics("payments", cluster="east").specs.name == "ballast.east.tenant.payments.topic.specs"


def test_the_tenant_is_read_back_from_its_topics_in_its_own_deployment_only():
    assert tenant_of("ballast.tenant.pay-2.topic.specs", cluster="") == "pay-2"
    assert tenant_of("ballast.east.tenant.payments.topic.status", cluster="east") == "payments"
    assert tenant_of("ballast.east.tenant.payments.topic.status", cluster="") is None
    assert tenant_of("ballast.tenant.payments.topic.specs", cluster="west") is None
    assert tenant_of("ballast.topic.specs", cluster="") is None
    assert tenant_of("payments.orders", cluster="") is None


def test_every_tenant_topic_is_reserved():
    for topic in (*tenant_topics("payments", cluster="").all(), *tenant_topics("payments", cluster="east").all()):
        assert reserved_topic(topic.name) is not None
    assert reserved_topic("ballast.tenant.payments.orders") is None


def test_every_tenants_topics_are_listed_in_one_place():
    listed = [t.name for t in tenants_topics(["a", "b"], cluster="east")]
    assert listed == [t.name for name in ("a", "b") for t in tenant_topics(name, cluster="east").all()]
    assert tenants_topics([], cluster="") == []
