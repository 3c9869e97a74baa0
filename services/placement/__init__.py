"""Replica placement: which brokers hold each partition's replicas.

Tiny interfaces and one algorithm per module, after Kafka's placement package: ``model`` (what a placer sees),
``placer`` (the interface and the registry by name), ``striped`` and ``multi_level`` (the algorithms), ``metrics``
(how good a placement is), ``rebalance`` (moves when brokers are added), ``selector`` (nearest replica).
"""
