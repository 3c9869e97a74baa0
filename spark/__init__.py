"""The Spark Structured Streaming job for broker-load and placement aggregates (issue 5). Not built yet."""
