"""``ballast demo``: the whole system on one machine, start to finish. ``embedded`` runs it on the embedded stack
(Tansu and the simulator), ``kafka`` on a real Kafka cluster; the steps they share are ``follow`` (specs applied and
their statuses followed), ``scaling``, ``load`` and ``disks``."""
