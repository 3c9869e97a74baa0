"""Topic reconciler: desired topic specs -> topics created, configured, deleted; replicas-change commands; status."""
