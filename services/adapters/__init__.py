"""Adapters at the edges, behind their ports: the managed cluster's admin (``admin``: Kafka or the simulator) and
Cruise Control's REST API (``cruise_control``). The services take them as ports; nothing here knows a service."""
