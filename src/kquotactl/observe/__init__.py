"""Observe live quota traffic: the brokers' quota sensors (JMX exporter, Prometheus) joined with the limits."""
