"""The brokers timer, one handler per concern (``timer.Observers`` runs them over one ``look.ClusterLook``):
``scale_up``, ``removal_check``, ``broker_status``, ``drained_dirs`` and ``disk_drift``. They do the I/O; the rules
are ``scaling``'s, ``scale_down``'s, ``failed_disks``'s and ``disks``'s."""
