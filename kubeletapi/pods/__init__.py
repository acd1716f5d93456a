"""Pods on this node: manifest decoding and validation, static pod identity, QoS, sources,
the pod manager, per-pod workers, PLEG and status."""
