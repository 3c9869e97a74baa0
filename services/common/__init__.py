"""What every service shares: settings, logging, the bus, and the two ports to the managed cluster."""
