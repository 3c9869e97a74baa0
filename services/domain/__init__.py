"""Domain rules more than one part of Ballast needs (services, the CLI, the dashboard): each rule has its home here,
and nothing here imports a service. ``drift``: how far a proposal moved from the one approved; ``replicas_change``: what a replication-factor
command does to a topic's change record, and which change is in flight; ``throttle_limits``: the throttle
controller's capacities and limits, which the settings give and its rules take."""
