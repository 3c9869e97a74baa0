"""The embedded default for "a Kafka cluster with Cruise Control": a simulated cluster serving Cruise Control's REST
API, plus an admin API (the cluster-admin port) and a fault API for tests."""
