"""The base of every event on the bus; the events themselves are in the modules of their concern (topic_specs.py,
topic_status.py, replicas_change.py, placement.py, dead_letters.py, rebalance.py, load.py, throttle.py, tenancy.py).

JSON field names are camelCase, as in Strimzi's KafkaTopic status (``replicasChange``, ``targetReplicas``), so users
coming from Strimzi read familiar documents. Each event class names its schema and version; the envelope carries them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from events.envelope import FROZEN_WIRE


class Event(BaseModel):
    model_config = FROZEN_WIRE

    SCHEMA: ClassVar[str]
    VERSION: ClassVar[int] = 1

    @property
    def key(self) -> str:
        """The Kafka record key: the resource the event is about."""
        raise NotImplementedError

    def to_payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
