"""The embedded stack on one machine: local broker, cluster simulator, services."""
