"""What the topic reconciler keeps per topic is kept small (issue 52): records share their set of given fields, and
descriptions not asked for replicas' directories share their replicas."""

from __future__ import annotations

from events import Condition, TopicSpec, TopicStatus
from services.adapters.admin.port import ReplicaInfo, replica_on
from services.adapters.admin.simulator import _topic
from services.topic_reconciler.memory import Memory, kept


def test_records_kept_share_one_set_of_fields_and_stay_equal() -> None:
    first = kept(TopicSpec(name="a", partitions=1, replicas=3))
    second = kept(TopicSpec(name="b", partitions=2, replicas=3))
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    assert first == TopicSpec(name="a", partitions=1, replicas=3)
    assert first.to_payload() == TopicSpec(name="a", partitions=1, replicas=3).to_payload()


def test_a_copy_of_a_kept_record_gets_its_own_set_of_fields() -> None:
    status = kept(TopicStatus(topic="a", ready=True, conditions=[Condition(type="Ready", status="True")]))
    other = kept(TopicStatus(topic="b", ready=True, conditions=[Condition(type="Ready", status="True")]))
    assert status.conditions[0].__pydantic_fields_set__ is other.conditions[0].__pydantic_fields_set__
    copied = status.model_copy(update={"generation": 7})
    assert "generation" in copied.__pydantic_fields_set__
    assert "generation" not in other.__pydantic_fields_set__  # the shared set is untouched
    assert other.model_dump(exclude_unset=True) == {"topic": "b", "ready": True,
                                                    "conditions": [{"type": "Ready", "status": "True"}]}


def test_the_memory_keeps_specs_with_a_shared_set_of_fields() -> None:
    memory = Memory()
    memory.apply_spec("a", TopicSpec(name="a", partitions=1), 0, "c1")
    memory.apply_spec("b", TopicSpec(name="b", partitions=1), 1, "c2")
    assert memory.spec("a").__pydantic_fields_set__ is memory.spec("b").__pydantic_fields_set__


def test_a_description_without_replicas_directories_shares_its_replicas() -> None:
    document = {"name": "t", "config": {}, "partitions": [
        {"partition": 0, "replicas": [1, 2], "leader": 1, "isr": [1, 2], "logDirs": {"1": "/d1", "2": "/d2"},
         "sizeMB": 1.0}]}
    bare = _topic(document, {1: "r1", 2: "r2"}, replica_dirs=False)
    again = _topic({**document, "name": "u"}, {1: "r1", 2: "r2"}, replica_dirs=False)
    assert bare.partitions[0].replica_info == (ReplicaInfo(1, "r1"), ReplicaInfo(2, "r2"))
    assert bare.partitions[0].replica_info[0] is again.partitions[0].replica_info[0] is replica_on(1, "r1")
    full = _topic(document, {1: "r1", 2: "r2"})
    assert [r.log_dir for r in full.partitions[0].replica_info] == ["/d1", "/d2"]
