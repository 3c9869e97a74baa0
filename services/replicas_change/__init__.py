"""Replicas-change service: replication-factor change commands -> Cruise Control topic_configuration and user_tasks."""
