"""Tests and helpers for the monitoring stack around kubeletapi: real Prometheus, Grafana
provisioning and InfluxDB servers on loopback, fed by a real agent running pods."""
